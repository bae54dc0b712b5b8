//! Issuing from async code (feature `tokio`): the same calls, with every
//! wait a tokio sleep.

use std::future::Future;
use std::time::{Duration, Instant};

use super::IdGenerator;
use super::error::IssueError;
use crate::id::Snowflake;
use crate::meter;

/// The issuing calls of [`IdGenerator`] for async code (feature `tokio`),
/// for every generator, `Box<dyn IdGenerator>` included.
///
/// Where [`next_id`](IdGenerator::next_id) would sleep on the caller's thread
/// (the unit's sequence used up, the clock behind within `max_wait`, a
/// lease's fence ahead of the clock), these await a tokio sleep instead, so
/// no runtime thread is ever blocked. When nothing needs waiting, the call is
/// `next_id`'s own fast path: no allocation, no boxing, and the future is
/// ready at its first poll. A call waits for at most the
/// generator's [`max_wait`](IdGenerator::max_wait), then fails with
/// [`IssueError::ClockBehind`], as the blocking call does.
///
/// A call that must wait gives back the IDs it reserved and asks again after
/// its sleep, so waiting callers are served in the order their sleeps end,
/// not the order they asked (the blocking calls keep their reservation);
/// IDs given back while another call reserved are skipped, a gap in the
/// sequence, never a repeat.
///
/// # Examples
///
/// ```
/// use flakegen::{AsyncIdGenerator, Builder, IdGenerator, Strategy};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), flakegen::Error> {
/// let generator = Builder::new().worker(6).build(Strategy::Atomic)?;
/// let first = generator.next_id_async().await?;
/// let mut ids = [flakegen::Snowflake::default(); 8];
/// generator.next_ids_async(&mut ids).await?;
/// assert!(first < ids[0]);
/// # Ok(())
/// # }
/// ```
pub trait AsyncIdGenerator: IdGenerator {
    /// [`next_id`](IdGenerator::next_id), waiting with tokio's timer.
    ///
    /// # Errors
    ///
    /// As for `next_id`.
    fn next_id_async(&self) -> impl Future<Output = Result<Snowflake, IssueError>> + Send;

    /// [`next_ids`](IdGenerator::next_ids), waiting with tokio's timer.
    ///
    /// # Errors
    ///
    /// As for `next_ids`; `ids` is then left unchanged.
    fn next_ids_async(
        &self,
        ids: &mut [Snowflake],
    ) -> impl Future<Output = Result<(), IssueError>> + Send;
}

impl<G: IdGenerator + ?Sized> AsyncIdGenerator for G {
    #[inline]
    async fn next_id_async(&self) -> Result<Snowflake, IssueError> {
        match self.next_id_or_wait_hint() {
            Err(IssueError::WouldBlock { wait_nanos }) => {
                wait_then(self, wait_nanos, |g| g.next_id_or_wait_hint()).await
            }
            done => done.map_err(|e| refused(self, e)),
        }
    }

    #[inline]
    async fn next_ids_async(&self, ids: &mut [Snowflake]) -> Result<(), IssueError> {
        match self.next_ids_or_wait_hint(ids) {
            Err(IssueError::WouldBlock { wait_nanos }) => {
                wait_then(self, wait_nanos, |g| g.next_ids_or_wait_hint(ids)).await
            }
            done => done.map_err(|e| refused(self, e)),
        }
    }
}

/// A refusal, counted under the generator's lease's namespace.
/// Why a wait that ran out of `max_wait` ends, `wait_nanos` short: the
/// lease's fence, where no renewal or new lease came in time, or else the
/// clock behind. A `try_` call judges it exactly, and at the fence refuses
/// with `LeaseLost` (should it issue instead, that ID is a gap, never a
/// repeat).
#[cold]
fn gave_up<G: IdGenerator + ?Sized>(generator: &G, wait_nanos: u64) -> IssueError {
    match generator.lease().map(|_| generator.try_next_id()) {
        Some(Err(fenced @ IssueError::LeaseLost { .. })) => fenced,
        _ => IssueError::ClockBehind {
            behind_nanos: wait_nanos,
        },
    }
}

#[cold]
fn refused<G: IdGenerator + ?Sized>(generator: &G, e: IssueError) -> IssueError {
    let namespace = generator.lease().map(|status| status.namespace);
    meter::refused(e, namespace.as_deref().unwrap_or(""))
}

/// Sleeps `wait_nanos`, then makes the `attempt` again, for as long as it
/// says to wait and at most the generator's `max_wait`, by the monotonic
/// clock: a clock that stops cannot hold the caller.
async fn wait_then<G, T>(
    generator: &G,
    mut wait_nanos: u64,
    mut attempt: impl FnMut(&G) -> Result<T, IssueError>,
) -> Result<T, IssueError>
where
    G: IdGenerator + ?Sized,
{
    let give_up = Instant::now().checked_add(generator.max_wait());
    loop {
        if give_up.is_some_and(|at| Instant::now() >= at) {
            return Err(refused(generator, gave_up(generator, wait_nanos)));
        }
        tokio::time::sleep(Duration::from_nanos(wait_nanos)).await;
        match attempt(generator) {
            Err(IssueError::WouldBlock { wait_nanos: again }) => wait_nanos = again,
            done => return done.map_err(|e| refused(generator, e)),
        }
    }
}
