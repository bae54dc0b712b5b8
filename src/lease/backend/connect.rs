//! The registries flakegen knows, written once: what [`connect`] opens,
//! what the `flakegen` command's help names, and what the crate guide and
//! the README list (a test holds them to this table). A new registry is its
//! folder beside this file and a row here.

use std::sync::Arc;

use super::{
    Expect, LeaseError, MarkerCheck, NewRecord, ReadCost, ReadRequest, Registry, Snapshot, TimeBase,
};

/// One kind of registry flakegen knows: [`REGISTRIES`] lists them all,
/// built in or not.
#[derive(Debug)]
#[non_exhaustive]
// Its prose is for the operator's side (the `inspect` feature); leasing
// reads only the schemes and the opener.
#[cfg_attr(not(feature = "inspect"), allow(dead_code, unreachable_pub))]
pub struct RegistryKind {
    /// The store, as its operators name it.
    pub name: &'static str,
    /// The registry's type in [`flakegen::lease`](crate::lease).
    pub registry: &'static str,
    /// The crate feature that builds it in.
    pub feature: &'static str,
    /// The URL schemes it answers to, its own first; a scheme with TLS
    /// second where it has one.
    pub schemes: &'static [&'static str],
    /// Its URL's form.
    pub url: &'static str,
    /// What it detects as a loss: generators wait the TTL and the skew,
    /// then heal.
    pub detects: &'static str,
    /// What it cannot tell, and what covers it.
    pub cannot_tell: &'static str,
    /// What each step costs in round trips: `tests/round_trips.rs` holds
    /// every registry to these, and `flakegen leases check` reckons a
    /// registry's distance with them.
    pub round_trips: RoundTrips,
    /// What a read costs the server, as the registry declares it
    /// ([`Registry::read_cost`]): the operator's figure for a fleet that
    /// builds and heals at once. `tests/round_trips.rs` holds each
    /// registry to its row.
    pub read_cost: ReadCost,
    open: Option<Opener>,
}

/// What a registry's steps cost in round trips to its server, at most,
/// counted by a proxy in front of it: a TCP handshake is not one, a TLS or
/// authentication exchange is, and requests a client pipelines count once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(not(feature = "inspect"), allow(dead_code, unreachable_pub))]
pub struct RoundTrips {
    /// A build on a new connection: the connection's set-up, then the build.
    pub new_build: u32,
    /// A build on a connection already open.
    pub warm_build: u32,
    /// A renewal on an open connection.
    pub renewal: u32,
    /// A renewal whose connection was lost: a new connection's set-up,
    /// then the renewal.
    pub reconnecting_renewal: u32,
    /// A release on an open connection.
    pub release: u32,
    /// A read ([`Registry::read`]) on an open connection.
    pub read: u32,
}

/// What opens a registry of one kind from its URL.
type Opener = fn(&str) -> Result<Arc<dyn Registry>, LeaseError>;

#[cfg_attr(not(feature = "inspect"), allow(dead_code, unreachable_pub))]
impl RegistryKind {
    /// Whether this build has it (its feature is on).
    pub const fn built_in(&self) -> bool {
        self.open.is_some()
    }

    /// Every registry's URL schemes, as a sentence: `mysql:// (or
    /// mariadb://), postgres:// …`. The `flakegen` command's help and
    /// [`connect`]'s errors say it.
    pub fn schemes_said() -> String {
        let each: Vec<String> = REGISTRIES
            .iter()
            .map(|kind| {
                let others: Vec<String> = kind.schemes[1..]
                    .iter()
                    .map(|s| format!("{s}://"))
                    .collect();
                if others.is_empty() {
                    format!("{}://", kind.schemes[0])
                } else {
                    format!("{}:// (or {})", kind.schemes[0], others.join(", "))
                }
            })
            .collect();
        each.join(", ")
    }
}

/// The opener of a registry type, where its feature is on.
macro_rules! opener {
    ($feature:literal, $registry:ident :: $ty:ident) => {{
        #[cfg(feature = $feature)]
        let open: Option<Opener> = Some(|url| Ok(Arc::new(super::$registry::$ty::new(url)?)));
        #[cfg(not(feature = $feature))]
        let open: Option<Opener> = None;
        open
    }};
}

