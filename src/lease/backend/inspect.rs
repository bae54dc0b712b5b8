//! What a registry shows an operator (`flakegen leases`, `flakegen leases
//! check`): an optional capability beside the three storage steps, reached
//! through [`Registry::inspect`](super::Registry::inspect), and re-exported
//! as [`flakegen::lease::inspect`](crate::lease::inspect). Leasing never
//! calls it.

#[cfg(feature = "inspect")]
use super::error::LeaseError;
#[cfg(feature = "inspect")]
use super::record::Record;

#[cfg(feature = "inspect")]
/// What a tool shows an operator of a registry (`flakegen leases`,
/// `flakegen leases check`): optional, apart from the three storage steps a
/// registry must offer, and reached through
/// [`Registry::inspect`](super::Registry::inspect). Leasing
/// never calls it. Nothing here writes: a look at a registry never
/// creates its table, its marker, or a record.
pub trait Inspect: Send + Sync {
    /// Every record of `namespace`, whatever marker it was written under,
    /// ordered by worker id, with the server's clock and the marker in
    /// force. It may cost what the namespace's records cost.
    ///
    /// # Errors
    ///
    /// The connection's errors, [`LeaseError::NoLeases`] when the store
    /// holds no leases at all (no table yet), and [`LeaseError::Corrupt`]
    /// for a record the registry cannot read.
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError>;

    /// The namespaces that have records, in order.
    ///
    /// # Errors
    ///
    /// As for [`list`](Self::list).
    fn namespaces(&self) -> Result<Vec<String>, LeaseError>;

    /// What the server says of itself: the connection as negotiated, and
    /// each setting or arrangement under which leasing from it could fail,
    /// wait, or hand an id to two holders, with what to do.
    ///
    /// # Errors
    ///
    /// The connection's errors.
    fn survey(&self) -> Result<Survey, LeaseError>;
}

#[cfg(feature = "inspect")]
/// What [`Inspect::list`] found: every record of a namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// The server's clock when it read, in ms since 1970 (rounded down).
    pub server_unix_millis: u64,
    /// The namespace's marker in force, if any. A record written under
    /// another is void: its id is fenced by the loss rule.
    pub marker_unix_millis: Option<u64>,
    /// The namespace's high-water mark under that marker: ids below it were
    /// handed out since the marker was written (0 without one).
    pub high_water: u64,
    /// Every record, by worker id.
    pub records: Vec<Record>,
}

#[cfg(feature = "inspect")]
/// What the server says of itself: [`Inspect::survey`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Survey {
    /// How the connection travels, as negotiated with the server.
    pub transport: Transport,
    /// What stands between the server and the generators that rely on it.
    pub caveats: Vec<Caveat>,
    /// The server's own clock, where leasing does not read it
    /// ([`TimeBase::Client`](super::TimeBase::Client)) but the server shows
    /// one: a tool judges this host's clock against it as leasing judges a
    /// holder's ([`ClockVerdict`](crate::lease::ClockVerdict)).
    pub clock: Option<ServerClock>,
}

#[cfg(feature = "inspect")]
impl Survey {
    /// A survey of a connection over `transport`, with `caveats`.
    pub fn new(transport: Transport, caveats: Vec<Caveat>) -> Self {
        Survey {
            transport,
            caveats,
            clock: None,
        }
    }

    /// The same survey, with a reading of the server's clock.
    #[must_use]
    pub fn with_clock(mut self, clock: ServerClock) -> Self {
        self.clock = Some(clock);
        self
    }
}

#[cfg(feature = "inspect")]
/// One reading of a server's clock, and this host's around it: what
/// [`Survey::clock`] holds. All in ms since 1970.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerClock {
    /// The server's clock as it said it, rounded down to `resolution_millis`
    /// (an HTTP `Date` header: to the second).
    pub unix_millis: u64,
    /// How coarse the reading is: the server's clock was in
    /// `unix_millis..unix_millis + resolution_millis`.
    pub resolution_millis: u64,
    /// This host's clock before the request that read it.
    pub before_unix_millis: u64,
    /// This host's clock after its answer.
    pub after_unix_millis: u64,
}

#[cfg(feature = "inspect")]
/// How a connection to a registry travels, as negotiated: what the
/// connection did, not what its URL asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// In this process: no network.
    InProcess,
    /// Plain text.
    Plain,
    /// TLS, with this much of the server's certificate verified.
    Tls(Verified),
}

/// How much of a server's certificate a TLS connection verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(not(feature = "inspect"), allow(dead_code, unreachable_pub))]
pub enum Verified {
    /// Nothing: anyone on the path could answer for the server.
    Nothing,
    /// Its chain, up to a trusted CA, but not the host name.
    Chain,
    /// Its chain and the host name in the URL.
    Full,
}

#[cfg(feature = "inspect")]
/// A setting or arrangement of the server's under which leasing from it
/// could fail, wait, or hand an id to two holders: see [`Inspect::survey`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caveat {
    /// What it bears on: `durability` (what a crash could forget),
    /// `topology` (replicas, failovers, other writers), `eviction`.
    pub topic: &'static str,
    /// What was seen, as the server names it
    /// (`innodb_flush_log_at_trx_commit = 0`, `primary, 1 asynchronous replica`).
    pub setting: String,
    /// How much it matters.
    pub severity: Severity,
    /// What it means for generators, and what to do.
    pub advice: String,
}

#[cfg(feature = "inspect")]
/// How much a [`Caveat`] matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Worth knowing: what a fault would cost, all of it safe.
    Note,
    /// Works, and is safe, unless something else fails too (a machine's
    /// crash, not the server's).
    Warning,
    /// Generators will fail here, or could share an id: fix it first.
    Danger,
}
