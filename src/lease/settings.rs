//! A lease as one value: where, and on what terms.

use core::fmt;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::backend::{Registry, check_namespace};
use super::error::{InvalidTerms, Refused};
use super::handle::{Pending, Restart};
use super::keeper::{self, Keeping};
use super::status::Shared;
use crate::clock::Clock;
use crate::layout::Layout;
#[cfg(feature = "inspect")]
use {
    super::backend::LeaseError,
    super::protocol::{self, Readiness, Terms},
    crate::clock::units::millis,
};

/// A worker-id lease to build a generator with: the registry, the namespace,
/// and the terms. Pass it to [`Builder::lease`](crate::Builder::lease).
///
/// Every generator of a namespace must use the same layout and the same TTL
/// and skew allowance: the rule that fences a lost registry's ids relies on
/// them (see [A registry that loses its data](super#a-registry-that-loses-its-data)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use flakegen::{Builder, IdGenerator, lease::{Lease, MemoryRegistry}};
///
/// let lease = Lease::new(MemoryRegistry::new(), "orders")
///     .ttl(Duration::from_secs(5))
///     .renew_every(Duration::from_secs(1));
/// let generator = Builder::new().lease(lease).build_mutex()?;
/// assert!(generator.lease().is_some());
/// # Ok::<(), flakegen::Error>(())
/// ```
#[derive(Clone)]
#[must_use = "a lease does nothing until it is given to Builder::lease"]
pub struct Lease {
    pub(crate) registry: Arc<dyn Registry>,
    pub(crate) namespace: String,
    pub(crate) ttl: Duration,
    /// `None`: a third of the TTL.
    pub(crate) renew_every: Option<Duration>,
    pub(crate) skew: Duration,
    pub(crate) reacquire: bool,
    pub(crate) release_wait: Duration,
    pub(crate) wait_out_rollbacks: bool,
    /// `None`: a fifth of the TTL, at most `Lease::DEFAULT_TIMEOUT`.
    pub(crate) call_timeout: Option<Duration>,
}

/// After a failed renewal or acquisition, the lease's thread tries again
/// this fraction of the renewal period later: four tries fit in the time a
/// renewal would have had, and the fence (a TTL ahead) is still far.
const RETRIES_PER_RENEWAL: u32 = 4;

/// The soonest a retry comes, however short the renewal period: a registry
/// that refuses at once is not asked in a loop.
const MIN_RETRY: Duration = Duration::from_millis(10);

/// How long a lost lease's thread sleeps once it has said that the
/// generator refuses (with [`Lease::reacquire`] off): nothing is left to
/// do or say but wait for the generator to be dropped, which wakes it.
const QUIET_WHEN_LOST: Duration = Duration::from_secs(3600);

impl Lease {
    /// The default of [`Lease::ttl`]: 10 s.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(10);
    /// The default of [`Lease::skew`]: 2 s.
    pub const DEFAULT_SKEW: Duration = Duration::from_secs(2);

    /// The shortest TTL a lease accepts: 100 ms. Renewals must keep up with it on a busy
    /// machine: each must be confirmed within two thirds of the TTL, and it is a
    /// round trip to the registry made by a thread that can wake late. On
    /// loopback, with threads spinning beside it, the worst renewal and the
    /// worst wake-up call for half of this; over a network, measure your own
    /// with the repository's `integration/examples/lease_floor.rs`
    /// (`benches/README.md` has this project's run).
    pub const MIN_TTL: Duration = Duration::from_millis(100);
    /// The default of [`Lease::release_wait`]: 1 s.
    pub const DEFAULT_RELEASE_WAIT: Duration = Duration::from_secs(1);
    /// The longest one request on an open connection may take before it
    /// counts as unanswered, measured on the client, and the least a new
    /// connection's set-up is given: 3 s. A lease's calls on an open
    /// connection are bounded tighter ([`Lease::call_timeout`]); its new
    /// connections' set-ups, several round trips that a registry far away
    /// pays in full, may take the TTL for a build or a release, and the
    /// time left before the fence for a renewal. A set-up that runs out of
    /// time at a port where the registry answers is
    /// [`LeaseError::TooSlow`](super::LeaseError::TooSlow), not [`LeaseError::Unreachable`](super::LeaseError::Unreachable).
    pub const DEFAULT_TIMEOUT: Duration = super::backend::client::budget::DEFAULT_TIMEOUT;

