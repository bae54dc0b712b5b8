//! Guides: running flakegen where it runs. Each page is documentation
//! only.

/// # On Kubernetes
///
/// Every generator needs a worker id no other running generator of its
/// layout has ([why](crate#one-worker-id-one-generator)). Kubernetes
/// answers that one way for StatefulSets and not at all for Deployments.
///
/// ## A StatefulSet: its ordinal
///
/// A StatefulSet's pods are named `<set>-0`, `<set>-1`, … and keep their
/// names across restarts and rescheduling. The ordinal is the simplest
/// worker id there is: [`worker::from_ordinal`](crate::worker::from_ordinal)
/// reads it (from `HOSTNAME`, which Kubernetes sets to the pod's name),
/// and refuses a name with no ordinal or an ordinal the layout cannot
/// hold; `flakegen new --worker-from ordinal` does the same.
///
/// ```no_run
/// use flakegen::{Builder, IdGenerator, Layout, worker};
///
/// let layout = Layout::TWITTER; // 1,024 worker ids: replicas 0 to 1023
/// let ids = Builder::new().layout(layout).worker(worker::from_ordinal(&layout)?).build_atomic()?;
/// let id = ids.next_id()?;
/// # let _ = id;
/// # Ok::<(), flakegen::Error>(())
/// ```
///
/// Since Kubernetes 1.28 the ordinal is also the pod's label
/// `apps.kubernetes.io/pod-index`, which the downward API can put in
/// `FLAKEGEN_WORKER_ID` ([`worker::from_env`](crate::worker::from_env)):
///
/// ```yaml
/// env:
///   - name: FLAKEGEN_WORKER_ID
///     valueFrom:
///       fieldRef:
///         fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
/// ```
///
/// What keeps ordinals unique is the StatefulSet's own guarantee: at most
/// one pod per ordinal, even during a rolling update (the old pod is gone
/// before its successor starts). Three things break it, and each can issue
/// IDs twice:
///
/// - `kubectl delete pod --force` (or `--grace-period=0`) on a node that
///   is cut off: the old pod may still run while its successor starts.
///   Kubernetes' documentation warns against it for the same reason.
/// - Two StatefulSets (or two clusters) minting IDs of one layout: each
///   has an `orders-0`. Give each its own layout, or its own range of
///   worker ids (`FLAKEGEN_WORKER_ID` from an offset), or lease.
/// - More replicas than the layout has worker ids: `orders-1024` is
///   refused with Twitter's layout, at start-up.
///
/// ## A Deployment, or anything that autoscales: lease
///
/// A Deployment's pods are named `<set>-<hash>-<random>`, its replicas come
/// and go with the autoscaler, and two can run at once with nothing to
/// tell them apart. Lease their worker ids ([`lease`](crate::lease)): from
/// the cluster itself, or from a registry you already run (PostgreSQL,
/// MySQL or MariaDB, Redis, etcd). A pod leases an id at start-up, renews
/// it while it runs, and gives it back when it stops; one that vanishes
/// loses it after the TTL. Jobs, CronJobs and serverless functions are the
/// same case.
///
/// ## Leases from the cluster itself: `KubernetesRegistry`
///
/// With the `kubernetes` feature, a pod leases its worker id as a `Lease`
/// object (`coordination.k8s.io/v1`) in its own namespace, through the API
/// server, with no database and no configuration but the URL
/// `kube:///PREFIX`: the service account's token (read again every minute,
/// and at once when refused, so the kubelet's rotation is taken up), its
/// CA, its namespace, and the API server at `KUBERNETES_SERVICE_HOST`.
/// Every write is a compare-and-set on the Lease, and the fences keep a
/// new holder's IDs above the last one's, as on every registry;
/// `kubectl get leases` shows who holds which id.
///
/// ```no_run
/// # #[cfg(feature = "kubernetes")]
/// # fn main() -> Result<(), flakegen::Error> {
/// use std::time::Duration;
/// use flakegen::{Builder, IdGenerator, lease::{KubernetesRegistry, Lease}};
///
/// let registry = KubernetesRegistry::new("kube:///flakegen")?;
/// let lease = Lease::new(registry, "orders").ttl(Duration::from_secs(10));
/// let ids = Builder::new().lease(lease).build_atomic()?;
/// # let _ = ids.next_id()?;
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "kubernetes"))]
/// # fn main() {}
/// ```
///
/// The rights it needs, in its namespace only, nothing cluster-scoped
/// (`flakegen leases check kube:///flakegen`, run in the pod, asks the API
/// server which of these verbs the token has, and needs no more):
///
/// ```yaml
/// apiVersion: v1
/// kind: ServiceAccount
/// metadata: { name: orders, namespace: shop }
/// ---
/// apiVersion: rbac.authorization.k8s.io/v1
/// kind: Role
/// metadata: { name: flakegen, namespace: shop }
/// rules:
///   - apiGroups: [coordination.k8s.io]
///     resources: [leases]
///     verbs: [get, list, create, update, delete]
/// ---
/// apiVersion: rbac.authorization.k8s.io/v1
/// kind: RoleBinding
/// metadata: { name: orders-flakegen, namespace: shop }
/// roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: flakegen }
/// subjects:
///   - { kind: ServiceAccount, name: orders, namespace: shop }
/// ---
/// apiVersion: apps/v1
/// kind: Deployment
/// metadata: { name: orders, namespace: shop }
/// spec:
///   replicas: 3
///   selector: { matchLabels: { app: orders } }
///   template:
///     metadata: { labels: { app: orders } }
///     spec:
///       serviceAccountName: orders
///       # Time for the generator to give its id back when the pod stops.
///       terminationGracePeriodSeconds: 30
///       containers:
///         # Its code leases from kube:///flakegen, as above.
///         - { name: orders, image: registry.example/orders:1.0 }
/// ```
///
/// - **The TTL.** A renewal is a write to the cluster's own etcd: at the
///   default TTL of 10 s, renewed every third of it, each pod writes 0.3
///   Leases a second (100 pods, 30 a second). Keep the TTL at 10 s or more,
///   as the kubelet's node leases do (40 s); a longer one also rides out an
///   API server that throttles (429) under load.
/// - **A build lists every Lease.** A build, and a heal, reads the Leases
///   in one LIST ([`ReadCost::EveryRecord`](crate::lease::backend::ReadCost)):
///   the API server reads every Lease of the Kubernetes namespace from etcd,
///   those of flakegen's other namespaces too, and keeps the ones labelled
///   for this one. N pods starting at once make N such reads of N Leases:
///   1,000 pods rolled out at once read a million Lease objects, where
///   their renewals write 300 a second at the default TTL. Keep flakegen's
///   Leases in a Kubernetes namespace of their own, and roll large fleets
///   out in waves (`maxSurge`); the benchmarks' README has a build's time
///   at 1, 100 and 1,000 holders, beside the other registries'.
/// - **Clocks.** The API server shows no clock but its `Date` header, to
///   the second, so expiries are judged by the pods' clocks, which must
///   keep within the skew allowance of each other (NTP does);
///   `flakegen leases check` compares this host's with the server's.
/// - **A restore of the cluster's etcd.** A pod that saw a later version of
///   its Lease sees the restore (the same uid, a lower `resourceVersion`)
///   and the namespace's ids wait the TTL and the skew. A restore that no
///   running pod saw past is invisible: follow Kubernetes' own procedure,
///   which stops every API server first, and keep them stopped for the TTL
///   and the skew, or turn on
///   [`Lease::wait_out_rollbacks`](crate::lease::Lease::wait_out_rollbacks).
/// - **Ordinals instead.** A StatefulSet whose pods are never force-deleted
///   needs no lease at all: its ordinal is unique by Kubernetes' own
///   guarantee, costs no write, and survives an API server that is down.
///
/// ## Not the cluster's own etcd, directly
///
/// Kubernetes keeps its state in an etcd cluster, and flakegen speaks etcd,
/// but an application should not lease from that one with `EtcdRegistry`
/// (the API server's Leases, above, are the way in): whoever can write
/// to it can write every Secret and every pod spec of the cluster (it is
/// the control plane's store, with no tenant boundary), its load and its
/// upgrades belong to the control plane, and managed clusters (EKS, GKE,
/// AKS) do not expose it at all. Run an etcd of your own for the
/// application, or use the database the application already has.
pub mod kubernetes {}