/// Every registry flakegen knows, in the order the docs list them.
#[cfg_attr(not(feature = "inspect"), allow(unreachable_pub))]
pub const REGISTRIES: &[RegistryKind] = &[
    RegistryKind {
        name: "MySQL or MariaDB",
        registry: "MysqlRegistry",
        feature: "mysql",
        schemes: &["mysql", "mariadb"],
        url: "mysql://user:password@host:port/database",
        detects: "a failover to a replica, or a switch to the other side of a master-master \
                  pair (another server); TRUNCATE, rows deleted, a dropped table, both tables \
                  dropped; a logical restore; on MariaDB, a physical restore (its files are \
                  new)",
        cannot_tell: "a disk snapshot rolled back (MariaDB), a physical backup restored onto \
                      the same host and port (MySQL 8) (Lease::wait_out_rollbacks covers \
                      them); a crash with \
                      innodb_flush_log_at_trx_commit = 0. Two masters that both take writes \
                      are refused",
        round_trips: RoundTrips {
            new_build: 9,
            warm_build: 3,
            renewal: 1,
            reconnecting_renewal: 8,
            release: 1,
            read: 2,
        },
        read_cost: ReadCost::Bounded,
        open: opener!("mysql", mysql::MysqlRegistry),
    },
    RegistryKind {
        name: "PostgreSQL",
        registry: "PostgresRegistry",
        feature: "postgres",
        schemes: &["postgres", "postgresql"],
        url: "postgres://user:password@host:port/database",
        detects: "a failover (a new timeline); a restore to a point in time, into another \
                  cluster, or of the lease table from a dump; TRUNCATE, rows deleted, a \
                  dropped table, both tables dropped",
        cannot_tell: "a physical backup started without recovery.signal, which keeps its \
                      timeline (Lease::wait_out_rollbacks covers it); a machine's crash with \
                      fsync = off",
        round_trips: RoundTrips {
            new_build: 7,
            warm_build: 2,
            renewal: 1,
            reconnecting_renewal: 6,
            release: 1,
            read: 1,
        },
        read_cost: ReadCost::Bounded,
        open: opener!("postgres", postgres::PostgresRegistry),
    },
    RegistryKind {
        name: "Redis",
        registry: "RedisRegistry",
        feature: "redis",
        schemes: &["redis", "rediss"],
        url: "redis://:password@host:port/db",
        detects: "every restart of the server, whatever its persistence; a failover \
                  (Sentinel, REPLICAOF NO ONE); FLUSHALL, FLUSHDB, keys deleted",
        cannot_tell: "keys restored from an old dump into the same server process \
                      (Lease::wait_out_rollbacks covers it). Eviction (an allkeys-* policy) \
                      is refused",
        round_trips: RoundTrips {
            new_build: 3,
            warm_build: 2,
            renewal: 1,
            reconnecting_renewal: 2,
            release: 1,
            read: 1,
        },
        read_cost: ReadCost::Bounded,
        open: opener!("redis", redis::RedisRegistry),
    },
    RegistryKind {
        name: "etcd",
        registry: "EtcdRegistry",
        feature: "etcd",
        schemes: &["etcd", "etcds"],
        url: "etcd://user:password@host:port,host:port/prefix",
        detects: "a restore from a snapshot (a new cluster id, or raft's term below the \
                  highest the prefix saw); keys deleted",
        cannot_tell: "a snapshot taken before the cluster's first leader change, restored \
                      under the same token (Lease::wait_out_rollbacks covers it). No server \
                      clock: every host's clock must keep within the skew allowance of the \
                      others, unchecked",
        round_trips: RoundTrips {
            new_build: 5,
            warm_build: 2,
            renewal: 1,
            reconnecting_renewal: 1,
            release: 1,
            read: 1,
        },
        read_cost: ReadCost::Bounded,
        open: opener!("etcd", etcd::EtcdRegistry),
    },
    RegistryKind {
        name: "Kubernetes",
        registry: "KubernetesRegistry",
        feature: "kubernetes",
        schemes: &["kube"],
        url: "kube:///prefix in a pod; kube://host:port/namespace/prefix?token_file=…&ca_file=…",
        detects: "Leases deleted (a record, the marker, a namespace's, the Kubernetes \
                  namespace); an etcd restore under the API server that a running generator \
                  saw past (its Lease's resourceVersion went down)",
        cannot_tell: "an etcd restore that no running generator saw past (restore with the API \
                      servers stopped for the TTL and the skew, or Lease::wait_out_rollbacks). \
                      No server clock: every host's clock must keep within the skew allowance \
                      of the others, checked only by flakegen leases check",
        round_trips: RoundTrips {
            new_build: 4,
            warm_build: 3,
            renewal: 1,
            reconnecting_renewal: 2,
            release: 1,
            read: 1,
        },
        read_cost: ReadCost::EveryRecord,
        open: opener!("kubernetes", kubernetes::KubernetesRegistry),
    },
];

