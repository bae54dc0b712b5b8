//! Worker ids from where deployments keep them.
//!
//! A worker id must be unique among the generators that run at the same time
//! with the same layout; two processes sharing one can issue the same ID. These
//! functions read it from the usual places and check it against a layout, so a
//! misconfiguration is an error at start-up rather than duplicates later:
//!
//! - [`from_env`] / [`from_env_var`]: a number the deployment assigns
//!   (`FLAKEGEN_WORKER_ID=7`). The most explicit, and the safest.
//! - [`from_hostname`] / [`from_pod_name`]: the ordinal of a Kubernetes
//!   StatefulSet pod (`web-7` is 7), unique within the set by construction.
//! - [`from_private_ipv4`] / [`from_ipv4`]: the host part of the machine's
//!   private IPv4 address, Sonyflake's default. Unique only within one subnet,
//!   so the subnet must have no more host bits than the layout has worker bits.
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

use std::net::Ipv4Addr;

use crate::error::Error;
use crate::layout::Layout;
use crate::platform;

/// The environment variable [`from_env`] reads.
pub const ENV_VAR: &str = "FLAKEGEN_WORKER_ID";

fn check(source: &'static str, worker: u64, layout: &Layout) -> Result<u64, Error> {
    if worker > layout.max_worker() {
        return Err(Error::WorkerSource {
            source,
            reason: format!(
                "worker id {worker} does not fit the layout, which holds 0 to {}",
                layout.max_worker()
            ),
        });
    }
    Ok(worker)
}

/// The worker id in `FLAKEGEN_WORKER_ID`.
///
/// # Errors
///
/// [`Error::WorkerSource`] when the variable is unset, not a decimal number,
/// or too large for `layout`.
pub fn from_env(layout: &Layout) -> Result<u64, Error> {
    from_env_var(ENV_VAR, layout)
}

/// The worker id in the environment variable `name`.
///
/// # Errors
///
/// [`Error::WorkerSource`] when the variable is unset, not a decimal number,
/// or too large for `layout`.
///
/// # Examples
///
/// ```
/// use flakegen::{Error, Layout, worker};
///
/// match worker::from_env_var("MY_APP_WORKER_ID", &Layout::TWITTER) {
///     Ok(id) => println!("worker {id}"),
///     Err(e @ Error::WorkerSource { .. }) => println!("{e}"), // "... MY_APP_WORKER_ID is not set: ..."
///     Err(e) => return Err(e),
/// }
/// # Ok::<(), flakegen::Error>(())
/// ```
pub fn from_env_var(name: &str, layout: &Layout) -> Result<u64, Error> {
    from_env_value(name, std::env::var(name), layout)
}

/// [`from_env_var`] once the variable has been read.
fn from_env_value(
    name: &str,
    value: Result<String, std::env::VarError>,
    layout: &Layout,
) -> Result<u64, Error> {
    const SOURCE: &str = "the environment";
    let value = value.map_err(|e| Error::WorkerSource {
        source: SOURCE,
        reason: match e {
            std::env::VarError::NotPresent => {
                format!("{name} is not set: set it to this process's worker id")
            }
            std::env::VarError::NotUnicode(_) => format!("{name} is not valid unicode"),
        },
    })?;
    let worker = value
        .trim()
        .parse::<u64>()
        .map_err(|_| Error::WorkerSource {
            source: SOURCE,
            reason: format!("{name}={value:?} is not a decimal number"),
        })?;
    check(SOURCE, worker, layout)
}

/// The ordinal of a StatefulSet pod name (`web-7` gives 7).
///
/// # Errors
///
/// [`Error::WorkerSource`] when the name does not end in `-<digits>` or the
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
pub fn from_pod_name(name: &str, layout: &Layout) -> Result<u64, Error> {
    const SOURCE: &str = "the host name";
    let ordinal = name
        .rsplit_once('-')
        .map(|(_, ordinal)| ordinal)
        .filter(|o| !o.is_empty() && o.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| Error::WorkerSource {
            source: SOURCE,
            reason: format!(
                "{name:?} does not end in -<ordinal> like a StatefulSet pod's name (web-0, web-1, ...): \
                 run as a StatefulSet or set {ENV_VAR}"
            ),
        })?;
    let worker = ordinal.parse::<u64>().map_err(|_| Error::WorkerSource {
        source: SOURCE,
        reason: format!("the ordinal of {name:?} is too large"),
    })?;
    check(SOURCE, worker, layout)
}