    /// A lease from `registry` among the generators of `namespace`, with the
    /// default terms: a TTL of [`Lease::DEFAULT_TTL`], renewed every third of it,
    /// and a skew allowance of [`Lease::DEFAULT_SKEW`].
    pub fn new(registry: impl Registry, namespace: impl Into<String>) -> Self {
        Lease {
            registry: Arc::new(registry),
            namespace: namespace.into(),
            ttl: Lease::DEFAULT_TTL,
            renew_every: None,
            skew: Lease::DEFAULT_SKEW,
            reacquire: true,
            release_wait: Lease::DEFAULT_RELEASE_WAIT,
            wait_out_rollbacks: false,
            call_timeout: None,
        }
    }

    /// How long the registry keeps the id for this generator without a
    /// renewal, which is also how far its fence leads its clock. At least
    /// [`Lease::MIN_TTL`]. See [Choosing a TTL](super#choosing-a-ttl).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How often the lease is renewed: at most half the TTL. Default: a third.
    pub fn renew_every(mut self, every: Duration) -> Self {
        self.renew_every = Some(every);
        self
    }

    /// How far this host's clock may read ahead of the registry server's.
    /// A holder further ahead is refused. It matters for ids the registry
    /// has lost (see [A registry that loses its data](super#a-registry-that-loses-its-data)).
    pub fn skew(mut self, skew: Duration) -> Self {
        self.skew = skew;
        self
    }

    /// Whether the generator leases a worker id again by itself when its
    /// lease is lost (a registry restarted or lost its data, a failover
    /// dropped a renewal, another holder took the id after a pause): its
    /// old id if free, another otherwise, under the protocol's ordinary
    /// rules, as a new lease. The generator refuses meanwhile, as at its
    /// fence, and issues again once the new lease's IDs may start: a loss
    /// costs the service a pause of about the TTL and the skew allowance,
    /// no rebuild. Default: `true`.
    ///
    /// Off, a lost lease is final: the generator runs to its fence and
    /// refuses from then on, for a service that would rather fail over by
    /// itself. See [the lifecycle](super#the-lifecycle).
    pub fn reacquire(mut self, reacquire: bool) -> Self {
        self.reacquire = reacquire;
        self
    }

    /// How long dropping the generator waits for the registry to confirm
    /// that it gave the id back: a program that exits right after dropping
    /// it leaves the id free, its fence lowered to its last ID, not held for
    /// a TTL. A release takes one round trip; this bounds it when the
    /// registry is slow or gone. A drop on a tokio runtime's thread
    /// never waits: a service waits for its
    /// [`Release`](super::Release) with `wait_async` at shutdown. Zero: a
    /// drop never waits. Default: [`Lease::DEFAULT_RELEASE_WAIT`].
    pub fn release_wait(mut self, wait: Duration) -> Self {
        self.release_wait = wait;
        self
    }

    /// How long a renewal's call on a connection already open may wait for
    /// its answer before the connection is taken for dead and the renewal
    /// made again, at once, on a new one. Default: a fifth of the TTL, at
    /// most [`Lease::DEFAULT_TIMEOUT`] (3 s).
    ///
    /// The call is bounded tighter still by the time left before the fence:
    /// it gives up once half of that is spent (or this timeout, if sooner),
    /// so that the retry, on a new connection, has the other half. So a
    /// connection that dies without a word (a peer gone, a NAT entry
    /// expired) costs a retry, not a refusal, as long as the registry
    /// answers a new connection before the fence. The calls of acquisitions
    /// and releases, which no fence hurries, keep `Lease::DEFAULT_TIMEOUT` on an
    /// open connection, and the TTL (at least that) to open one: a slow or
    /// far registry costs them time, not a failure. A build whose open
    /// connection does not answer in that time leases again on a new one.
    ///
    /// It reaches flakegen's own registries, whose connections read the
    /// bound; a [`Registry`] of your own keeps its own timeouts, and a
    /// renewal through it is bounded by them alone.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }

    /// [`call_timeout`](Self::call_timeout) as it is in force: a fifth of
    /// the TTL unless set, at most [`Lease::DEFAULT_TIMEOUT`].
    pub(crate) fn call_bound(&self) -> Duration {
        self.call_timeout
            .unwrap_or(self.ttl / 5)
            .min(super::backend::client::budget::DEFAULT_TIMEOUT)
    }

