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
    /// The store has none (etcd, Kubernetes): its times are the calling
    /// host's clock.
    /// Nothing checks one host's clock against another's; the skew
    /// allowance is what the hosts must keep to.
    Client,
}

/// How a registry's [`swap`](super::Registry::swap) checks the marker
/// ([`Registry::marker_check`](super::Registry::marker_check)).
///
/// Either way, no write lands under a marker that is not in force except a
/// holder's own write over its own record: the contract rules
/// `a_swap_under_a_planted_marker_keeps_its_check` and
/// `a_swap_under_a_deleted_marker_keeps_its_check` replace a marker between
/// a client's read and its writes, and hold a registry to the form it
/// declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MarkerCheck {
    /// Every write compares the marker in force and the record's version
    /// in one atomic step: a store that compares several objects at once
    /// (a SQL transaction, a Redis script, an etcd transaction).
    InSwap,
    /// For a store that compares one object at a time (Kubernetes' API):
    /// a write over a record by its own holder (a renewal, or its release),
    /// under the marker the record was written under, may compare the
    /// record's version alone; every other write (a takeover, a new record)
    /// first confirms the marker in force on the server.
    ///
    /// What keeps holders apart then: a holder whose marker was replaced
    /// while its record stayed may go on renewing, but every reader sees
    /// its record as void, fenced by the loss rule, and whoever takes the id
    /// over does so by a compare-and-set on that same record. Either the
    /// old holder's renewal came first, and the takeover fails and reads its
    /// fence again, or the takeover came first, and the old holder's next
    /// write fails, and it stops at a fence the taker already starts past.
    /// A record deleted and written again must be a new object (a new uid,
    /// in Kubernetes), never one a holder's write can land on.
    ConfirmedFirst,
}

/// What a registry's [`read`](super::Registry::read) costs the server
/// ([`Registry::read_cost`](super::Registry::read_cost)): an operator sizing
/// a fleet on a shared server reads it here, and in the registry's row of
/// `lease::REGISTRIES` (feature `inspect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadCost {
    /// A read returns what an acquisition chooses from and little more:
    /// at most [`BOUND`](Self::BOUND) records, however many the namespace
    /// holds, so its cost is that of the live holders it looks at, not of
    /// the id space. The contract rule `a_read_costs_what_its_registry_declares`
    /// holds a registry to the cost it declares.
    Bounded,
    /// A read fetches every record of the namespace: a Kubernetes LIST of
    /// its Leases, or a map in memory. Each build and each heal then costs
    /// the server as much as the namespace's records: fine for a memory
    /// registry, and for a fleet whose count the operator knows.
    EveryRecord,
}

impl ReadCost {
    /// The most records a [`Bounded`](Self::Bounded) read returns: a
    /// probe's worth (64, [`ReadRequest::MAX_PROBE`](super::ReadRequest::MAX_PROBE)),
    /// and the few that decide a choice.
    pub const BOUND: usize = 72;
}