/// Connects to the registry a URL names, as the table of registries has it:
/// `mysql://` (MySQL or MariaDB) with the `mysql` feature, `postgres://`
/// (or `postgresql://`) with the `postgres` feature, `redis://` (or
/// `rediss://`, with TLS) with the `redis` feature,
/// `etcd://host:port,host:port/prefix` (or `etcds://`, with TLS) with the
/// `etcd` feature, `kube:///prefix` in a pod (or
/// `kube://host:port/namespace/prefix?token_file=…&ca_file=…`) with the
/// `kubernetes` feature. TLS: `sslmode=` and `sslrootcert=<CA file>` in a
/// PostgreSQL URL, as libpq takes them; `ssl-mode=` and `ssl-ca=<CA file>`
/// in a MySQL URL, as MySQL's clients take them; `rediss://`, and
/// `sslrootcert=` too, for Redis and etcd. Without a CA file, the system's
/// CAs are trusted (the Mozilla roots, for MySQL).
///
/// Nothing is sent until the first acquisition.
///
/// # Errors
///
/// [`LeaseError::UnsupportedUrl`] for another scheme,
/// [`LeaseError::FeatureOff`] for one whose feature is off, and
/// [`LeaseError::InvalidUrl`] for a URL the client cannot parse (its
/// message never shows a password).
pub fn connect(url: &str) -> Result<Arc<dyn Registry>, LeaseError> {
    // Schemes are case-insensitive (RFC 3986, section 3.1).
    let scheme = url
        .split_once("://")
        .map_or("", |(scheme, _)| scheme)
        .to_ascii_lowercase();
    let Some(kind) = REGISTRIES
        .iter()
        .find(|k| k.schemes.contains(&scheme.as_str()))
    else {
        let known = RegistryKind::schemes_said();
        return Err(LeaseError::UnsupportedUrl { scheme, known });
    };
    let Some(open) = kind.open else {
        return Err(LeaseError::FeatureOff {
            scheme,
            feature: kind.feature,
        });
    };
    super::client::url::check_shape(url)?;
    let registry = open(url)?;
    Ok(Arc::new(Reopening {
        url: url.to_owned(),
        registry,
    }))
}

/// A registry [`connect`] opened, which a process restored from a
/// snapshot opens again from its URL ([`Registry::reopen`]): nothing of
/// the first, whose sockets and runtime every copy shares, is used again.
struct Reopening {
    url: String,
    registry: Arc<dyn Registry>,
}

#[deny(clippy::missing_trait_methods)]
impl Registry for Reopening {
    fn read(&self, namespace: &str, request: &ReadRequest) -> Result<Snapshot, LeaseError> {
        self.registry.read(namespace, request)
    }

    fn mark(&self, namespace: &str) -> Result<u64, LeaseError> {
        self.registry.mark(namespace)
    }

    fn swap(
        &self,
        namespace: &str,
        worker: u64,
        expect: Expect,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        self.registry.swap(namespace, worker, expect, record)
    }

    fn time_base(&self) -> TimeBase {
        self.registry.time_base()
    }

    fn marker_check(&self) -> MarkerCheck {
        self.registry.marker_check()
    }

