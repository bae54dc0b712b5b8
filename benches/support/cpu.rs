//! What waiting costs: CPU time per wall second in the clock-bound regime.
//!
//! A strategy that reaches the layout's rate by keeping every core spinning is
//! not free. Criterion measures time per ID; this side report runs each
//! strategy saturated for a fixed wall time and reads the process's CPU time
//! (every thread, the ticker's included) before and after.

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use flakegen::IdGenerator;

/// CPU time used by the whole process so far.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(crate) fn process_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and CLOCK_PROCESS_CPUTIME_ID a
    // clock every Linux kernel knows; clock_gettime writes only into `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(not(target_os = "linux"))]
pub fn process_cpu_time() -> Option<Duration> {
    None
}

/// One saturated run: IDs per second and cores busy.
pub(crate) struct Load {
    pub ids_per_second: f64,
    pub cores: Option<f64>,
}

/// Runs `threads` callers of `generator` flat out for `window`.
pub(crate) fn saturate(
    generator: &(impl IdGenerator + ?Sized),
    threads: usize,
    window: Duration,
) -> Load {
    let stop = AtomicBool::new(false);
    let issued = AtomicU64::new(0);
    let barrier = Barrier::new(threads + 1);
    let (wall, cpu) = thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                barrier.wait();
                let mut n = 0u64;
                // Relaxed: a flag checked between calls; a late stop only adds IDs
                // that `issued` counts anyway.
                while !stop.load(Ordering::Relaxed) {
                    black_box(generator.next_id().unwrap());
                    n += 1;
                }
                issued.fetch_add(n, Ordering::Relaxed);
            });
        }
        barrier.wait();
        let (wall_start, cpu_start) = (Instant::now(), process_cpu_time());
        thread::sleep(window);
        stop.store(true, Ordering::Relaxed);
        let (wall, cpu_end) = (wall_start.elapsed(), process_cpu_time());
        (
            wall,
            cpu_start.zip(cpu_end).map(|(a, b)| b.saturating_sub(a)),
        )
    });
    Load {
        ids_per_second: issued.load(Ordering::Relaxed) as f64 / wall.as_secs_f64(),
        cores: cpu.map(|c| c.as_secs_f64() / wall.as_secs_f64()),
    }
}
