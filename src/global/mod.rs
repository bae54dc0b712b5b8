//! One generator for the whole process: an ID in one call, for the program
//! that wants no more ([`next_id`]).
//!
//! It is set up once, explicitly ([`set_up`]) or from the environment (by
//! the first call, or [`generator`] at start-up, to meet a bad variable
//! there), and never with a worker id of
//! its own choosing: until something says which worker the process is, or
//! where to lease one, every call is a clear error. The environment:
//!
//! | variable | what |
//! | --- | --- |
//! | `FLAKEGEN_WORKER_ID` | the worker id, unique among the running processes of the layout |
//! | `FLAKEGEN_LEASE_URL`, `FLAKEGEN_LEASE_NAMESPACE` | or: lease one from this registry (see [`lease::connect`]), among the generators of this namespace |
//! | `FLAKEGEN_LAYOUT` | the layout: `twitter` (the default), `discord`, `sonyflake`, `instagram`, `javascript`, or a custom one's fields (`worker_bits=8,sequence_bits=14`) |
//! | `FLAKEGEN_STRATEGY` | `atomic` (the default), `mutex` or `ticker` |
//!
//! A leased generator gives its id back when the process exits (on Linux,
//! through an exit handler that waits for the registry within
//! [`Lease::release_wait`]; elsewhere the lease expires after its TTL).
//!
//! A forked child never issues with its parent's generator: its first call
//! there leases an id of the child's own when the generator was leased
//! from `FLAKEGEN_LEASE_URL` (on a connection of its own, released at the
//! child's exit), and is refused ([`IssueError::Copied`]) otherwise: a worker
//! id given is the parent's, and a generator [`set_up`] by hand has no URL
//! to lease from. A process restored from a snapshot calls
//! [`after_restore`] in its restore hook (see the guide page
//! [*Serverless, forks and snapshots*](crate::guide::copies)).
//!
//! # Examples
//!
//! ```standalone_crate
//! # // A process of its own: the process's generator is set up once.
//! use flakegen::{Builder, global};
//!
//! // Once, at start-up (or set FLAKEGEN_WORKER_ID and skip this):
//! global::set_up(Builder::new().worker(7).build_atomic()?)?;
//!
//! // Anywhere after:
//! let id = flakegen::next_id()?;
//! # assert!(flakegen::next_id()? > id);
//! # Ok::<(), flakegen::Error>(())
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

pub(crate) mod error;

pub use self::error::SetUpError;

use crate::error::Error;
use crate::generator::{Builder, IdGenerator, IssueError, Strategy};
use crate::id::Snowflake;
use crate::layout::Layout;
use crate::lease::{self, Lease};
use crate::process::{Generation, PerCopy};

/// The process's generator, once set up.
static GENERATOR: OnceLock<Box<dyn IdGenerator>> = OnceLock::new();

/// The process generation the generator was set up in: in a forked
/// child, the parent's.
static SET_UP_IN: OnceLock<Generation> = OnceLock::new();

/// Whether the process's generator was leased from `FLAKEGEN_LEASE_URL`,
/// which a forked child can lease from again.
static LEASED_FROM_ENV: AtomicBool = AtomicBool::new(false);

/// A forked child's own generator, leased from `FLAKEGEN_LEASE_URL` by
/// its first call (the parent's refuses there).
static CHILDS: PerCopy<Box<dyn IdGenerator>> = PerCopy::new();

/// Held while the environment is read and a generator built, so that two
/// first calls build one generator, not two.
static SETTING_UP: Mutex<()> = Mutex::new(());

/// The next ID of the process's generator, set up from the environment by
/// the first call if nothing set it up before.
///
/// After the first call this is the generator's own `next_id`, behind one
/// load and one indirect call.
///
/// # Errors
///
/// [`SetUpError`] (as [`Error::SetUp`]) when there is no generator and the
/// environment names no worker id or lease, or names a bad one;
/// [`Error::Build`] when building it failed; then the errors of
/// [`IdGenerator::next_id`] as [`Error::Issue`].
#[inline]
pub fn next_id() -> Result<Snowflake, Error> {
    match GENERATOR.get() {
        Some(generator) => match generator.next_id() {
            Err(IssueError::Copied) => childs_id(),
            issued => Ok(issued?),
        },
        None => first_id(),
    }
}

#[cold]
#[inline(never)]
fn childs_id() -> Result<Snowflake, Error> {
    Ok(childs()?.next_id()?)
}

/// A forked child's own generator, leased from `FLAKEGEN_LEASE_URL` by
/// the first call that asks; [`IssueError::Copied`] where the parent's
/// was not leased from there.
#[cold]
fn childs() -> Result<&'static dyn IdGenerator, Error> {
    if !LEASED_FROM_ENV.load(Ordering::Relaxed) {
        return Err(IssueError::Copied.into());
    }
    let generator = CHILDS.get_or_try_make(|| {
        let generator = from_env()?;
        crate::clock::at_exit(release_at_exit);
        Ok::<_, Error>(generator)
    })?;
    Ok(&**generator)
}

#[cold]
#[inline(never)]
fn first_id() -> Result<Snowflake, Error> {
    Ok(generator()?.next_id()?)
}

