//! The crate's only platform-specific and `unsafe` code.
//!
//! On Linux it reads clocks through libc; elsewhere every function falls back to
//! the standard library and [`NATIVE`] is `false`, so the crate builds and runs
//! everywhere and only the meaning of the Linux-only clocks changes.

#![allow(unsafe_code)]

pub(crate) use self::imp::*;

/// Wall-clock nanoseconds since 1970 from the standard library; 0 before 1970.
pub(crate) fn std_realtime_nanos() -> u64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => u64::try_from(d.as_nanos()).unwrap_or(u64::MAX),
        Err(_) => 0,
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::net::Ipv4Addr;

    /// Whether the coarse and syscall clocks are the real thing on this platform.
    pub(crate) const NATIVE: bool = true;

    /// This machine's host name.
    pub(crate) fn hostname() -> Option<String> {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    }

    /// Every IPv4 address of this machine's interfaces, with its prefix length.
    pub(crate) fn ipv4_interfaces() -> std::io::Result<Vec<(Ipv4Addr, u32)>> {
        let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
        // SAFETY: getifaddrs only writes the head of a list it allocates into `list`.
        if unsafe { libc::getifaddrs(&mut list) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut found = Vec::new();
        let mut node = list;
        while !node.is_null() {
            // SAFETY: `node` is a node of the list getifaddrs returned, valid
            // until freeifaddrs below, and nothing else mutates it.
            let ifa = unsafe { &*node };
            if let (Some(address), Some(mask)) = (ipv4(ifa.ifa_addr), ipv4(ifa.ifa_netmask)) {
                found.push((address, u32::from(mask).leading_ones()));
            }
            node = ifa.ifa_next;
        }
        // SAFETY: `list` came from a successful getifaddrs and is freed once.
        unsafe { libc::freeifaddrs(list) };
        Ok(found)
    }

    /// The IPv4 address in a `sockaddr`, if it holds one.
    fn ipv4(address: *const libc::sockaddr) -> Option<Ipv4Addr> {
        if address.is_null() {
            return None;
        }
        // SAFETY: a non-null sockaddr from getifaddrs is valid for the list's
        // lifetime, and `sa_family` is its first field in every variant.
        if i32::from(unsafe { (*address).sa_family }) != libc::AF_INET {
            return None;
        }
        // SAFETY: family AF_INET means the storage is a `sockaddr_in`.
        let sin = unsafe { &*address.cast::<libc::sockaddr_in>() };
        Some(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)))
    }

    fn nanos(ts: libc::timespec) -> u64 {
        // A realtime clock before 1970 reads as 0, as `SystemClock` does.
        if ts.tv_sec < 0 {
            return 0;
        }
        (ts.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(ts.tv_nsec as u64)
    }

    /// `CLOCK_REALTIME_COARSE` through the vDSO: cheap, but only as fine as the
    /// kernel's tick (1–10 ms).
    pub(crate) fn coarse_realtime_nanos() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec and the clock id is a
        // constant the kernel knows; clock_gettime writes only into `ts`.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
        if rc != 0 {
            return super::std_realtime_nanos();
        }
        nanos(ts)
    }

    /// `CLOCK_REALTIME` as a real system call, bypassing the vDSO: what every
    /// clock read costs under a hypervisor whose clock source the vDSO cannot use.
    pub(crate) fn syscall_realtime_nanos() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: SYS_clock_gettime takes (clockid_t, *mut timespec); both
        // arguments are valid and the kernel writes only into `ts`.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_clock_gettime,
                libc::CLOCK_REALTIME,
                &mut ts as *mut libc::timespec,
            )
        };
        if rc != 0 {
            return super::std_realtime_nanos();
        }
        nanos(ts)
    }

    /// Asks the kernel to wake the calling thread's timed sleeps on time rather
    /// than up to 50 µs late (the default timer slack). Used only on threads the
    /// crate owns.
    pub(crate) fn tighten_timer_slack() {
        // SAFETY: PR_SET_TIMERSLACK takes one integer argument and changes only
        // the calling thread's timer slack; failure leaves it unchanged, which is fine.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::net::Ipv4Addr;

    /// Whether the coarse and syscall clocks are the real thing on this platform.
    pub(crate) const NATIVE: bool = false;

    /// This machine's host name, from the variables shells and Windows set.
    pub(crate) fn hostname() -> Option<String> {
        ["HOSTNAME", "COMPUTERNAME"]
            .iter()
            .find_map(|v| std::env::var(v).ok())
            .filter(|s| !s.is_empty())
    }

    pub(crate) fn ipv4_interfaces() -> std::io::Result<Vec<(Ipv4Addr, u32)>> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "listing interfaces is implemented on Linux only",
        ))
    }

    pub(crate) fn coarse_realtime_nanos() -> u64 {
        super::std_realtime_nanos()
    }

    pub(crate) fn syscall_realtime_nanos() -> u64 {
        super::std_realtime_nanos()
    }

    pub(crate) fn tighten_timer_slack() {}
}
