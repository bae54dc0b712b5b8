//! What can go wrong with a lease: the error of every registry call, and of
//! the protocol over them.

use core::fmt;
use std::sync::Arc;
use std::time::Duration;

/// What a client or server said, shared: a [`LeaseError`] is `Clone`, so one
/// outcome can reach every waiter.
pub(crate) type Source = Arc<dyn std::error::Error + Send + Sync>;

/// A message as a [`Source`].
pub(crate) fn said(message: impl Into<String>) -> Source {
    Arc::from(Box::<dyn std::error::Error + Send + Sync>::from(
        message.into(),
    ))
}

/// What can go wrong with a lease. The message names the server's address
/// (never its password) and says what to do.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum LeaseError {
    /// The URL's scheme is not one this build supports.
    UnsupportedUrl {
        /// The scheme given.
        scheme: String,
        /// The schemes flakegen knows, as a sentence.
        known: String,
    },
    /// The URL names a registry whose feature is off in this build.
    FeatureOff {
        /// The scheme given, in lower case.
        scheme: String,
        /// The crate feature that registry needs.
        feature: &'static str,
    },
    /// The URL could not be parsed.
    InvalidUrl {
        /// Why.
        reason: String,
    },
    /// The namespace cannot be used as one.
    InvalidNamespace {
        /// Why.
        reason: &'static str,
    },
    /// The server answers at its address, but setting up a connection (the
    /// handshake, TLS, the login: several round trips) took longer than
    /// allowed: a registry far away or overloaded, not one that is gone.
    TooSlow {
        /// The server's address.
        address: String,
        /// How long the set-up was allowed.
        allowed: std::time::Duration,
    },
    /// The server could not be reached, or stopped answering, within the timeout.
    Unreachable {
        /// The server's address.
        address: String,
        /// What the client reported.
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// TLS with the server failed: its certificate was refused, or the
    /// handshake failed.
    Tls {
        /// The server's address.
        address: String,
        /// What TLS reported.
        reason: String,
        /// What to check, in the registry's own URL terms.
        fix: &'static str,
    },
    /// The server wants TLS, and the URL did not ask for it (or the server
    /// closed the connection without an answer, as a TLS-only port does to a
    /// client that speaks plain text).
    TlsRequired {
        /// The server's address.
        address: String,
        /// What the server or the client said.
        source: Arc<dyn std::error::Error + Send + Sync>,
        /// How to ask for TLS, in the registry's own URL terms.
        fix: &'static str,
    },
    /// The server refused the credentials.
    Unauthorized {
        /// The server's address.
        address: String,
        /// What the server said.
        source: Arc<dyn std::error::Error + Send + Sync>,
        /// Where the credentials go, in the registry's own URL terms.
        fix: &'static str,
    },
    /// Every worker id of the namespace is held.
    AllHeld {
        /// The namespace.
        namespace: String,
        /// How many ids are held (all the layout has).
        held: u64,
    },
    /// The lease is no longer this holder's: it expired and another holder
    /// took it, or it was released.
    Lost {
        /// The namespace.
        namespace: String,
        /// The worker id.
        worker: u64,
    },
    /// This host's clock reads further ahead of the registry server's than
    /// the skew allowance: the rule that fences a lost registry's ids would
    /// not hold.
    ClockAhead {
        /// How far ahead, at least, in ms.
        ahead_millis: u64,
        /// The allowance ([`Lease::skew`](crate::lease::Lease::skew)), in ms.
        skew_millis: u64,
    },
    /// Other acquisitions kept taking the ids this one chose.
    Contended {
        /// The namespace.
        namespace: String,
        /// How many races it lost.
        attempts: u32,
    },
    /// A record in the registry is not one flakegen wrote.
    Corrupt {
        /// The server's address.
        address: String,
        /// What was found.
        detail: String,
    },
    /// The server refused a statement for want of a privilege: creating
    /// the lease table (and its indexes), or using it.
    Forbidden {
        /// The server's address.
        address: String,
        /// The registry's type, whose `DDL` creates the table.
        registry: &'static str,
        /// What the server said.
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// The database the URL names does not exist on the server.
    UnknownDatabase {
        /// The server's address.
        address: String,
        /// The database named.
        database: String,
    },
    /// A [`Release`](crate::lease::Release) was not confirmed by the registry
    /// within the time it was given.
    ReleaseTimedOut {
        /// The namespace.
        namespace: String,
        /// The worker id.
        worker: u64,
        /// How long it was waited for.
        waited: Duration,
    },
    /// The server takes no writes: a standby, or a replica set read-only.
    /// Leases need the one server that takes writes.
    ReadOnly {
        /// The server's address.
        address: String,
        /// What the server said it is.
        role: String,
    },
    /// The server takes writes and also replicates from another server
    /// that takes writes, or might (two masters, as in a master-master
    /// pair): each side would grant leases alone, and replication would
    /// merge them afterwards, so no compare-and-set holds across them.
    MultiWriter {
        /// The server's address.
        address: String,
        /// The server it replicates from.
        peer: String,
        /// What was found of the peer: it takes writes, or it could not be asked.
        found: String,
    },
    /// The server at the URL's address speaks another protocol: the port is
    /// another server's, or TLS was asked of a port without it (or the
    /// reverse).
    WrongServer {
        /// The server's address.
        address: String,
        /// What the port speaks.
        speaks: &'static str,
        /// What the URL asked for.
        wanted: &'static str,
    },
    /// The store holds no leases at all: no generator has used it yet (a
    /// look at it creates nothing).
    NoLeases {
        /// The server's address.
        address: String,
    },
    /// A consensus store (etcd) could not commit or read: its cluster has
    /// no leader, as when fewer than a majority of its members are up or
    /// can reach each other.
    NoQuorum {
        /// The members' addresses.
        address: String,
        /// What the member said.
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// The registry's connections belong to another copy of this process:
    /// it was opened before this process was forked from its parent, whose
    /// sockets and runtime they are. Nothing was sent.
    Copied {
        /// The server's address.
        address: String,
    },
    /// The server answered with an error.
    Server {
        /// The server's address.
        address: String,
        /// What the server said.
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
}

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseError::UnsupportedUrl { scheme, known } => {
                write!(f, "no lease registry for {scheme:?} URLs: use {known}")
            }
            LeaseError::FeatureOff { scheme, feature } => write!(
                f,
                "{scheme}:// lease registries need flakegen's {feature:?} feature, which this \
                 build does not have: add it to flakegen's features in Cargo.toml"
            ),
            LeaseError::InvalidUrl { reason } => {
                write!(f, "invalid lease registry URL: {reason}")
            }
            LeaseError::InvalidNamespace { reason } => {
                write!(f, "invalid lease namespace: {reason}")
            }
            LeaseError::TooSlow { address, allowed } => write!(
                f,
                "lease registry at {address} answers, but setting up a connection took longer \
                 than the {allowed:?} allowed: it is far away (a connection's set-up is several \
                 round trips) or overloaded. A build allows its lease's TTL (at least 3 s) and a \
                 renewal the time left before its fence: raise Lease::ttl, or bring the \
                 registry closer"
            ),
            LeaseError::Unreachable { address, source } => write!(
                f,
                "lease registry at {address} is unreachable ({source}): check that the server \
                 runs and the address is right"
            ),
            LeaseError::Tls {
                address,
                reason,
                fix,
            } => write!(
                f,
                "TLS with the lease registry at {address} failed ({reason}): {fix}"
            ),
            LeaseError::TlsRequired {
                address,
                source,
                fix,
            } => write!(
                f,
                "lease registry at {address} turned away a connection without TLS ({source}): \
                 if the server wants TLS, {fix}"
            ),
            LeaseError::Unauthorized {
                address,
                source,
                fix,
            } => write!(
                f,
                "lease registry at {address} refused the credentials ({source}): {fix}"
            ),
            LeaseError::Forbidden {
                address,
                registry,
                source,
            } => write!(
                f,
                "lease registry at {address} refused flakegen's statement ({source}): the \
                 user in the URL must be allowed to use the tables flakegen_leases and \
                 flakegen_namespaces, and to create them the first time. Create them once \
                 as a user that may ({registry}::DDL), then GRANT SELECT, INSERT, UPDATE ON \
                 flakegen_leases, flakegen_namespaces to this user"
            ),
            LeaseError::NoQuorum { address, source } => write!(
                f,
                "the etcd cluster at {address} has no quorum ({source}): a majority of its \
                 members must be up and reach each other; `etcdctl endpoint status \
                 --cluster` shows which are"
            ),
            LeaseError::UnknownDatabase { address, database } => write!(
                f,
                "lease registry at {address} has no database {database:?}: create it \
                 (CREATE DATABASE {database}) and grant the URL's user its use, or name \
                 another in the URL's path"
            ),
            LeaseError::AllHeld { namespace, held } => write!(
                f,
                "all {held} worker ids of lease namespace {namespace:?} are held: stop a \
                 generator, wait for a crashed one's lease to expire, or use a layout \
                 with more worker bits"
            ),
            LeaseError::Lost { namespace, worker } => write!(
                f,
                "the lease on worker id {worker} of namespace {namespace:?} is no longer held \
                 (it expired and another holder took the id, or the registry lost its data): \
                 a generator leases again by itself; with Lease::reacquire off, build a new one"
            ),
            LeaseError::ClockAhead {
                ahead_millis,
                skew_millis,
            } => write!(
                f,
                "this host's clock reads at least {ahead_millis} ms ahead of the lease registry \
                 server's, more than the skew allowance of {skew_millis} ms: synchronise the \
                 clocks (NTP), or raise Lease::skew on every generator of the namespace"
            ),
            LeaseError::Contended {
                namespace,
                attempts,
            } => write!(
                f,
                "the acquisition in lease namespace {namespace:?} lost {attempts} races, the \
                 last of them with nobody winning: the registry's swaps fail while its records \
                 stay as they were, or generators keep releasing and leasing again: build again"
            ),
            LeaseError::Corrupt { address, detail } => write!(
                f,
                "lease registry at {address} holds a record flakegen did not write ({detail}): \
                 remove it, or use another namespace"
            ),
            LeaseError::ReleaseTimedOut {
                namespace,
                worker,
                waited,
            } => write!(
                f,
                "the release of worker id {worker} of lease namespace {namespace:?} was not \
                 confirmed within {waited:?}: the registry is slow or unreachable; the lease \
                 expires after its TTL, and the next holder of the id starts at its fence"
            ),
            LeaseError::ReadOnly { address, role } => write!(
                f,
                "lease registry at {address} takes no writes ({role}): leases need the server \
                 that does. Point the URL at the primary, through an address that follows a \
                 failover, or list every server in a PostgreSQL URL with \
                 target_session_attrs=read-write"
            ),
            LeaseError::MultiWriter {
                address,
                peer,
                found,
            } => write!(
                f,
                "lease registry at {address} takes writes and replicates from {peer}, which \
                 {found}: with two writable masters each side grants leases alone, and two \
                 generators could share an id. Point every generator at one side, and set \
                 read_only = ON on the other (or stop replicating from it)"
            ),
            LeaseError::WrongServer {
                address,
                speaks,
                wanted,
            } => write!(
                f,
                "lease registry at {address}: that port does not speak {wanted}, it speaks \
                 {speaks}: check the URL's port and scheme (a TLS URL wants the server's TLS \
                 port: rediss:// for Redis; the plain one wants redis://)"
            ),
            LeaseError::NoLeases { address } => write!(
                f,
                "lease registry at {address} holds no leases: no generator has leased from it \
                 yet (the first one creates what it needs)"
            ),
            LeaseError::Server { address, source } => {
                write!(
                    f,
                    "lease registry at {address} answered with an error: {source}"
                )
            }
            LeaseError::Copied { address } => write!(
                f,
                "this registry (at {address}) was opened before this process was forked: its \
                 connections are the parent's, and nothing was sent on them; connect again in \
                 this process (lease::connect) for a lease of its own"
            ),
        }
    }
}

impl std::error::Error for LeaseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LeaseError::Unreachable { source, .. }
            | LeaseError::TlsRequired { source, .. }
            | LeaseError::Unauthorized { source, .. }
            | LeaseError::Forbidden { source, .. }
            | LeaseError::NoQuorum { source, .. }
            | LeaseError::Server { source, .. } => Some(&**source),
            _ => None,
        }
    }
}
