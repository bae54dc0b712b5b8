//! Every decision of the lease protocol, made once, over a registry's three
//! storage steps (read, mark, swap): one decision a file. The [lease
//! docs](super#the-contract) state the rules; each is cited where it is
//! kept.
//!
//! - `terms.rs`: the terms, and the fence arithmetic every rule rests on
//!   (the lead bound, rule 3; the loss rule's bound, rule 6);
//! - `start.rs`: where a new lease's IDs start, and which id it takes
//!   (rules 2 and 6);
//! - `acquire.rs`: the acquisition's race against others (rules 7 and 9);
//! - `grant.rs`: what a granted lease writes: renewals and the release
//!   (rules 1, 4 and 5);
//! - `verdict.rs`: a holder's clock against the registry's (rule 6's skew
//!   allowance);
//! - `sighting.rs`: when a record expires on a registry with no clock of
//!   its own (a host whose clock runs ahead takes no live lease early);
//! - `ids.rs`: holder tokens and record versions;
//! - `fixtures.rs`: what their tests share.

mod acquire;
#[cfg(test)]
mod fixtures;
mod grant;
mod ids;
mod sighting;
mod start;
mod terms;
mod verdict;

pub(crate) use self::acquire::acquire;
#[cfg(feature = "inspect")]
pub(crate) use self::grant::test_write;
pub(crate) use self::grant::{Grant, Unconfirmed};
pub(crate) use self::ids::holder_token;
pub(crate) use self::start::Lost;
#[cfg(feature = "inspect")]
pub use self::start::Readiness;
pub use self::start::StartCause;
#[cfg(feature = "inspect")]
pub(crate) use self::start::readiness;
pub(crate) use self::terms::Terms;
#[cfg(feature = "inspect")]
pub use self::verdict::ClockVerdict;
