// The doc examples run as threads of one process when a test runner wraps
// them (rustdoc then cannot give each its own): each that builds a
// generator on the machine's clock takes a worker id no other one takes, or
// the process refuses the second (`BuildError::WorkerInUse`).
//! Snowflake-style 64-bit unique IDs.
//!
//! An ID is a timestamp, a worker id and a per-unit sequence number packed in
//! 64 bits. Generated in-process with no coordination beyond the worker id,
//! IDs from one generator are unique and strictly increasing, and IDs from
//! different workers sort roughly by time.
//!
//! ```text
//! Layout::TWITTER
//! +-+-----------------------------------------+------------+------------+
//! |0| timestamp: 41 bits of ms since epoch    | worker: 10 | seq: 12    |
//! +-+-----------------------------------------+------------+------------+
//!  63 62                                    22 21        12 11         0
//! ```
//!
//! # Examples
//!
//! ```
//! use flakegen::{Builder, IdGenerator, Layout, Snowflake};
//!
//! let generator = Builder::new().layout(Layout::TWITTER).worker(7).build_atomic()?;
//! let id: Snowflake = generator.next_id()?;
//! let fields = Layout::TWITTER.decode(id)?;
//! assert_eq!(fields.worker, 7);
//!
//! // Batches synchronise once for the whole slice.
//! let mut ids = [Snowflake::default(); 100];
//! generator.next_ids(&mut ids)?;
//! assert!(ids[0] > id);
//! # Ok::<(), flakegen::Error>(())
//! ```
//!
//! # Choosing a strategy
//!
//! One [`Generator`] issues IDs under one set of rules; its three strategies
//! differ only in how concurrent callers synchronise ([`Strategy`] names them
//! at run time):
//!
//! - [`AtomicGenerator`]: one clock read and one `fetch_add` per ID; lock-free,
//!   no thread. The default choice where reading the clock is cheap.
//! - [`MutexGenerator`]: Twitter's algorithm under a `parking_lot` mutex; the
//!   reference design, one clock read and one lock per ID.
//! - [`TickerGenerator`]: a background thread reads the clock once per unit
//!   and callers never do; one `fetch_add` per ID. The choice where reading the
//!   clock is expensive (hypervisors without a vDSO clock), at the price of a
//!   thread and timestamps up to about one unit late.
//!
//! Every strategy is capped by its layout: [`Layout::TWITTER`] allows 4096
//! IDs per millisecond per worker, 244 ns per ID when saturated, however many
//! threads ask. `cargo bench` compares them on your machine.
//!
//! # Time going backwards
//!
//! Each generator keeps a logical clock, the last timestamp and sequence it
//! issued, that never decreases. It follows the system clock forward; when the
//! clock steps back (NTP, VM migration) or a unit's sequence is used up, the
//! logical clock runs ahead of it. [`Builder::max_lead`] bounds that lead: with
//! the default of zero, no ID's timestamp is later than the clock, and
//! [`IdGenerator::next_id`] waits for the clock to catch up while
//! [`IdGenerator::try_next_id`] returns [`IssueError::WouldBlock`] saying how
//! long. No call waits longer than [`Builder::max_wait`] (one second by
//! default): a clock further behind than that is [`IssueError::ClockBehind`],
//! returned at once.
//! Across a restart the logical clock is lost: a process that comes back on a
//! host whose clock is behind could issue IDs it issued before. Store the last
//! ID issued (or read the largest from the database) and pass it to
//! [`Builder::resume_after`]; the new generator never goes at or below it.
//!
//! # How many IDs per second
//!
//! A layout's sequence field is what caps one worker:
//! `2^sequence_bits` IDs per time unit. [`Layout::TWITTER`] gives 4096 per
//! millisecond, 4,096,000 per second per worker; [`Layout::SONYFLAKE`] 256 per
//! 10 ms, 25,600 per second. Asked for more, a generator borrows the next
//! unit, which with `max_lead` zero means waiting for it. Need more? Use more
//! workers, a layout with a wider sequence, or a lead for bursts.
//! [`Layout::ids_per_second`] says it for any layout.
//!
//! # When a layout runs out
//!
//! The timestamp field lasts `2^timestamp_bits` units from the epoch
//! ([`Layout::exhausted_at`]): Twitter's until 2080, Instagram's until 2081,
//! Discord's until 2154, Sonyflake's until 2188. After that, generators return
//! [`IssueError::TimestampExhausted`]; they never wrap round to small IDs. Choose an
//! epoch near your launch date for a custom layout to get the full range.
//!
//! # Choosing worker ids in containers
//!
//! A worker id must be unique among the generators running at one time with
//! the same layout ([why](#one-worker-id-one-generator)). The [`worker`]
//! module reads it from where deployments keep it and checks it against the
//! layout: an environment variable set by the orchestrator (safest), the
//! ordinal of a Kubernetes StatefulSet pod (`web-7` is 7), or the host part
//! of a private IPv4 address, which is unique only in
//! [narrow conditions](worker#when-the-host-part-of-an-address-is-unique).
//! Replicas of a Deployment have random pod names and recycled addresses:
//! lease their ids from a registry ([below](#worker-ids-from-a-registry)).
//! [On Kubernetes](guide::kubernetes) says which to use there, and why not
//! the cluster's own etcd.
//!
//! # Worker ids from a registry
//!
//! Where nothing in the deployment can tell processes apart (autoscaled
//! replicas, serverless, developers' laptops), a generator leases its worker
//! id from a store the service already runs: MySQL or MariaDB, PostgreSQL,
//! Redis, etcd, or on Kubernetes the cluster's own API (features `mysql`,
//! `postgres`, `redis`, `etcd`, `kubernetes`), or
//! [`MemoryRegistry`](lease::MemoryRegistry) in tests. The lease lasts a
//! TTL and a thread renews it; a holder's IDs stay below a fence the registry
//! confirmed, so a new holder of the id starts above them however long the
//! old one was cut off, and a registry that lost its data, failed over to a
//! replica or had its table dropped makes new holders wait rather than
//! guess.
//!
//! ```
//! use flakegen::{Builder, IdGenerator, lease::{Lease, MemoryRegistry}};
//!
//! // In production: lease::connect("postgres://app:secret@db:5432/app")?
//! let registry = MemoryRegistry::new();
//! let generator = Builder::new().lease(Lease::new(registry, "orders")).build_atomic()?;
//! let id = generator.next_id()?;
//! # let _ = id;
//! // Dropping it (or shutdown()) gives the id back for the next process.
//! # Ok::<(), flakegen::Error>(())
//! ```
//!
//! [`lease`] has the contract, the lifecycle, what each registry detects
//! and what a fault costs; `flakegen leases check <URL>` (the `flakegen-cli`
//! crate) says whether a server is fit to lease from.
//!
//! # Storing IDs
//!
//! In Postgres and MySQL use a signed `BIGINT` (Postgres has no unsigned
//! integers): [`Snowflake::to_i64`] and [`Snowflake::from_i64`] convert, and
//! fail rather than wrap. Twitter's and Sonyflake's layouts keep the sign bit
//! clear for their whole life; Discord's and Instagram's use all 64 bits and
//! pass `i64::MAX` in 2084 and 2046, after which a `NUMERIC(20)` or text
//! column is needed. IDs sort by time, so they index well as primary keys and
//! a time range is an ID range ([`Layout::timestamp_at`], [`Layout::compose`]).
//!
//! # Clocks
//!
//! Generators are generic over a [`Clock`]: [`SystemClock`] (the default),
//! [`clock::TscClock`] (the CPU's counter, kept on the system's time: below
//! the OS clock's cost, and far below it where the kernel cannot read the
//! clock without a system call), [`clock::CoarseClock`],
//! [`clock::MonotonicClock`], [`clock::SyscallClock`] (reproduces the cost
//! of clock reads under a hypervisor) and [`clock::ManualClock`] for tests.
//!
//! # Errors
//!
//! Each operation has its own error type: [`IssueError`] for issuing (small
//! and `Copy`: the hot path's result fits in two registers), [`BuildError`],
//! [`LayoutError`], [`IdError`], [`ParseIdError`] and [`WorkerError`].
//! [`Error`] converts from all of them, for one type behind `?`.
//!
//! # Features
//!
//! Only `std` is on by default; each other adds one thing and pulls in only
//! what it needs, and turns `std` on.
//!
//! | feature | adds | pulls in |
//! |---|---|---|
//! | `std` (default) | everything but the core: the system and TSC clocks, the mutex and ticker strategies, blocking waits, [`next_id`], worker ids from the deployment ([`worker`]), leases ([`lease`]). Without it the crate is `no_std` (with `alloc`): layouts, [`Snowflake`], decoding, base32 and text, [`Clock`] with [`clock::ManualClock`] or a clock of one's own ([`Builder::on`]), and [`AtomicGenerator`], whose blocking calls then say how long to wait ([`IssueError::WouldBlock`]) rather than sleep | `parking_lot`, `tracing`, `if-addrs`; `portable-atomic` on targets without 64-bit atomics, with or without it |
//! | `serde` | `Serialize`/`Deserialize` for [`Snowflake`] (a decimal string in JSON, or base32 with `serde::as_base32`), `Layout` (a preset's name, or its fields) and [`Strategy`]: the `flakegen::serde` module | `serde` |
//! | `postgres` | worker-id leases in a PostgreSQL table (`lease::PostgresRegistry`); [`Snowflake`] as a `BIGINT` for the `postgres` crates (`sql`) | `tokio-postgres`, a small `tokio` runtime driven by the lease's thread |
//! | `mysql` | worker-id leases in a MySQL or MariaDB table (`lease::MysqlRegistry`) | `mysql_async` (pure Rust, rustls), the same small runtime |
//! | `redis` | worker-id leases in Redis (`lease::RedisRegistry`) | `redis`, the same small runtime |
//! | `etcd` | worker-id leases in an etcd cluster (`lease::EtcdRegistry`), through its JSON gateway | `serde_json`, `tokio-rustls`, the same small runtime |
//! | `kubernetes` | worker-id leases as Lease objects through a Kubernetes API server (`lease::KubernetesRegistry`; the guide [On Kubernetes](guide::kubernetes)) | `serde_json`, `tokio-rustls`, the same small runtime |
//! | `metrics` | the lease's and the generators' [metrics](#metrics), through the `metrics` facade | `metrics` |
//! | `sqlx` | [`Snowflake`] as a `BIGINT` for sqlx 0.8 (PostgreSQL, MySQL/MariaDB, SQLite): `sql` | `sqlx-core` |
//! | `tokio` | `AsyncIdGenerator` (`next_id_async`), `Builder::build_async`, `Release::wait_async`: every wait a tokio sleep | `tokio` (timer only) |
//! | `inspect` | the operator's side of leasing, which the `flakegen` command uses: what a registry shows (`lease::inspect`, `Registry::inspect`), `Lease::prepare`, the table of registries (`lease::REGISTRIES`), `lease::ClockVerdict` and `RecordState` | nothing |
//!
//! Items that need a feature say so on docs.rs.
//!
//! # Metrics
//!
//! With the `metrics` feature, flakegen reports through the
//! [`metrics`](https://docs.rs/metrics) facade, so the application's
//! exporter (Prometheus, StatsD, OpenTelemetry) publishes them. Nothing is
//! counted on the path of an ID that does not wait: only refusals, waits,
//! and what the lease's thread does.
//!
//! Every series carries a `namespace` label: the lease's, empty for a
//! generator without one. Each metric is described (the `# HELP` line of a
//! Prometheus exporter) before it is first reported.
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `flakegen_lease_state` | gauge | `state` | 1 for the lease's state (`held`, `renewing`, `lost`, `reacquiring`, `released`), 0 for the others |
//! | `flakegen_lease_worker` | gauge | | the worker id of the lease in force: it changes when a lost lease heals onto another id |
//! | `flakegen_lease_fence_lead_seconds` | gauge | | how far the confirmed fence led the holder's clock at the last renewal or acquisition: the time the generator can issue for with its registry gone |
//! | `flakegen_lease_renewal_seconds` | histogram | | the round trip of each confirmed renewal |
//! | `flakegen_lease_renewals_failed_total` | counter | | renewals that failed (the lease is kept, and retried) |
//! | `flakegen_lease_losses_total` | counter | | leases lost: taken, or gone with the registry's data or history |
//! | `flakegen_lease_reacquisitions_total` | counter | | leases taken again after a loss (healing) |
//! | `flakegen_lease_releases_total` | counter | | leases given back at shutdown |
//! | `flakegen_refusals_total` | counter | `kind` | calls refused: `clock_behind`, `copied`, `lease_lost`, `shut_down`, `timestamp_exhausted`, `would_block` (`try_next_id`) |
//! | `flakegen_wait_seconds` | histogram | `cause` | waits, and their total time: `unit` (the unit's IDs used up), `ahead` (the IDs lie further ahead of the clock: a step back, `resume_after`, a lease's start), `fence` (at the lease's fence, for a renewal or a new lease); for the async calls, the wait they were told to make |
//!
//! # Unsafe code
//!
//! The crate denies `unsafe` everywhere but in four files, each of which
//! says why it is sound beside every use:
//!
//! - `src/generator/claims.rs`: calls load the claim in force (worker and
//!   fence) through a raw pointer published with `Release`, and claims are
//!   freed only with the generator. It buys a healed lease that moves under
//!   running callers for one load per call, with no lock or reference count
//!   on the hot path; a loom model checks the order.
//! - `src/clock/os.rs`: libc's `clock_gettime` for the coarse and raw
//!   system-call clocks and `prctl` for the timer slack, which the standard
//!   library does not offer, and the CPU's `rdtsc` and `cpuid` for
//!   [`TscClock`](clock::TscClock).
//! - `src/process.rs`: libc's `pthread_atfork`, so that a forked child
//!   knows it is one without a system call per ID, and a cell that keeps
//!   one value per copy of the process (a forked child's own generator),
//!   leaked so that no copy ever waits on another's lock.
//! - `src/base32.rs`: `Base32::as_str` skips re-checking 13 bytes it wrote
//!   from an ASCII alphabet (checking cost twice the encoding).
//!
//! # Caveats
//!
//! ## One worker id, one generator
//!
//! Two generators with the same layout and worker id can issue the same ID:
//! nothing but the worker id keeps two generators' IDs apart. Within one
//! process flakegen sees to it: a second generator on a layout and worker id
//! that a live one uses is refused ([`BuildError::WorkerInUse`]), and one
//! built after it resumes past its last ID. Across processes only the worker
//! ids can: give every process its own, or lease them. Share one generator
//! between threads (it is `Sync`), or use [`next_id`].
//!
//! ## Forks and snapshots
//!
//! A forked child holds a copy of every generator its parent built: the
//! same worker id, lease and last ID. flakegen sees the fork (on Unix, by a
//! `pthread_atfork` handler; no system call per ID), and in the child those
//! copies refuse every call with [`IssueError::Copied`], waiting on nothing
//! of the parent's, while the parent goes on: build new generators in the
//! child, with a worker id or a lease of its own. [`next_id`] does it by
//! itself when its generator was leased from `FLAKEGEN_LEASE_URL`. A copy
//! made without `fork`, such as a process or a VM restored from a snapshot,
//! cannot be seen: its restore hook must say so (`after_restore`).
//! The guide page *Serverless, forks and snapshots* (`flakegen::guide`) says
//! what to do on each platform.
//!
//! ## IDs in JSON
//!
//! JavaScript's numbers are doubles and lose precision above 2^53: a browser
//! reading `1050118621198921728` as a number gets `1050118621198921700`. Send
//! IDs as strings, as Twitter's and Discord's APIs do. With the `serde`
//! feature, [`Snowflake`] serialises as a decimal string in human-readable
//! formats and as a `u64` in binary ones, and reads either. To send IDs as
//! JSON numbers a browser reads exactly, make them with
//! [`Layout::JAVASCRIPT`] (53 bits) and serialise them with
//! `serde::as_safe_number`, which refuses an ID above 2^53 rather than let
//! a browser round it.
//!
//! ## The ticker's view of the clock
//!
//! The ticker's callers use the unit its thread last published, so their
//! timestamps lag the clock by up to one unit plus however late the thread
//! is, and a clock step back is seen only at the next boundary: for up to one
//! unit, IDs can carry the time from before the step. If the thread is gone
//! and calls are rare, timestamps stay at the last published unit until a
//! caller uses up its sequence and reads the clock itself. Uniqueness and
//! order are never affected.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

