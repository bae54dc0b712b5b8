//! Worker ids from where deployments keep them.
//!
//! A worker id must be unique among the generators that run at the same time
//! with the same layout ([why](crate#one-worker-id-one-generator)). These
//! functions read it from the usual places and check it against a layout, so a
//! misconfiguration is an error at start-up rather than duplicates later:
//!
//! - [`from_env`] / [`from_env_var`]: a number the deployment assigns
//!   (`FLAKEGEN_WORKER_ID=7`). The most explicit, and the safest.
//! - [`from_ordinal`] / [`from_pod_name`]: the ordinal of a Kubernetes
//!   StatefulSet pod (`web-7` is 7), unique within the set by construction.
//! - [`from_private_ipv4`] / [`from_ipv4`]: the host part of the machine's
//!   private IPv4 address, Sonyflake's default. See below for when that is safe.
//!
//! # When the host part of an address is unique
//!
//! Addresses in one subnet differ only in their host part, so the host part
//! is unique among the hosts *of that subnet*. It is a safe worker id only
//! when every worker sharing the layout sits in that one subnet, and the
//! subnet has no more host bits than the layout has worker bits. Neither can
//! be checked from one host:
//!
//! - Workers in different subnets collide: Flannel gives each Kubernetes node
//!   its own `/24`, so pods on different nodes get the same host part.
//! - A `/32` (GCE instances, Calico pods) or `/31` has no host part to speak
//!   of: every such host would get the same id, so these are refused.
//!
//! Where workers span subnets, use an explicit id, or leases (which need no
//! configuration at all).
//!
//! # Examples
//!
//! ```
//! use flakegen::{Builder, Layout, worker};
//!
//! let id = worker::from_pod_name("ingest-12", &Layout::TWITTER)?;
//! let generator = Builder::new().worker(id).build_atomic()?;
//! # Ok::<(), flakegen::Error>(())
//! ```

use core::fmt;
use std::net::Ipv4Addr;

use crate::layout::Layout;

/// The environment variable [`from_env`] reads.
pub const ENV_VAR: &str = "FLAKEGEN_WORKER_ID";

fn check(origin: WorkerOrigin, worker: u64, layout: &Layout) -> Result<u64, WorkerError> {
    if worker > layout.max_worker() {
        return Err(WorkerError::new(
            origin,
            format!(
                "worker id {worker} does not fit the layout, which holds 0 to {}: \
                 give this process a smaller id, or use a layout with more worker bits",
                layout.max_worker()
            ),
        ));
    }
    Ok(worker)
}

/// The worker id in `FLAKEGEN_WORKER_ID`.
///
/// # Errors
///
/// [`WorkerError`] when the variable is unset, not a decimal number,
/// or too large for `layout`.
pub fn from_env(layout: &Layout) -> Result<u64, WorkerError> {
    from_env_var(ENV_VAR, layout)
}

/// The worker id in the environment variable `name`.
///
/// # Errors
///
/// [`WorkerError`] when the variable is unset, not a decimal number,
/// or too large for `layout`.
///
/// # Examples
///
/// ```
/// use flakegen::{Layout, worker};
///
/// match worker::from_env_var("MY_APP_WORKER_ID", &Layout::TWITTER) {
///     Ok(id) => println!("worker {id}"),
///     Err(e) => println!("{e}"), // "no worker id from the environment: MY_APP_WORKER_ID is not set: ..."
/// }
/// # Ok::<(), flakegen::Error>(())
/// ```
pub fn from_env_var(name: &str, layout: &Layout) -> Result<u64, WorkerError> {
    from_env_value(name, std::env::var(name), layout)
}

/// [`from_env_var`] once the variable has been read.
fn from_env_value(
    name: &str,
    value: Result<String, std::env::VarError>,
    layout: &Layout,
) -> Result<u64, WorkerError> {
    const ORIGIN: WorkerOrigin = WorkerOrigin::Environment;
    let value = value.map_err(|e| {
        WorkerError::new(
            ORIGIN,
            match e {
                std::env::VarError::NotPresent => {
                    format!("{name} is not set: set it to this process's worker id")
                }
                std::env::VarError::NotUnicode(_) => format!("{name} is not valid unicode"),
            },
        )
    })?;
    let worker = value.trim().parse::<u64>().map_err(|_| {
        WorkerError::new(ORIGIN, format!("{name}={value:?} is not a decimal number"))
    })?;
    check(ORIGIN, worker, layout)
}

