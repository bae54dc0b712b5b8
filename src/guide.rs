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
