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
/// tell them apart. Lease their worker ids from a registry you already run
/// ([`lease`](crate::lease)): PostgreSQL, MySQL or MariaDB, Redis, or etcd.
/// A pod leases an id at start-up, renews it while it runs, and gives it
/// back when it stops; one that vanishes loses it after the TTL. Jobs,
/// CronJobs and serverless functions are the same case.
///
/// ## Not the cluster's own etcd
///
/// Kubernetes keeps its state in an etcd cluster, and flakegen speaks etcd,
/// but an application should not lease from that one: whoever can write
/// to it can write every Secret and every pod spec of the cluster (it is
/// the control plane's store, with no tenant boundary), its load and its
/// upgrades belong to the control plane, and managed clusters (EKS, GKE,
/// AKS) do not expose it at all. Run an etcd of your own for the
/// application, or use the database the application already has.
pub mod kubernetes {}