/// The ordinal of a StatefulSet pod name (`web-7` gives 7).
///
/// # Errors
///
/// [`WorkerError`] when the name does not end in `-<digits>` or the
/// ordinal is too large for `layout`.
///
/// # Examples
///
/// ```
/// use flakegen::{Layout, worker};
///
/// assert_eq!(worker::from_pod_name("web-7", &Layout::TWITTER)?, 7);
/// assert!(worker::from_pod_name("web-7f9c6d-x2x4z", &Layout::TWITTER).is_err()); // a Deployment's pod
/// assert!(worker::from_pod_name("web-5000", &Layout::TWITTER).is_err()); // over 1023
/// # Ok::<(), flakegen::Error>(())
/// ```
pub fn from_pod_name(name: &str, layout: &Layout) -> Result<u64, WorkerError> {
    const ORIGIN: WorkerOrigin = WorkerOrigin::HostName;
    let ordinal = name
        .rsplit_once('-')
        .map(|(_, ordinal)| ordinal)
        .filter(|o| !o.is_empty() && o.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| {
            WorkerError::new(
                ORIGIN,
                format!(
                    "{name:?} does not end in -<ordinal> like a StatefulSet pod's name \
                     (web-0, web-1, ...): run as a StatefulSet or set {ENV_VAR}"
                ),
            )
        })?;
    let worker = ordinal.parse::<u64>().map_err(|_| {
        WorkerError::new(
            ORIGIN,
            format!("the ordinal of {name:?} is too large: set {ENV_VAR} instead"),
        )
    })?;
    check(ORIGIN, worker, layout)
}

/// This pod's ordinal in a Kubernetes StatefulSet, as [`from_pod_name`]
/// reads it from the pod's name (`orders-3` is 3): the `HOSTNAME`
/// variable, which Kubernetes sets to the pod's name, or else the host
/// name, which it also is. Unique within the set, and stable across
/// restarts: the simplest worker id there is where pods are a StatefulSet
/// (see [On Kubernetes](crate::guide::kubernetes)).
///
/// # Errors
///
/// As for [`from_pod_name`] (a name with no `-<ordinal>`, as a
/// Deployment's pods have, or an ordinal the layout cannot hold), and
/// [`WorkerError`] when no name can be read.
///
/// # Examples
///
/// ```no_run
/// use flakegen::{Builder, Layout, worker};
///
/// let generator = Builder::new().worker(worker::from_ordinal(&Layout::TWITTER)?).build_atomic()?;
/// # Ok::<(), flakegen::Error>(())
/// ```
pub fn from_ordinal(layout: &Layout) -> Result<u64, WorkerError> {
    let name = pod_name().ok_or_else(|| {
        WorkerError::new(
            WorkerOrigin::HostName,
            format!("neither HOSTNAME nor the host name could be read: set {ENV_VAR} instead"),
        )
    })?;
    from_pod_name(&name, layout)
}

/// The ordinal of this host's name: [`from_ordinal`], by its first name.
///
/// # Errors
///
/// As for [`from_ordinal`].
#[deprecated(
    since = "0.2.0",
    note = "use worker::from_ordinal, which reads the same names"
)]
#[doc(hidden)]
pub fn from_hostname(layout: &Layout) -> Result<u64, WorkerError> {
    from_ordinal(layout)
}

