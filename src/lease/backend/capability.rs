//! What a registry declares of itself: the variations the trait allows,
//! each a type, so that the protocol and the contract suite read them
//! rather than a paragraph of prose.

/// Whose clock a registry's times are read from: the server clock of
/// [`Snapshot::server_unix_millis`](super::Snapshot::server_unix_millis), of a swap's answer, of an expiry and a
/// marker ([`Registry::time_base`](super::Registry::time_base)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeBase {
    /// The store's own clock, read by the store: every holder is judged by
    /// one clock, and each holder's is checked against it (the skew
    /// allowance).
    Server,
    /// The store has none (etcd): its times are the calling host's clock.
    /// Nothing checks one host's clock against another's; the skew
    /// allowance is what the hosts must keep to.
    Client,
}