    fn read_cost(&self) -> ReadCost {
        self.registry.read_cost()
    }

    #[cfg(feature = "inspect")]
    fn inspect(&self) -> Option<&dyn super::Inspect> {
        self.registry.inspect()
    }

    fn reopen(&self) -> Option<Arc<dyn Registry>> {
        // Checked when it was first opened: it connects as it did then.
        connect(&self.url).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scheme_is_one_registrys() {
        let mut all: Vec<&str> = REGISTRIES
            .iter()
            .flat_map(|k| k.schemes.iter().copied())
            .collect();
        let count = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), count, "a scheme is two registries'");
        let said = RegistryKind::schemes_said();
        for kind in REGISTRIES {
            for scheme in kind.schemes {
                assert!(said.contains(&format!("{scheme}://")), "{said}");
            }
        }
    }

    #[test]
    fn a_registry_whose_feature_is_off_says_which_feature() {
        for kind in REGISTRIES.iter().filter(|k| !k.built_in()) {
            let url = format!("{}://u:p@h:1/x", kind.schemes[0]);
            match connect(&url) {
                Err(LeaseError::FeatureOff { feature, .. }) => assert_eq!(feature, kind.feature),
                Err(other) => panic!("{url}: {other:?}"),
                Ok(_) => panic!("{url}: opened without its feature"),
            }
        }
    }

    /// Text as a reader sees it: words, whatever the line breaks and the
    /// code marks.
    fn words(text: &str) -> String {
        text.replace(['`', '/'], "")
            .replace("\n//!", " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The README's table of registries says of each what the table here
    /// says, word for word, and lists no other; the crate's guide names
    /// every registry's feature.
    #[test]
    fn the_readme_and_the_guide_list_the_registries_of_the_table() {
        let readme = include_str!("../../../README.md");
        let rows: Vec<&str> = readme
            .lines()
            .filter(|l| l.starts_with("| `") && l.contains("Registry`"))
            .collect();
        for kind in REGISTRIES {
            let row = rows
                .iter()
                .find(|r| r.starts_with(&format!("| `{}` (`{}`)", kind.registry, kind.feature)))
                .unwrap_or_else(|| panic!("the README's table has no row for {}", kind.registry));
            let row = words(row);
            for (what, text) in [("detects", kind.detects), ("cannot tell", kind.cannot_tell)] {
                assert!(
                    row.contains(&words(text)),
                    "the README's row for {} says otherwise of what it {what}: {text}",
                    kind.registry
                );
            }
        }
        // The table's, and the one for tests.
        assert_eq!(rows.len(), REGISTRIES.len() + 1, "{rows:#?}");
        let guide = include_str!("../../lib.rs");
        let section = &guide[guide.find("# Worker ids from a registry").unwrap()..];
        let section = words(&section[..section.find("```").unwrap()]);
        for kind in REGISTRIES {
            assert!(
                section.contains(kind.feature) && section.contains(&words(kind.name)),
                "the crate's guide leaves out {} (feature {})",
                kind.name,
                kind.feature
            );
        }
    }

    /// The lease docs' table of round trips says what the table here says.
    #[test]
    fn the_lease_docs_give_each_registrys_round_trips() {
        let docs = include_str!("../mod.rs");
        for kind in REGISTRIES {
            let t = kind.round_trips;
            let row = format!(
                "//! | {} | {} | {} | {} | {} | {} | {} |",
                kind.name,
                t.new_build,
                t.warm_build,
                t.renewal,
                t.reconnecting_renewal,
                t.release,
                t.read
            );
            assert!(docs.contains(&row), "the lease docs lack the row {row}");
        }
    }

    /// Every registry of the table lives in a folder named after its
    /// feature, with the same rooms.
    #[test]
    fn every_registry_is_a_folder_with_the_same_rooms() {
        let backend = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lease/backend");
        for kind in REGISTRIES {
            for room in ["mod.rs", "url.rs", "errors.rs", "inspect.rs"] {
                let file = backend.join(kind.feature).join(room);
                assert!(file.is_file(), "{}: no {}", kind.registry, file.display());
            }
        }
    }
}