/// The pod's name: `HOSTNAME` where set (Kubernetes sets it, shells
/// rarely export it), else the host name: the kernel's on Linux, else
/// Windows' `COMPUTERNAME`.
fn pod_name() -> Option<String> {
    let name = std::env::var("HOSTNAME").ok().or_else(|| {
        if cfg!(target_os = "linux") {
            std::fs::read_to_string("/proc/sys/kernel/hostname").ok()
        } else {
            std::env::var("COMPUTERNAME").ok()
        }
    });
    name.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

/// The host part of a private IPv4 address in a subnet of `prefix_len` bits.
///
/// Unique among the hosts of that one subnet, provided it fits the worker
/// field whole (taking fewer bits would let two hosts share a worker id):
/// see [when the host part is unique](self#when-the-host-part-of-an-address-is-unique).
///
/// # Errors
///
/// [`WorkerError`] when the address is not private (10/8, 172.16/12,
/// 192.168/16), the subnet has no host part (`/31`, `/32`), or it has more
/// host bits than `layout` has worker bits.
///
/// # Examples
///
/// ```
/// use std::net::Ipv4Addr;
/// use flakegen::{Layout, worker};
///
/// // Sonyflake's 16-bit machine id, on a /16 network.
/// assert_eq!(worker::from_ipv4(Ipv4Addr::new(10, 1, 2, 3), 16, &Layout::SONYFLAKE)?, 0x0203);
/// // Twitter's 10 bits cannot tell the 65,536 hosts of a /16 apart.
/// assert!(worker::from_ipv4(Ipv4Addr::new(10, 1, 2, 3), 16, &Layout::TWITTER).is_err());
/// assert_eq!(worker::from_ipv4(Ipv4Addr::new(192, 168, 1, 77), 24, &Layout::TWITTER)?, 77);
/// // Every /32 host would be worker 0.
/// assert!(worker::from_ipv4(Ipv4Addr::new(10, 128, 0, 7), 32, &Layout::TWITTER).is_err());
/// # Ok::<(), flakegen::Error>(())
/// ```
pub fn from_ipv4(address: Ipv4Addr, prefix_len: u32, layout: &Layout) -> Result<u64, WorkerError> {
    const ORIGIN: WorkerOrigin = WorkerOrigin::Ipv4;
    if !address.is_private() {
        return Err(WorkerError::new(
            ORIGIN,
            format!("{address} is not a private address: set {ENV_VAR} instead"),
        ));
    }
    let host_bits = 32 - prefix_len.min(32);
    if host_bits <= 1 {
        return Err(WorkerError::new(
            ORIGIN,
            format!(
                "{address}/{prefix_len} has no host part to tell hosts apart (every /32 or /31 \
                 host would get the same worker id): set {ENV_VAR} instead"
            ),
        ));
    }
    if host_bits > layout.worker_bits() {
        return Err(WorkerError::new(
            ORIGIN,
            format!(
                "{address}/{prefix_len} has {host_bits} host bits but the layout has {} worker bits, \
                 so two hosts could share a worker id: set {ENV_VAR} instead",
                layout.worker_bits()
            ),
        ));
    }
    let host_mask = u32::MAX >> (32 - host_bits);
    check(ORIGIN, u64::from(u32::from(address) & host_mask), layout)
}

/// The host part of this machine's first private IPv4 address, as
/// [`from_ipv4`] with the interface's own netmask.
///
/// # Errors
///
/// [`WorkerError`] when no interface has a private IPv4 address, the
/// interfaces cannot be listed, or as for [`from_ipv4`].
pub fn from_private_ipv4(layout: &Layout) -> Result<u64, WorkerError> {
    const ORIGIN: WorkerOrigin = WorkerOrigin::Ipv4;
    let interfaces = if_addrs::get_if_addrs().map_err(|e| {
        WorkerError::new(
            ORIGIN,
            format!("cannot list network interfaces ({e}): set {ENV_VAR} instead"),
        )
    })?;
    let (address, prefix_len) = interfaces
        .iter()
        .find_map(|interface| match &interface.addr {
            if_addrs::IfAddr::V4(v4) if v4.ip.is_private() => Some((v4.ip, v4.prefixlen)),
            _ => None,
        })
        .ok_or_else(|| {
            WorkerError::new(
                ORIGIN,
                format!("no interface has a private IPv4 address: set {ENV_VAR} instead"),
            )
        })?;
    from_ipv4(address, u32::from(prefix_len), layout)
}

/// Where [`worker`](crate::worker) looked for a worker id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WorkerOrigin {
    /// An environment variable.
    Environment,
    /// The host (or pod) name.
    HostName,
    /// A network interface's IPv4 address.
    Ipv4,
}