    /// Whether every grant waits out the TTL and the skew allowance after the
    /// registry was read, whatever the id's record says. Default: `false`.
    ///
    /// Turn it on where the registry can be rolled back in place: a backup
    /// restored onto the same server (a disk snapshot rolled back, a
    /// PostgreSQL base backup started without `recovery.signal`), or an
    /// etcd snapshot restored under the same cluster token before the
    /// cluster's first leader change. Such a registry is consistent and
    /// old, and nothing in it can tell: its records show fences older than
    /// those their holders still issue below. With this on, a holder it
    /// forgot has stopped (its fence lies at most a TTL and the skew past
    /// its last renewal, which came before the read) before a new holder of
    /// its id issues. It costs every build and every heal that wait (the TTL
    /// and the skew: 12 s at the defaults), and nothing once a generator
    /// runs: renewals are unchanged. See [A registry that loses its
    /// data](super#a-registry-that-loses-its-data).
    pub fn wait_out_rollbacks(mut self, on: bool) -> Self {
        self.wait_out_rollbacks = on;
        self
    }

    /// The longest a build waits for a previous holder's fence that lies
    /// ahead of its clock, beyond the generator's `max_wait`: the TTL, plus
    /// the skew allowance, plus a second. That covers the fence of an id the
    /// registry lost (see [A registry that loses its data](super#a-registry-that-loses-its-data)),
    /// so a service started right after a registry restart comes up without
    /// a retry loop of its own. The lease is renewed meanwhile.
    pub fn start_wait(&self) -> Duration {
        self.ttl
            .saturating_add(self.skew)
            .saturating_add(Duration::from_secs(1))
    }

    /// Makes the namespace ready for builds that start at once: marks it
    /// if it has no marker, as its first build would, and says when a build
    /// takes a fresh id without waiting ([`Readiness::wait`]). Call it again
    /// once that time has passed to see it hold (a loss meanwhile writes a
    /// later marker). It takes nobody's word that the namespace is new, so
    /// it is safe whatever the registry's past: an emptied namespace's old
    /// holders have stopped before its marker has aged the TTL and the skew
    /// allowance. `flakegen leases init` is this call, waited out.
    ///
    /// Unlike a generator's, these registry calls run on the calling thread
    /// (two or three, each bounded as any registry call): call it from a
    /// tool or at install time, not on a request's path.
    ///
    /// # Errors
    ///
    /// The registry's errors, and an invalid namespace.
    ///
    /// # Examples
    ///
    /// ```
    /// use flakegen::lease::{Lease, MemoryRegistry};
    ///
    /// let lease = Lease::new(MemoryRegistry::new(), "orders");
    /// let readiness = lease.prepare()?;
    /// // A registry that lives in this process saw its namespaces begin.
    /// assert!(readiness.wait().is_zero());
    /// # Ok::<(), flakegen::lease::LeaseError>(())
    /// ```
    #[cfg(feature = "inspect")]
    pub fn prepare(&self) -> Result<Readiness, LeaseError> {
        check_namespace(&self.namespace)?;
        protocol::readiness(&*self.registry, &self.terms_for_tools())
    }

    /// Writes id 0's record of the namespace again, free (marking the
    /// namespace first, as a first build would): the write `flakegen leases
    /// check` makes to learn whether this host may write to the registry. A
    /// record a generator holds is left alone, and the fence written is
    /// where a build would start id 0: where its last holder left it, or,
    /// if the registry lost its data, past the loss by the TTL and the skew
    /// allowance, so that no build after it starts under a holder the loss
    /// hid. Returns whether it wrote: not over a live record, nor when
    /// another writer came between.
    ///
    /// # Errors
    ///
    /// The registry's errors (a missing permission among them), and an
    /// invalid namespace.
    ///
    /// # Examples
    ///
    /// ```
    /// use flakegen::lease::{Lease, MemoryRegistry};
    ///
    /// let lease = Lease::new(MemoryRegistry::new(), "permissions test");
    /// assert!(lease.test_write()?);
    /// # Ok::<(), flakegen::lease::LeaseError>(())
    /// ```
    #[cfg(feature = "inspect")]
    pub fn test_write(&self) -> Result<bool, LeaseError> {
        check_namespace(&self.namespace)?;
        protocol::test_write(&*self.registry, &self.terms_for_tools())
    }

