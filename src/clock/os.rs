//! The operating system's time services and the CPU's time-stamp counter:
//! the crate's `unsafe` calls into libc and the CPU.
//!
//! On Linux the coarse and raw-syscall clocks and the timer slack go through
//! libc; elsewhere each falls back to the standard library (or does nothing)
//! and [`NATIVE`] is `false`, so the crate builds and runs everywhere and only
//! the meaning of the Linux-only clocks changes.

#![allow(unsafe_code)]

pub(crate) use self::imp::*;

/// Wall-clock nanoseconds since 1970 from the standard library; 0 before 1970.
///
/// `SystemTime::now().duration_since(UNIX_EPOCH)` is two calls that the
/// compiler does not inline, a `timespec` subtraction and a 128-bit product:
/// on Linux [`realtime_nanos`] reads the same clock without them.
pub(crate) fn std_realtime_nanos() -> u64 {
    super::units::unix_nanos(std::time::SystemTime::now())
}

#[cfg(target_os = "linux")]
mod imp {
    /// Whether the coarse and syscall clocks are the real thing on this platform.
    pub(crate) const NATIVE: bool = true;

    #[inline]
    fn nanos(ts: libc::timespec) -> u64 {
        // A realtime clock before 1970 reads as 0, as `SystemClock` does.
        if ts.tv_sec < 0 {
            return 0;
        }
        (ts.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(ts.tv_nsec as u64)
    }

    /// `clock` through the vDSO (libc's `clock_gettime`), as `u64`
    /// nanoseconds with one multiply-add; the standard library's reading if
    /// the call fails.
    #[inline]
    fn vdso_nanos(clock: libc::clockid_t) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec and every caller passes
        // a constant clock id the kernel knows; clock_gettime writes only
        // into `ts`.
        let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
        if rc != 0 {
            return super::std_realtime_nanos();
        }
        nanos(ts)
    }

    /// `CLOCK_REALTIME`, the clock `SystemTime::now` reads: the
    /// clock-reading strategies read it once per ID (see the benchmarks'
    /// README for what the standard library's route costs on top).
    #[inline]
    pub(crate) fn realtime_nanos() -> u64 {
        vdso_nanos(libc::CLOCK_REALTIME)
    }

    /// `CLOCK_REALTIME_COARSE`: cheap, but only as fine as the kernel's tick
    /// (1–10 ms).
    pub(crate) fn coarse_realtime_nanos() -> u64 {
        vdso_nanos(libc::CLOCK_REALTIME_COARSE)
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
    /// crate owns, which sleep until clock deadlines.
    pub(crate) fn tighten_timer_slack() {
        // SAFETY: PR_SET_TIMERSLACK takes one integer argument and changes only
        // the calling thread's timer slack; failure leaves it unchanged, which is fine.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        }
    }

    /// Runs `f` when the process exits through `exit` (as `main` returning
    /// does), while its other threads still run. At most once per `f`.
    pub(crate) fn at_exit(f: extern "C" fn()) {
        use std::sync::Mutex;
        static REGISTERED: Mutex<Vec<usize>> = Mutex::new(Vec::new());
        let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
        if registered.contains(&(f as usize)) {
            return;
        }
        registered.push(f as usize);
        // SAFETY: atexit takes a function pointer with C linkage and no
        // arguments, which `f` is, and keeps it for the process's life;
        // failure (no room for more handlers) only leaves it unregistered.
        unsafe {
            libc::atexit(f);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    /// Whether the coarse and syscall clocks are the real thing on this platform.
    pub(crate) const NATIVE: bool = false;

    pub(crate) fn realtime_nanos() -> u64 {
        super::std_realtime_nanos()
    }

    pub(crate) fn coarse_realtime_nanos() -> u64 {
        super::std_realtime_nanos()
    }

    pub(crate) fn syscall_realtime_nanos() -> u64 {
        super::std_realtime_nanos()
    }

    pub(crate) fn tighten_timer_slack() {}

    /// No exit handlers here: a leased process-wide generator's lease
    /// expires after its TTL instead.
    pub(crate) fn at_exit(_f: extern "C" fn()) {}
}

/// Whether the CPU's time-stamp counter can stand for time: the CPU says
/// its TSC is invariant (it ticks at one rate in every power state, on
/// every core) and, on Linux, the kernel has not found it unstable (it
/// lists `tsc` among its clock sources).
#[cfg(target_arch = "x86_64")]
pub(crate) fn tsc_is_invariant() -> bool {
    use core::arch::x86_64::__cpuid;

    // CPUID leaf 0x8000_0000 gives the highest extended leaf; EDX bit 8 of
    // leaf 0x8000_0007 is "invariant TSC".
    // SAFETY: every x86_64 CPU has CPUID. Rust before 1.87 (the MSRV is
    // 1.85) declares `__cpuid` unsafe; later ones, safe.
    #[allow(unused_unsafe)]
    let cpuid = |leaf| unsafe { __cpuid(leaf) };
    if cpuid(0x8000_0000).eax < 0x8000_0007 {
        return false;
    }
    let invariant = cpuid(0x8000_0007).edx & (1 << 8) != 0;
    if !invariant {
        return false;
    }
    if cfg!(target_os = "linux") {
        let sources = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/available_clocksource",
        )
        .unwrap_or_default();
        return sources.split_whitespace().any(|s| s == "tsc");
    }
    true
}

/// The time-stamp counter, which ticks at a constant rate where
/// [`tsc_is_invariant`]. The CPU may read it ahead of loads before it that
/// are still in flight: see [`read_tsc_ordered`].
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn read_tsc() -> u64 {
    // SAFETY: RDTSC is available on every x86_64 CPU and reads a counter,
    // writing no memory. User space may read it unless the kernel forbids
    // it (then it traps, as it would for any program).
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// The time-stamp counter, read after every load before it (an `lfence`
/// first, as the kernel's `rdtsc_ordered` does): 6 ns dearer on an AMD
/// EPYC, where [`read_tsc`] overlaps the work around it.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn read_tsc_ordered() -> u64 {
    use core::arch::x86_64::{_mm_lfence, _rdtsc};
    // SAFETY: LFENCE (SSE2, part of x86_64) and RDTSC are available on
    // every x86_64 CPU; they order loads and read a counter, writing no
    // memory. User space may read the counter unless the kernel forbids it
    // (then it traps, as it would for any program).
    unsafe {
        _mm_lfence();
        _rdtsc()
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn tsc_is_invariant() -> bool {
    false
}

/// Never called where there is no TSC ([`tsc_is_invariant`] is `false`).
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn read_tsc() -> u64 {
    0
}

/// Never called where there is no TSC ([`tsc_is_invariant`] is `false`).
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn read_tsc_ordered() -> u64 {
    0
}