/// # Serverless, forks and snapshots
///
/// "No ID twice" rests on one process owning its generator: its worker id,
/// its lease and its last ID. Platforms copy processes, freeze them and end
/// them without a word. What flakegen does in each case, and what is left
/// to you:
///
/// | the process is | flakegen | you |
/// | --- | --- | --- |
/// | forked | sees it; the child's copies refuse ([`IssueError::Copied`](crate::IssueError::Copied)) | build generators after the fork, or let [`next_id`](crate::next_id) lease its own |
/// | frozen, then thawed | renews at once; a blocking call waits for it within `max_wait` | nothing |
/// | restored from a snapshot | cannot see it | call [`after_restore`](crate::IdGenerator::after_restore) in the restore hook |
/// | ended (SIGKILL, an environment reclaimed) | its lease expires after the TTL | size the id space for the TTL's churn |
///
/// ## Forks
///
/// A forked child holds a copy of every generator its parent built. On
/// Unix flakegen sees the fork (a `pthread_atfork` handler bumps a count
/// that each call compares, with no system call), and in the child those
/// copies refuse every call with `IssueError::Copied`, at once: they touch
/// nothing of the parent's (its lease, its registry connections, its
/// threads, which the child does not have, and its locks, which the child
/// would wait on for ever), and dropping them gives nothing back. The
/// parent goes on as before. A registry opened before the fork is the
/// parent's too (its sockets, its runtime): in the child every call on it
/// is refused ([`LeaseError::Copied`](crate::lease::LeaseError::Copied))
/// before anything is sent, so connect again in the child.
///
/// A pre-forking server (a master that forks its workers) builds each
/// worker's generator after the fork, in the worker, with a worker id or a
/// lease of its own. [`next_id`](crate::next_id) does it by itself when it
/// was set up from `FLAKEGEN_LEASE_URL`: a child's first call leases an id
/// of the child's own, on a connection of its own, and the child's exit
/// gives it back. One set up from `FLAKEGEN_WORKER_ID` or with
/// [`global::set_up`](crate::global::set_up) refuses in the child.
///
/// ## Frozen processes: Lambda between invocations, Cloud Run, a laptop asleep
///
/// A frozen process's lease runs out while it sleeps. Thawed, its lease's
/// thread renews at once, and a blocking call that meets the fence waits
/// for that renewal, as it waits for the clock, within
/// [`Builder::max_wait`](crate::Builder::max_wait) (a second by default):
/// the first ID after an idle gap costs one round trip to the registry,
/// not an error. If another process took the id meanwhile, the generator
/// leases another one and issues under it; the fences keep the two apart.
/// The `try_` calls never wait: they refuse at once with
/// [`IssueError::LeaseLost`](crate::IssueError::LeaseLost).
///
/// AWS Lambda freezes an environment between invocations and reclaims it
/// later, in general without the process's exit handlers: its lease
/// expires after the TTL. Cloud Run throttles an instance's CPU between requests (unless CPU
/// is always allocated), which delays renewals the same way, and sends
/// SIGTERM ten seconds before it stops one: shut the generator down there
/// ([`IdGenerator::shutdown`](crate::IdGenerator::shutdown)) to give the id
/// back at once. A Fargate task is an ordinary container: the same, within
/// its stop timeout.
///
/// ## Snapshots: Lambda SnapStart, CRaC, CRIU, a cloned VM
///
/// A snapshot restored many times is many processes with one memory: the
/// same lease, the same holder token, the same last ID. Nothing in the
/// process changes when it is restored, so flakegen cannot tell; every
/// platform that restores offers a hook to run first. Call
/// [`IdGenerator::after_restore`](crate::IdGenerator::after_restore) there
/// on each generator, or [`global::after_restore`](crate::global::after_restore)
/// for [`next_id`](crate::next_id)'s:
///
/// - a leased generator stops issuing under the snapshot's lease at once,
///   leases again as a new holder on connections of its own (a registry of
///   [`lease::connect`](crate::lease::connect) reconnects to its URL),
///   leaves the snapshot's lease to expire without writing to it (another
///   copy may still issue below its fence), and issues under the new lease;
/// - a generator given its worker id refuses from then on: that id is every
///   copy's. Build a new one with an id of the copy's own.
///
/// On Lambda SnapStart the hooks are the runtime's: in Python,
/// `snapshot_restore_py.register_after_restore`; in Java, a CRaC
/// `Resource`'s `afterRestore`; in .NET, `SnapshotRestore.RegisterAfterRestore`;
/// a custom runtime implements the restore step of the Runtime API itself.
/// Lambda gives the hooks ten seconds: a new lease takes a free id at once
/// unless every free id is fenced ahead, so keep the namespace ready
/// (`flakegen leases init` at deploy) and its ids more than the copies.
/// Simpler still: build nothing that issues before the snapshot, and the
/// snapshot holds no generator to copy (a generator built lazily, in the
/// first invocation; `next_id` set up from the environment by its first
/// call).
///
/// ## Short jobs: CronJobs, CLI runs, batch tasks
///
/// A job that leases holds its id for its run: the build acquires it (a
/// few round trips), and the exit gives it back (a dropped generator, or
/// `next_id`'s exit handler), so the next run takes it at once. The first
/// build in a namespace waits the TTL and the skew allowance (the registry
/// cannot tell a new namespace from one that lost its data): run
/// `flakegen leases init "$URL" --namespace jobs` once, at deploy, and no
/// run pays it. A job killed before it exits keeps its id until the TTL
/// passes; count such runs in the id space.
///
/// ## What flakegen cannot see
///
/// - A copy whose restore hook never runs: a VM or container snapshot
///   cloned by hand, a CRIU restore without a script, a platform without
///   hooks. Until their lease's fence, such copies issue the same IDs;
///   then all but one lose the lease and lease again. Without a lease,
///   they issue the same IDs for ever. Restore only with the hook.
/// - A copy made without `fork`: `clone` called directly, which runs no
///   fork handlers. (`vfork` and `posix_spawn` run a new program, which
///   starts afresh.)
/// - Off Unix there is no `fork`: only a snapshot copies a process.
pub mod copies {}
