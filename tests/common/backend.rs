//! The lease backends whose features are on, and their test servers' URLs.

/// A lease backend under test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Backend {
    #[cfg(feature = "postgres")]
    Postgres,
    #[cfg(feature = "redis")]
    Redis,
}

impl Backend {
    /// Every backend whose feature is on.
    pub fn all() -> Vec<Backend> {
        vec![
            #[cfg(feature = "postgres")]
            Backend::Postgres,
            #[cfg(feature = "redis")]
            Backend::Redis,
        ]
    }

    pub fn name(self) -> &'static str {
        match self {
            #[cfg(feature = "postgres")]
            Backend::Postgres => "postgres",
            #[cfg(feature = "redis")]
            Backend::Redis => "redis",
        }
    }

    /// The test server's URL; fails, saying how to start the servers, when
    /// it is not set: the tests never pass by skipping.
    pub fn url(self) -> String {
        let var = match self {
            #[cfg(feature = "postgres")]
            Backend::Postgres => "FLAKEGEN_TEST_POSTGRES_URL",
            #[cfg(feature = "redis")]
            Backend::Redis => "FLAKEGEN_TEST_REDIS_URL",
        };
        std::env::var(var).unwrap_or_else(|_| {
            panic!(
                "{var} is not set: start the test servers with \
                 `eval \"$(scripts/services.sh start)\"` (or run without the feature)"
            )
        })
    }
}