mod base32;
pub mod clock;
mod divisor;
mod error;
mod generator;
#[cfg(feature = "std")]
pub mod global;
#[cfg(feature = "std")]
pub mod guide;
mod id;
mod layout;
mod layout_text;
#[cfg(feature = "std")]
pub mod lease;
/// Without `std` there are no leases: a generator issues under one claim,
/// capped only by its layout's end.
#[cfg(not(feature = "std"))]
#[path = "lease"]
mod lease {
    #[allow(dead_code)]
    mod claim;
    #[allow(dead_code)]
    mod fence;

    pub(crate) use self::claim::Claim;
}
mod meter;
mod process;
#[cfg(feature = "serde")]
pub mod serde;
#[cfg(any(feature = "postgres", feature = "sqlx"))]
pub mod sql;
mod sync;
#[cfg(feature = "std")]
pub mod worker;

pub use self::base32::Base32;
pub use self::clock::Clock;
#[cfg(feature = "std")]
pub use self::clock::SystemClock;
pub use self::error::Error;
#[cfg(feature = "tokio")]
pub use self::generator::AsyncIdGenerator;
pub use self::generator::{
    AtomicGenerator, BuildError, Builder, Generator, IdGenerator, IssueError, ParseStrategyError,
    Strategy,
};
#[cfg(feature = "std")]
pub use self::generator::{MutexGenerator, TickerGenerator};
#[cfg(feature = "std")]
pub use self::global::next_id;
pub use self::id::{Field, IdError, ParseIdError, Snowflake};
pub use self::layout::{FieldOrder, Fields, Layout, LayoutBuilder, LayoutError};
pub use self::layout_text::ParseLayoutError;
#[cfg(feature = "std")]
pub use self::worker::{WorkerError, WorkerOrigin};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
