//! What can go wrong setting up the process's generator.

use core::fmt;

/// Why the process's generator could not be set up.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SetUpError {
    /// Nothing set it up, and the environment names no worker id nor lease.
    NothingToGoOn,
    /// It was set up already.
    AlreadySetUp,
    /// A variable of the environment cannot be used.
    Env {
        /// The variable.
        var: &'static str,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for SetUpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetUpError::NothingToGoOn => f.write_str(
                "flakegen::next_id() has no generator, and will not guess a worker id (two \
                 processes with one issue the same IDs): call flakegen::global::set_up at \
                 start-up, or set FLAKEGEN_WORKER_ID to a worker id unique among the running \
                 processes, or FLAKEGEN_LEASE_URL and FLAKEGEN_LEASE_NAMESPACE to lease one",
            ),
            SetUpError::AlreadySetUp => f.write_str(
                "the process's generator was set up already: set it up once, at start-up",
            ),
            SetUpError::Env { var, reason } => write!(f, "{var}: {reason}"),
        }
    }
}

impl std::error::Error for SetUpError {}
