//! Worker ids leased from a registry, fenced by timestamp.
//!
//! Every scheme of this kind rests on one promise: no two running generators
//! share a layout and a worker id. A lease keeps that promise without trusting
//! any two clocks to agree. [`Builder::lease`](crate::Builder::lease) takes a
//! worker id from a [`Registry`](backend::Registry) ([`MemoryRegistry`] for
//! tests; MySQL, PostgreSQL, Redis, etcd or Kubernetes behind the `mysql`,
//! `postgres`, `redis`, `etcd` and `kubernetes` features) on the terms of a
//! [`Lease`], and keeps it renewed from a thread of its own.
//!
//! # The contract
//!
//! Each worker id's record in the registry holds its holder, a version that
//! changes with every write, an expiry judged by the registry's clock (the
//! server's; for etcd and Kubernetes, which have none, its clients': and
//! then a record another process wrote expires no earlier than the TTL
//! after this process first saw its version, so a host whose clock runs
//! ahead takes no live lease early), the marker it was written under, and
//! a **fence**: an instant (milliseconds since 1970) that its holder's IDs
//! stay below. Like a fencing token, the fence orders holders; unlike one,
//! it needs nothing from whoever stores the IDs. The rules, each decided
//! once (in `protocol/`) and each tested against every backend:
//!
//! 1. **Confirm, then use.** A holder moves its fence forward in the same
//!    atomic step that checks it still holds *this* lease: the marker and
//!    the record's version it last wrote. Its generator uses the new fence
//!    only once the server confirmed it, and issues no ID whose timestamp
//!    (the start of its unit) is at or past it. That is a cap on the tick
//!    counter, like the layout's end: the hot path pays one compare.
//! 2. **Successors start at the fence.** A new holder issues only timestamps
//!    at or past the previous fence, as
//!    [`resume_after`](crate::Builder::resume_after) would. If its clock is
//!    behind, it waits (or leads, within `max_lead`); a fence further ahead
//!    than `max_wait` makes the build fail, and the id is given back. So the
//!    old holder's IDs lie below the fence and the new one's at or above it,
//!    whatever the two clocks read and however long either was paused (a GC
//!    pause, a frozen VM, `SIGSTOP`). Who holds a lease is decided by the
//!    registry's clock and the TTL alone.
//! 3. **Lead bound.** A holder confirms a fence at most one TTL ahead of its
//!    own clock when it writes it. A fence already further ahead (a
//!    predecessor's) is kept as it is, never extended. The loss rule (6)
//!    relies on this bound.
//! 4. **No resurrection.** A renewal that finds its record gone, or
//!    another holder's, or another lease of the same holder, never writes it
//!    back: the generator runs to that lease's confirmed fence and issues
//!    nothing more under it. Leasing again is an ordinary acquisition (rule
//!    6 applies, the skew is checked, the write names the record it
//!    replaces) of a *new* lease, with a new version and the fence the
//!    protocol gives it. The generator does it by itself
//!    ([`Lease::reacquire`], on by default): it prefers its old id if that
//!    is free and takes another if not, and issues again once the new
//!    lease's IDs may start, so a registry restart costs a service a pause
//!    of about the TTL and the skew, never an outage. Every ID carries the
//!    worker of the lease its call started under and a tick within that
//!    lease's range, its start to its fence (see [the
//!    lifecycle](#the-lifecycle)); with re-acquiring off, a lost lease is
//!    final and the generator refuses with
//!    [`IssueError::LeaseLost`](crate::IssueError::LeaseLost) from its fence on.
//! 5. **Only its own lease is lowered.** A generator that shuts down
//!    ([`IdGenerator::shutdown`](crate::IdGenerator::shutdown), or a drop)
//!    stops issuing first: its fence closes, and its tick counter is sealed
//!    in one read-modify-write, so every call still under way either counted
//!    in the last tick or is refused. Its lease is then released with the
//!    fence lowered to the start of the unit after that last tick, so a
//!    restart need not wait. The write names the exact lease, so it never
//!    lowers a record written after a loss, or by anyone else.
//! 6. **Losses are fenced, and emptiness proves nothing.** An id with no
//!    record the registry vouches for waits the TTL and the skew past the
//!    moment the registry could have forgotten it. See
//!    [below](#a-registry-that-loses-its-data).
//! 7. **Bounded.** Every registry call finishes or fails within its timeout,
//!    measured on the client ([`Lease::DEFAULT_TIMEOUT`]). A build that took longer
//!    than a renewal interval renews before it returns. A refusal at the
//!    fence consumes no ticks, so a generator whose lease recovers issues
//!    again at once.
//! 8. **`lease()` tells the truth.** Whenever a call returns `LeaseLost`,
//!    [`IdGenerator::lease`](crate::IdGenerator::lease) is not
//!    [`Held`](LeaseState::Held) and says why.
//! 9. **Cheap at any scale.** An acquisition costs what the live holders
//!    cost, not the id space, nor every record ever written: a registry
//!    reads only the records it may choose from (see
//!    [`Registry::read`](backend::Registry::read)), and no call holds a
//!    shared server for more than a millisecond (measured in
//!    `benches/lease_scale.rs` up to 16 worker bits and 1,000 holders).
//!
//! Where each rule is kept, in `src/lease/` (a test holds each file to
//! citing its rule):
//!
//! | rule | kept in |
//! | --- | --- |
//! | 1. Confirm, then use | `protocol/grant.rs` |
//! | 2. Successors start at the fence | `protocol/start.rs` |
//! | 3. Lead bound | `protocol/terms.rs` |
//! | 4. No resurrection | `protocol/grant.rs` |
//! | 5. Only its own lease is lowered | `protocol/grant.rs` |
//! | 6. Losses are fenced | `protocol/start.rs`, `protocol/terms.rs` |
//! | 7. Bounded | `protocol/acquire.rs` |
//! | 8. `lease()` tells the truth | `status.rs` |
//! | 9. Cheap at any scale | `protocol/acquire.rs` |
//!
//! When renewals fail (the registry is down, or a partition cuts the holder
//! off), the generator runs on to its fence and then refuses; if the registry
//! comes back with the lease intact, renewals succeed and it issues again.
//!
//! # The lifecycle
//!
//! ```text
//!            build
//!              |  acquire (rule 6, the skew check, a compare-and-set)
//!              v
//!   +------> Held <------------------+ renewal confirmed
//!   |          |  renewal failed     |
//!   |          v                     |
//!   |       Renewing ----------------+
//!   |          |  record gone, or another's (rule 4)
//!   |          v
//!   |         Lost ------------------> refuses from its fence on,
//!   |          |                       for good (reacquire off)
//!   |          |  reacquire on (the default)
//!   |          v
//!   +---- Reacquiring   a new lease: the old id if free, else another;
//!   new lease confirmed retried until one is granted
//!
//!   any state --- shutdown() or drop ---> Released
//! ```
//!
//! | state | the generator | `lease()` |
//! | --- | --- | --- |
//! | [`Held`](LeaseState::Held) | issues below the confirmed fence | the fence, the time left |
//! | [`Renewing`](LeaseState::Renewing) | issues up to its fence; there, `next_id` waits within `max_wait` for a renewal to land and refuses with `LeaseLost` beyond it, `try_next_id` refuses at once | why renewals fail |
//! | [`Lost`](LeaseState::Lost) | issues up to its fence, then refuses for good | who took it, or that it is gone |
//! | [`Reacquiring`](LeaseState::Reacquiring) | as at its fence: `next_id` waits within `max_wait` and refuses with `LeaseLost` beyond it, `try_next_id` says how long to wait once a new lease is granted, `next_id_async` awaits | why the lease was lost, what the last attempt met, or when the new lease's IDs start |
//! | [`Released`](LeaseState::Released) | refuses with `ShutDown` | |
//!
//! A new lease is a new claim on a worker id: its own worker, its own start
//! (the fence its predecessor left) and its own fence. A generator moves to
//! it only once its IDs may start within `max_wait`, and only after moving
//! its tick counter past the new lease's start and past the unit of every
//! ID issued so far. Each call reads the claim in force once, before it
//! reserves a tick, and composes its ID from that claim's worker and a tick
//! judged against that claim's fence; so no ID combines a tick reserved
//! under one lease with another lease's worker id, and IDs keep increasing
//! though the worker changed. A call still under way with the old claim
//! issues below the old lease's confirmed fence, as rule 4 allows.
//!
//! # A registry that loses its data
//!
//! A registry can lose records while holders run on fences it no longer
//! knows about: a Redis restarted without persistence; a truncated or
//! dropped table; data deleted by hand (a `FLUSHALL`, a namespace's rows or
//! keys, one record); or a server whose history changed under the holders:
//! a replica promoted after it missed the last renewals, a restore. So each
//! namespace has a **marker**: the moment, by the registry's clock, rounded
//! up to a millisecond, from which the registry vouches for the namespace's
//! records, never earlier than a loss. The marker names the history it
//! vouches for (the server, and on PostgreSQL its timeline), so a change of
//! history voids it as a loss of data does. Every record carries the
//! marker it was written under, and every write checks the marker in
//! force. Beside it the namespace keeps a **high-water mark**, raised in
//! the same step as every write past it: no id at or above it has had a
//! record under the marker.
//!
//! **An empty registry proves nothing.** A namespace with no marker is new,
//! or was emptied (everything deleted, its tables dropped, a backup from
//! before it existed restored), and nothing in an empty store tells which.
//! So the one rule for an id with no record the marker vouches for (none,
//! or one written under an older marker):
//!
//! - at or above the high-water mark, it was never handed out since the
//!   marker was written: it is fenced at the **marker** plus the TTL plus
//!   the skew allowance ([`Lease::skew`], default [`Lease::DEFAULT_SKEW`]);
//! - below the mark, it was handed out and its record is gone: it is fenced
//!   at the moment the registry was **seen** without it, plus the TTL and
//!   the skew;
//! - a marker written where there was none is the registry's clock at that
//!   moment ([`Registry::mark`](backend::Registry::mark)), so a new
//!   namespace's first builds wait the TTL and the skew once, the same as an
//!   emptied one's. `flakegen leases init` (`Lease::prepare`, feature `inspect`) pays that
//!   wait at install time instead: it marks the namespace and waits it
//!   out, so that its services' builds start at once. It takes nobody's
//!   word that a namespace is new: a declaration could not tell a new
//!   namespace from one emptied under running generators. [`LeaseStatus::start_cause`] says which bound set a
//!   lease's start, and the `lease acquired` event says why it waits.
//!
//! And a generator that has **seen** its lease's record, its marker or its
//! whole namespace gone trusts no empty registry after that: the lease it
//! takes next starts the TTL and the skew past the moment it saw it (or at
//! its own last confirmed fence, if later), whatever the registry now
//! says, so two holders from before an emptied registry never take each
//! other's ids at once ([`StartCause::Healing`]). After a loss:
//!
//! - a holder from before the loss can no longer renew (its marker, or its
//!   record, is gone), so it runs to its fence and stops issuing under that
//!   lease; it leases again (unless [`Lease::reacquire`] is off), its IDs
//!   starting where the rules above say, and issues again then, with no
//!   rebuild.
//!
//! Why that is enough: before the loss, a holder confirmed fences at most a
//! TTL ahead of its clock (rule 3), its clock was at most the skew ahead of
//! the server's (checked at every acquisition and renewal), and the server
//! wrote before the marker, or before the moment it was seen without the
//! record. Only the first TTL and skew after a loss wait. This is the one
//! place where clocks must roughly agree, and the reason every generator of
//! a namespace must use the same TTL and skew. (The servers of one registry
//! are taken to keep their clocks in step, as replicated databases do: see
//! [`backend`].)
//!
//! One loss leaves no trace at all: a registry **rolled back in place**, a
//! backup restored onto the same server (a disk snapshot rolled back, a
//! PostgreSQL data directory copied back) or an etcd snapshot restored
//! under the same cluster token before the cluster's first leader change.
//! It is consistent and old, and nothing in it can tell. Where that can
//! happen, turn on
//! [`Lease::wait_out_rollbacks`]: every grant then waits the TTL and the
//! skew past the read that chose it, so a holder the old copy forgot has
//! stopped before a new one issues. Each registry's docs say what it
//! detects and what it cannot.
//!
//! ## What a failover costs
//!
//! Every failover is such a loss, whether the new primary missed renewals
//! or not: flakegen cannot prove from the server that it has every write
//! the old one confirmed. A service pays a pause: its generators run to the
//! fences the old primary confirmed (at most a TTL past their last
//! renewal), then refuse until their new leases start, the TTL and the
//! skew allowance past the failover, and issue again by themselves. With
//! the defaults that is about 12 s, less the time since their last renewal.
//! Nothing is issued twice: with a replica cut off while its primary
//! renewed, then promoted, 0 duplicate IDs on every backend (the
//! `lease_history` tests), where a marker that did not name the history
//! let two generators share most of a second's IDs for as long as the
//! replica lagged. Two masters that both take writes (a master-master pair
//! with writes on both sides) give no compare-and-set at all: a registry
//! that can see them refuses to lease ([`LeaseError::MultiWriter`]).
//!
//! A consensus store (etcd) has no such failover: while a majority of its
//! members stands it forgets nothing it confirmed, so a member or its
//! leader lost costs a renewal's retry, and no generator refuses (a leader
//! killed for 5 s under three generators: 0 refusals, the `lease_etcd`
//! tests). Its one loss is a restore from a snapshot. It keeps no clock,
//! so its times are its clients' ([`TimeBase::Client`](backend::TimeBase)):
//! nothing checks a host's clock against the others', and the skew
//! allowance is what every host must keep to.
//!
//! # What blocks
//!
//! Every registry call runs on the lease's own thread (`flakegen-lease`, one
//! per leased generator), which drives the registry's client from a small
//! runtime of the registry's own; none runs on a caller's thread, and each
//! finishes or fails within its bound ([`Lease::DEFAULT_TIMEOUT`] on an open
//! connection; a new connection's set-up as the terms allow). So:
//!
//! | call | blocks the calling thread |
//! | --- | --- |
//! | `Builder::build_async` (feature `tokio`) | never: it awaits the acquisition, then tokio's timer |
//! | `Builder::build_*`, `build` | until the lease is acquired: a few registry round trips, each within the timeout, and more while other builds take the ids it chose (a race lost to another build is progress: it may lose one per id of the namespace, with random pauses under 64 ms, but only 32 in a row that nobody won); with etcd and a password, a login queued behind many others may take 12 s more; then, if the previous holder's fence lies ahead, until it is within `max_wait` (at most [`Lease::start_wait`]) |
//! | [`next_id`](crate::IdGenerator::next_id) and the other issuing calls | never for the registry: one load and one compare; waits for the clock as without a lease |
//! | [`shutdown`](crate::IdGenerator::shutdown) | never: it tells the lease's thread, which releases within the timeout |
//! | dropping the generator | until the registry confirmed the release, at most [`Lease::release_wait`] (1 s by default); never on a tokio runtime's thread |
//! | [`Release::wait`] | up to the time it is given; `Release::wait_async` (feature `tokio`) waits on tokio's timer |
//!
//! So a program that exits right after dropping its generator leaves its id
//! free, its fence lowered to its last ID, and the next run takes it at
//! once. A service that wants to know the release landed waits for the
//! [`Release`] where it chooses, as at a graceful shutdown:
//!
//! ```
//! use std::time::Duration;
//! use flakegen::{Builder, IdGenerator, lease::{Lease, MemoryRegistry}};
//!
//! let generator = Builder::new().lease(Lease::new(MemoryRegistry::new(), "orders")).build_atomic()?;
//! // ... serve requests, then at shutdown:
//! if let Err(e) = generator.shutdown().wait(Duration::from_secs(3)) {
//!     eprintln!("the lease will expire on its own: {e}");
//! }
//! # Ok::<(), flakegen::Error>(())
//! ```
//!
//! # Events
//!
//! The lease's thread reports each change of state as a [`tracing`] event,
//! target `flakegen::lease`, with the fields `namespace`, `worker` and
//! `fence_unix_millis` (and `error` where there is one), to the subscriber in
//! effect where the generator was built: `lease acquired` (info, with
//! `starts_unix_millis`, where its IDs start); `lease renewals failing` (warn,
//! once per outage, not once per retry); `lease recovered` (info); `lease
//! lost` (warn while re-acquiring is on, error when it is off; with
//! `starts_unix_millis`); `lease reacquired` (info, with `previous_worker` and
//! `starts_unix_millis`); `lease reacquisition failing` (warn, once per
//! outage); `lease fence reached` (error: the generator refuses IDs);
//! `lease released` (info), or `lease not released` (warn). Nothing is
//! reported from the ID path.
//!
//! # Choosing a TTL
//!
//! The TTL bounds how long a crashed holder's id stays unusable. It is also
//! how long a holder rides out an unreachable registry before it stops. The
//! lease's thread renews every third of it by default. A few seconds suits
//! most services (the default is 10 s); it must be at least [`Lease::MIN_TTL`], two
//! units of the layout, and longer than the generator's `max_lead` plus the
//! renewal interval.
//!
//! # Round trips
//!
//! What each step costs in round trips to the registry, at most, counted
//! by a proxy in front of each test server (`tests/round_trips.rs`, which
//! holds each registry to the table of registries, `REGISTRIES`, with the
//! `inspect` feature; `cargo test --all-features --test round_trips --
//! --nocapture` with the test servers running). A build on a new
//! connection includes the connection's set-up (authentication, session
//! settings, statements prepared; no TLS here), not the TCP handshake; a
//! warm build runs on a connection another lease opened; a renewal on a
//! new connection is one whose connection was cut, so it pays the set-up
//! again (none on etcd here: no password, no TLS). Each build here takes
//! an id whose record exists, as most builds in a namespace in use do. `flakegen leases check` measures a registry's round-trip time and
//! warns when the terms leave too little room for these at that distance.
//!
//! | registry | build, new connection | build, warm | renewal | renewal, new connection | release | read |
//! |---|---|---|---|---|---|---|
//! | PostgreSQL | 7 | 2 | 1 | 6 | 1 | 1 |
//! | Redis | 3 | 2 | 1 | 2 | 1 | 1 |
//! | MySQL or MariaDB | 9 | 3 | 1 | 8 | 1 | 2 |
//! | etcd | 5 | 2 | 1 | 1 | 1 | 1 |
//! | Kubernetes | 4 | 3 | 1 | 2 | 1 | 1 |
//!
//! A renewal on etcd and on Kubernetes names what its holder wrote last,
//! in one request; after a gap longer than the TTL it reads the record
//! first, since a restore (which takes the cluster down, and gives
//! revisions again) can have given the revision it names to another
//! write. Kubernetes' new connection is TLS's one round trip (its API is
//! always TLS); its warm build reads the namespace, then confirms the
//! marker (or raises the high-water mark on it) and writes the record.
//! etcd's warm build reads in one transaction, the namespace's mark being
//! the one this client read last, then writes the record naming what the
//! read saw; where the mark moved since (another client raised it) the
//! read takes one transaction more, and one more again for index entries
//! naming records it did not read. A first read of a namespace is two
//! transactions, and a new connection's set-up on etcd is a login where
//! the URL has a password, and TLS's round trip with `etcds://`.
//!
//! So distance costs round trips, and the TTL says how many fit: a build
//! on a new connection has the TTL, a renewal's call on an open connection
//! a fifth of it ([`Lease::call_timeout`], at most 3 s), and a renewal that
//! must reconnect half of what is left at its first try. The farthest
//! registry each TTL fits, by its round-trip time (reckoned by
//! `Lease::at_distance`, feature `inspect`, as `flakegen leases check`
//! does; past it, a lost connection pauses the generators at their fence,
//! and nothing is refused for good):
//!
//! | registry | TTL 3 s | TTL 10 s (default) | TTL 30 s |
//! |---|---|---|---|
//! | PostgreSQL | 166 ms | 555 ms | 1666 ms |
//! | Redis | 500 ms | 1666 ms | 3000 ms |
//! | MySQL or MariaDB | 125 ms | 416 ms | 1250 ms |
//! | etcd | 600 ms | 2000 ms | 3000 ms |
//! | Kubernetes | 500 ms | 1666 ms | 3000 ms |
//!
//! `tests/lease_distance.rs` holds every registry to it through toxiproxy:
//! 150 ± 30 ms each way at the default terms, 50 ± 10 ms each way at a TTL
//! of 3 s, and the same with every connection cut, each with no refusal in
//! 30 s of issuing.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use flakegen::{Builder, IdGenerator, lease::{Lease, LeaseState, MemoryRegistry}};
//!
//! let registry = MemoryRegistry::new();
//! let generator = Builder::new()
//!     .lease(Lease::new(registry, "orders").ttl(Duration::from_secs(2)))
//!     .build_atomic()?;
//! let id = generator.next_id()?;
//! let status = generator.lease().unwrap();
//! assert_eq!(status.state, LeaseState::Held);
//! assert_eq!(generator.layout().decode(id)?.worker, status.worker);
//! # Ok::<(), flakegen::Error>(())
//! ```