/// [`next_id`] for async code (feature `tokio`): a wait for the clock is a
/// tokio sleep (see [`AsyncIdGenerator`](crate::AsyncIdGenerator)). A first
/// call that sets up a leased generator from the environment blocks the
/// thread while it acquires the lease: set it up before serving, with
/// [`set_up`] and `Builder::build_async`, to keep that off the runtime.
///
/// # Errors
///
/// As for [`next_id`].
#[cfg(feature = "tokio")]
pub async fn next_id_async() -> Result<Snowflake, Error> {
    use crate::AsyncIdGenerator;
    let generator = match GENERATOR.get() {
        Some(generator) => &**generator,
        None => generator()?,
    };
    match generator.next_id_async().await {
        Err(IssueError::Copied) => Ok(childs()?.next_id_async().await?),
        issued => Ok(issued?),
    }
}

/// Makes `generator` the process's, for [`next_id`] and [`generator`].
///
/// # Errors
///
/// [`SetUpError::AlreadySetUp`] if the process has one already: the first
/// stays, and `generator` is dropped.
pub fn set_up(generator: impl IdGenerator + 'static) -> Result<(), SetUpError> {
    let _setting_up = SETTING_UP.lock().unwrap_or_else(PoisonError::into_inner);
    let leased = generator.lease().is_some();
    GENERATOR
        .set(Box::new(generator))
        .map_err(|_| SetUpError::AlreadySetUp)?;
    let _ = SET_UP_IN.set(Generation::now());
    if leased {
        crate::clock::at_exit(release_at_exit);
    }
    Ok(())
}

/// The process's generator: the one set up, or one set up now from the
/// environment if nothing set it up before (see [the module docs](self)).
/// Call it at start-up to meet a missing or bad variable there rather than
/// at the first ID.
///
/// # Errors
///
/// As for [`next_id`]'s first call.
pub fn generator() -> Result<&'static dyn IdGenerator, Error> {
    if let Some(generator) = GENERATOR.get() {
        if SET_UP_IN.get().is_some_and(|set_up| set_up.is_past()) {
            return childs();
        }
        return Ok(&**generator);
    }
    let _setting_up = SETTING_UP.lock().unwrap_or_else(PoisonError::into_inner);
    // Another first call may have set it up while this one waited.
    if let Some(generator) = GENERATOR.get() {
        return Ok(&**generator);
    }
    let generator = from_env()?;
    let leased = generator.lease().is_some();
    LEASED_FROM_ENV.store(leased, Ordering::Relaxed);
    let generator = GENERATOR.get_or_init(|| generator);
    let _ = SET_UP_IN.set(Generation::now());
    if leased {
        crate::clock::at_exit(release_at_exit);
    }
    Ok(&**generator)
}

/// Tells the process's generator that this process is a copy restored
/// from a snapshot: call it in the restore hook (Lambda SnapStart's,
/// CRaC's, a CRIU script's), before any ID is issued. See
/// [`IdGenerator::after_restore`]: a generator leased from
/// `FLAKEGEN_LEASE_URL`, or set up with a lease from
/// [`lease::connect`], leases again as a new holder; one on a worker id
/// refuses from now on. Nothing set up yet: nothing to do, and the first
/// call sets one up in this copy.
///
/// # Errors
///
/// As for [`IdGenerator::after_restore`].
pub fn after_restore() -> Result<(), Error> {
    match CHILDS.get_here().or(GENERATOR.get()) {
        Some(generator) => generator.after_restore(),
        None => Ok(()),
    }
}

/// Reads a variable, if set and not empty.
fn var(name: &'static str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// A generator from the environment's variables.
fn from_env() -> Result<Box<dyn IdGenerator>, Error> {
    let layout = match var("FLAKEGEN_LAYOUT") {
        Some(text) => text.parse::<Layout>().map_err(|e| SetUpError::Env {
            var: "FLAKEGEN_LAYOUT",
            reason: e.to_string(),
        })?,
        None => Layout::TWITTER,
    };
    let strategy = match var("FLAKEGEN_STRATEGY") {
        Some(text) => text.parse::<Strategy>().map_err(|e| SetUpError::Env {
            var: "FLAKEGEN_STRATEGY",
            reason: e.to_string(),
        })?,
        None => Strategy::Atomic,
    };
    let builder = Builder::new().layout(layout);
    let builder = match (var(crate::worker::ENV_VAR), var("FLAKEGEN_LEASE_URL")) {
        (Some(_), Some(_)) => {
            return Err(SetUpError::Env {
                var: "FLAKEGEN_LEASE_URL",
                reason: format!(
                    "both it and {} are set: a worker id is given or leased, not both",
                    crate::worker::ENV_VAR
                ),
            }
            .into());
        }
        (Some(_), None) => builder.worker(crate::worker::from_env(&layout)?),
        (None, Some(url)) => {
            let namespace = var("FLAKEGEN_LEASE_NAMESPACE").ok_or(SetUpError::Env {
                var: "FLAKEGEN_LEASE_NAMESPACE",
                reason: "it is not set, and FLAKEGEN_LEASE_URL is: name the generators' \
                         namespace"
                    .to_owned(),
            })?;
            builder.lease(Lease::new(lease::connect(&url)?, namespace))
        }
        (None, None) => return Err(SetUpError::NothingToGoOn.into()),
    };
    Ok(builder.build(strategy)?)
}

/// At exit: the leased generator gives its id back, and the registry is
/// waited for, within the lease's `release_wait`.
///
/// In a forked child the parent's generator releases nothing (the lease is
/// the parent's): the child's own does.
extern "C" fn release_at_exit() {
    let own = CHILDS.get_here().or(GENERATOR.get());
    if let Some(generator) = own {
        let wait = generator
            .lease()
            .map_or(std::time::Duration::ZERO, |status| status.release_wait);
        let _ = generator.shutdown().wait(wait);
    }
}