    /// The terms a tool's call reads the namespace under: one id.
    #[cfg(feature = "inspect")]
    fn terms_for_tools(&self) -> Terms<'_> {
        Terms {
            namespace: &self.namespace,
            workers: 1,
            ttl_millis: millis(self.ttl),
            skew_millis: millis(self.skew),
            wait_out_rollbacks: false,
        }
    }

    /// Checks the terms as a generator of `layout` with no `max_lead` would:
    /// what a tool that reports on terms (`flakegen leases check`) asks
    /// before it says anything of them.
    ///
    /// # Errors
    ///
    /// The first term that cannot work, and what to change.
    pub fn validate(&self, layout: &Layout) -> Result<(), InvalidTerms> {
        match self.check(layout, Duration::ZERO) {
            Err(Refused::Invalid(terms)) => Err(terms),
            _ => Ok(()),
        }
    }

    /// How often the lease's thread renews: as set, or a third of the TTL.
    pub(crate) fn renewal_interval(&self) -> Duration {
        self.renew_every.unwrap_or(self.ttl / 3)
    }

    /// Checks the terms against the layout and the generator's lead; returns
    /// the renewal interval.
    pub(crate) fn check(&self, layout: &Layout, max_lead: Duration) -> Result<Duration, Refused> {
        let ttl = self.ttl;
        if self.skew.is_zero() {
            return Err(Refused::Invalid(InvalidTerms::NoSkew));
        }
        let least = Lease::MIN_TTL.max(layout.unit() * 2);
        if ttl < least {
            return Err(Refused::Invalid(InvalidTerms::TtlTooShort { ttl, least }));
        }
        let renew_every = self.renewal_interval();
        if renew_every.is_zero() || renew_every > ttl / 2 {
            return Err(Refused::Invalid(InvalidTerms::RenewalTooSlow {
                renew_every,
                ttl,
            }));
        }
        if max_lead + renew_every >= ttl {
            return Err(Refused::Invalid(InvalidTerms::LeadReachesTtl {
                max_lead,
                renew_every,
                ttl,
            }));
        }
        check_namespace(&self.namespace).map_err(Refused::Lease)?;
        Ok(renew_every)
    }

    /// Checks the terms and starts the lease's thread, which acquires a
    /// worker id for a generator of `layout` that reads `clock`, then keeps
    /// it. Nothing here touches the registry.
    pub(crate) fn start(
        self,
        layout: Layout,
        clock: Arc<dyn Clock>,
        max_lead: Duration,
    ) -> Result<Pending, Refused> {
        let renew_every = self.check(&layout, max_lead)?;
        let restart = self.restart(layout, Arc::clone(&clock), max_lead);
        let start_wait = self.start_wait();
        let call_timeout = self.call_bound();
        let shared = Arc::new(Shared::new(
            self.namespace,
            (self.ttl, self.release_wait),
            layout,
            clock,
        ));
        let keeping = Keeping {
            registry: self.registry,
            ttl: self.ttl,
            skew: self.skew,
            renew_every,
            retry_every: (renew_every / RETRIES_PER_RENEWAL).max(MIN_RETRY),
            quiet_when_lost: QUIET_WHEN_LOST,
            reacquire: self.reacquire,
            wait_out_rollbacks: self.wait_out_rollbacks,
            call_timeout,
        };
        let on_thread = Arc::clone(&shared);
        // Events go where the builder's events go, as with a task it spawned.
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        thread::Builder::new()
            .name("flakegen-lease".into())
            .spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || keeper::run(keeping, &on_thread));
            })
            .map_err(Refused::Spawn)?;
        Ok(Pending::new(shared, start_wait, self.release_wait, restart))
    }

    /// How a restored process leases again (`LeaseHandle::restart`): these
    /// terms, on this registry reopened.
    fn restart(&self, layout: Layout, clock: Arc<dyn Clock>, max_lead: Duration) -> Restart {
        let lease = self.clone();
        Box::new(move || {
            let Some(registry) = lease.registry.reopen() else {
                return Ok(None);
            };
            let again = Lease {
                registry,
                ..lease.clone()
            };
            again.start(layout, Arc::clone(&clock), max_lead).map(Some)
        })
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("namespace", &self.namespace)
            .field("ttl", &self.ttl)
            .field("renew_every", &self.renew_every)
            .field("skew", &self.skew)
            .field("reacquire", &self.reacquire)
            .field("release_wait", &self.release_wait)
            .field("wait_out_rollbacks", &self.wait_out_rollbacks)
            .field("call_timeout", &self.call_timeout)
            .finish_non_exhaustive()
    }
}
