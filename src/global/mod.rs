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

use std::sync::{Mutex, OnceLock, PoisonError};

pub(crate) mod error;

pub use self::error::SetUpError;

use crate::error::Error;
use crate::generator::{Builder, IdGenerator, Strategy};
use crate::id::Snowflake;
use crate::layout::Layout;
use crate::lease::{self, Lease};

/// The process's generator, once set up.
static GENERATOR: OnceLock<Box<dyn IdGenerator>> = OnceLock::new();

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
        Some(generator) => Ok(generator.next_id()?),
        None => first_id(),
    }
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
        Some(generator) => generator,
        None => generator()?,
    };
    Ok(generator.next_id_async().await?)
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
        return Ok(&**generator);
    }
    let _setting_up = SETTING_UP.lock().unwrap_or_else(PoisonError::into_inner);
    // Another first call may have set it up while this one waited.
    if let Some(generator) = GENERATOR.get() {
        return Ok(&**generator);
    }
    let generator = from_env()?;
    let leased = generator.lease().is_some();
    let generator = GENERATOR.get_or_init(|| generator);
    if leased {
        crate::clock::at_exit(release_at_exit);
    }
    Ok(&**generator)
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
extern "C" fn release_at_exit() {
    if let Some(generator) = GENERATOR.get() {
        let wait = generator
            .lease()
            .map_or(std::time::Duration::ZERO, |status| status.release_wait);
        let _ = generator.shutdown().wait(wait);
    }
}