pub mod backend;
mod claim;
#[cfg(feature = "inspect")]
mod distance;
mod error;
mod fence;
mod handle;
#[cfg(feature = "inspect")]
pub mod inspect;
mod keeper;
mod protocol;
mod settings;
mod slot;
mod status;

#[cfg(feature = "inspect")]
pub use self::backend::client::url::redacted_url;
pub use self::backend::connect::connect;
#[cfg(feature = "inspect")]
pub use self::backend::connect::{REGISTRIES, RegistryKind, RoundTrips};
pub use self::backend::error::LeaseError;
#[cfg(feature = "etcd")]
pub use self::backend::etcd::EtcdRegistry;
#[cfg(feature = "kubernetes")]
pub use self::backend::kubernetes::KubernetesRegistry;
pub use self::backend::memory::MemoryRegistry;
#[cfg(feature = "mysql")]
pub use self::backend::mysql::MysqlRegistry;
#[cfg(feature = "postgres")]
pub use self::backend::postgres::PostgresRegistry;
#[cfg(feature = "redis")]
pub use self::backend::redis::RedisRegistry;
pub(crate) use self::claim::Claim;
#[cfg(feature = "inspect")]
pub use self::distance::Distance;
pub use self::error::InvalidTerms;
pub(crate) use self::error::Refused;
pub use self::handle::Release;
pub(crate) use self::handle::{LeaseHandle, Pending};
pub use self::protocol::StartCause;
#[cfg(feature = "inspect")]
pub use self::protocol::{ClockVerdict, Readiness};
pub use self::settings::Lease;
pub use self::status::{LeaseState, LeaseStatus};
