//! Lease terms that cannot work, and why a build could not lease.

use core::fmt;
use std::time::Duration;

use super::backend::LeaseError;

/// Lease terms that cannot work, and what to change:
/// [`BuildError::InvalidLease`](crate::BuildError::InvalidLease).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidTerms {
    /// The TTL is shorter than a renewal can keep up with: [`Lease::MIN_TTL`](super::Lease::MIN_TTL),
    /// and two units of the layout.
    TtlTooShort {
        /// The TTL given.
        ttl: Duration,
        /// The least this layout allows.
        least: Duration,
    },
    /// Renewals are not well inside the TTL: at most every half TTL.
    RenewalTooSlow {
        /// The renewal interval given.
        renew_every: Duration,
        /// The TTL.
        ttl: Duration,
    },
    /// A skew allowance of 0: every host whose clock reads a millisecond
    /// ahead of the registry's would be refused.
    NoSkew,
    /// The generator's `max_lead` and the renewal interval together reach
    /// the TTL: the generator would run into its fence between renewals.
    LeadReachesTtl {
        /// The generator's lead.
        max_lead: Duration,
        /// The renewal interval.
        renew_every: Duration,
        /// The TTL.
        ttl: Duration,
    },
}

impl fmt::Display for InvalidTerms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            InvalidTerms::TtlTooShort { ttl, least } => write!(
                f,
                "the TTL ({ttl:?}) is below {least:?}, the least a renewal can keep up with \
                 (100 ms, and two units of the layout): use a TTL of seconds"
            ),
            InvalidTerms::RenewalTooSlow { renew_every, ttl } => write!(
                f,
                "renewing every {renew_every:?} is not well inside the TTL ({ttl:?}): \
                 renew at most every half TTL (the default is a third)"
            ),
            InvalidTerms::NoSkew => f.write_str(
                "a skew allowance of 0 refuses every host whose clock reads a millisecond \
                 ahead of the registry's: give the spread the clocks really keep (NTP keeps \
                 it to milliseconds; the default, 2 s, leaves room)",
            ),
            InvalidTerms::LeadReachesTtl {
                max_lead,
                renew_every,
                ttl,
            } => write!(
                f,
                "max_lead ({max_lead:?}) plus the renewal interval ({renew_every:?}) reaches \
                 the TTL ({ttl:?}): the generator would run into its fence; \
                 lower max_lead or raise the TTL"
            ),
        }
    }
}

impl std::error::Error for InvalidTerms {}

/// Why a build could not lease: [`BuildError`](crate::BuildError) says it to the user.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The terms cannot work.
    Invalid(InvalidTerms),
    /// The registry refused or failed.
    Lease(LeaseError),
    /// The lease's thread could not be started, or stopped without a word.
    Spawn(std::io::Error),
}