impl fmt::Display for WorkerOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WorkerOrigin::Environment => "the environment",
            WorkerOrigin::HostName => "the host name",
            WorkerOrigin::Ipv4 => "the IPv4 address",
        })
    }
}

/// A worker id could not be read from the deployment. Its message says what
/// was found and what to set instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerError {
    origin: WorkerOrigin,
    reason: String,
}

impl WorkerError {
    pub(crate) fn new(origin: WorkerOrigin, reason: String) -> Self {
        WorkerError { origin, reason }
    }

    /// Where the worker id was looked for.
    pub fn origin(&self) -> WorkerOrigin {
        self.origin
    }
}

impl fmt::Display for WorkerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no worker id from {}: {}", self.origin, self.reason)
    }
}

impl std::error::Error for WorkerError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_are_parsed_and_checked() {
        let l = Layout::TWITTER;
        let value = |v: &str| Ok(v.to_owned());
        assert_eq!(from_env_value("W", value(" 12 "), &l).unwrap(), 12);
        for (read, says) in [
            (value("1024"), "does not fit"),
            (value("seven"), "not a decimal number"),
            (value("-1"), "not a decimal number"),
            (Err(std::env::VarError::NotPresent), "W is not set"),
        ] {
            let e = from_env_value("W", read, &l).unwrap_err();
            assert!(e.to_string().contains(says), "{e}");
        }
        let unset = from_env_var("FLAKEGEN_SURELY_UNSET_IN_TESTS", &l).unwrap_err();
        assert!(unset.to_string().contains("is not set"), "{unset}");
    }

    #[test]
    fn pod_ordinals() {
        let l = Layout::TWITTER;
        assert_eq!(from_pod_name("web-0", &l).unwrap(), 0);
        assert_eq!(from_pod_name("my-app-db-1023", &l).unwrap(), 1023);
        for bad in [
            "web",
            "web-",
            "web-1a",
            "web-1024",
            "-",
            "web-99999999999999999999999",
        ] {
            let e = from_pod_name(bad, &l).unwrap_err();
            assert_eq!(e.origin(), WorkerOrigin::HostName, "{bad}");
        }
    }

    #[test]
    fn ipv4_host_parts() {
        let l = Layout::SONYFLAKE;
        assert_eq!(
            from_ipv4(Ipv4Addr::new(172, 16, 255, 1), 16, &l).unwrap(),
            0xFF01
        );
        for no_host_part in [31, 32, 40] {
            let e = from_ipv4(Ipv4Addr::new(10, 0, 0, 9), no_host_part, &l).unwrap_err();
            assert!(e.to_string().contains(ENV_VAR), "{e}");
        }
        assert_eq!(from_ipv4(Ipv4Addr::new(10, 0, 0, 9), 30, &l).unwrap(), 1);
        assert!(from_ipv4(Ipv4Addr::new(8, 8, 8, 8), 24, &l).is_err());
        assert!(from_ipv4(Ipv4Addr::new(10, 0, 0, 9), 8, &l).is_err());
        let single = Layout::builder()
            .worker_bits(0)
            .sequence_bits(22)
            .build()
            .unwrap();
        assert!(from_ipv4(Ipv4Addr::new(10, 0, 0, 9), 31, &single).is_err());
    }

    #[test]
    fn this_machine_answers_or_explains() {
        // Whatever the machine, an answer fits the layout or the error says where it looked.
        for (result, origin) in [
            (from_ordinal(&Layout::SONYFLAKE), WorkerOrigin::HostName),
            (from_private_ipv4(&Layout::SONYFLAKE), WorkerOrigin::Ipv4),
        ] {
            match result {
                Ok(worker) => assert!(worker <= Layout::SONYFLAKE.max_worker()),
                Err(e) => assert_eq!(e.origin(), origin, "{e}"),
            }
        }
    }
}