/// The ordinal of this host's name, as [`from_pod_name`]: in a Kubernetes
/// StatefulSet the host name is the pod name.
///
/// # Errors
///
/// As for [`from_pod_name`], and [`Error::WorkerSource`] when the host name
/// cannot be read.
pub fn from_hostname(layout: &Layout) -> Result<u64, Error> {
    let name = platform::hostname().ok_or_else(|| Error::WorkerSource {
        source: "the host name",
        reason: "the host name could not be read".to_owned(),
    })?;
    from_pod_name(&name, layout)
}

/// The host part of a private IPv4 address in a subnet of `prefix_len` bits.
///
/// Addresses in one subnet differ only in their host part, so it is unique
/// among the hosts of that subnet, provided it fits the worker field whole;
/// taking fewer bits would let two hosts share a worker id.
///
/// # Errors
///
/// [`Error::WorkerSource`] when the address is not private (10/8, 172.16/12,
/// 192.168/16) or the subnet has more host bits than `layout` has worker bits.
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
/// # Ok::<(), flakegen::Error>(())
/// ```
pub fn from_ipv4(address: Ipv4Addr, prefix_len: u32, layout: &Layout) -> Result<u64, Error> {
    const SOURCE: &str = "the IPv4 address";
    if !address.is_private() {
        return Err(Error::WorkerSource {
            source: SOURCE,
            reason: format!("{address} is not a private address: set {ENV_VAR} instead"),
        });
    }
    let host_bits = 32 - prefix_len.min(32);
    if host_bits > layout.worker_bits() {
        return Err(Error::WorkerSource {
            source: SOURCE,
            reason: format!(
                "{address}/{prefix_len} has {host_bits} host bits but the layout has {} worker bits, \
                 so two hosts could share a worker id: set {ENV_VAR} instead",
                layout.worker_bits()
            ),
        });
    }
    let host_mask = if host_bits == 0 {
        0
    } else {
        u32::MAX >> (32 - host_bits)
    };
    check(SOURCE, u64::from(u32::from(address) & host_mask), layout)
}

/// The host part of this machine's first private IPv4 address, as
/// [`from_ipv4`] with the interface's own netmask (Linux only).
///
/// # Errors
///
/// [`Error::WorkerSource`] when no interface has a private IPv4 address, the
/// platform cannot list interfaces, or as for [`from_ipv4`].
pub fn from_private_ipv4(layout: &Layout) -> Result<u64, Error> {
    const SOURCE: &str = "the IPv4 address";
    let addresses = platform::ipv4_interfaces().map_err(|e| Error::WorkerSource {
        source: SOURCE,
        reason: format!("cannot list network interfaces ({e}): set {ENV_VAR} instead"),
    })?;
    let (address, prefix_len) = addresses
        .into_iter()
        .find(|(address, _)| address.is_private())
        .ok_or_else(|| Error::WorkerSource {
            source: SOURCE,
            reason: format!("no interface has a private IPv4 address: set {ENV_VAR} instead"),
        })?;
    from_ipv4(address, prefix_len, layout)
}

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
            assert!(
                matches!(from_pod_name(bad, &l), Err(Error::WorkerSource { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn ipv4_host_parts() {
        let l = Layout::SONYFLAKE;
        assert_eq!(
            from_ipv4(Ipv4Addr::new(172, 16, 255, 1), 16, &l).unwrap(),
            0xFF01
        );
        assert_eq!(from_ipv4(Ipv4Addr::new(10, 0, 0, 9), 32, &l).unwrap(), 0);
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
        // Whatever the machine, an answer fits the layout or the error says what to do.
        for result in [
            from_hostname(&Layout::SONYFLAKE),
            from_private_ipv4(&Layout::SONYFLAKE),
        ] {
            match result {
                Ok(worker) => assert!(worker <= Layout::SONYFLAKE.max_worker()),
                Err(e) => assert!(matches!(e, Error::WorkerSource { .. }), "{e:?}"),
            }
        }
    }
}
