//! A registry from a URL.

use std::sync::Arc;

use super::LeaseError;
use super::Registry;

/// Connects to the registry a URL names: `postgres://` (or `postgresql://`)
/// with the `postgres` feature, `mysql://` (MySQL or MariaDB) with the
/// `mysql` feature, `redis://` (or `rediss://`, with TLS) with the `redis`
/// feature, `etcd://host:port,host:port/prefix` (or `etcds://`, with TLS)
/// with the `etcd` feature. TLS: `sslmode=` and `sslrootcert=<CA file>` in a PostgreSQL URL,
/// as libpq takes them; `ssl-mode=` and `ssl-ca=<CA file>` in a MySQL URL,
/// as MySQL's clients take them; `rediss://`, and `sslrootcert=` too, for
/// Redis. Without a CA file, the system's CAs are trusted (the Mozilla
/// roots, for MySQL).
///
/// Nothing is sent until the first acquisition.
///
/// # Errors
///
/// [`LeaseError::UnsupportedUrl`] for another scheme,
/// [`LeaseError::FeatureOff`] for one whose feature is off, and
/// [`LeaseError::InvalidUrl`] for a URL the client cannot parse.
pub fn connect(url: &str) -> Result<Arc<dyn Registry>, LeaseError> {
    // Schemes are case-insensitive (RFC 3986, section 3.1).
    let scheme = url
        .split_once("://")
        .map_or("", |(scheme, _)| scheme)
        .to_ascii_lowercase();
    match scheme.as_str() {
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => Ok(Arc::new(super::postgres::PostgresRegistry::new(url)?)),
        #[cfg(not(feature = "postgres"))]
        "postgres" | "postgresql" => Err(LeaseError::FeatureOff {
            scheme,
            feature: "postgres",
        }),
        #[cfg(feature = "redis")]
        "redis" | "rediss" => Ok(Arc::new(super::redis::RedisRegistry::new(url)?)),
        #[cfg(not(feature = "redis"))]
        "redis" | "rediss" => Err(LeaseError::FeatureOff {
            scheme,
            feature: "redis",
        }),
        #[cfg(feature = "mysql")]
        "mysql" | "mariadb" => Ok(Arc::new(super::mysql::MysqlRegistry::new(url)?)),
        #[cfg(not(feature = "mysql"))]
        "mysql" | "mariadb" => Err(LeaseError::FeatureOff {
            scheme,
            feature: "mysql",
        }),
        #[cfg(feature = "etcd")]
        "etcd" | "etcds" => Ok(Arc::new(super::etcd::EtcdRegistry::new(url)?)),
        #[cfg(not(feature = "etcd"))]
        "etcd" | "etcds" => Err(LeaseError::FeatureOff {
            scheme,
            feature: "etcd",
        }),
        _ => Err(LeaseError::UnsupportedUrl { scheme }),
    }
}
