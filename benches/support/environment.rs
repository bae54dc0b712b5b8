//! What machine a benchmark ran on, printed first and saved beside Criterion's
//! results, so that numbers from different machines are never compared blind.

use std::fs;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use flakegen::clock::SyscallClock;
use flakegen::{Clock, SystemClock};

fn read(path: &str) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn cpuinfo_field(name: &str) -> Option<String> {
    let info = read("/proc/cpuinfo")?;
    info.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
}

fn command(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Nanoseconds per read of `clock`, over `reads` reads.
pub(crate) fn clock_read_ns(clock: &impl Clock, reads: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..reads {
        black_box(clock.unix_nanos());
    }
    start.elapsed().as_nanos() as f64 / f64::from(reads)
}

/// CPU time the hypervisor gave to other guests while this one wanted it
/// (`steal` in `/proc/stat`, all CPUs), so far: a figure that moves during a
/// measurement says the machine, not the code, took that long.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(crate) fn steal_time() -> Option<Duration> {
    let stat = read("/proc/stat")?;
    let ticks: u64 = stat
        .lines()
        .next()?
        .split_whitespace()
        .nth(8)?
        .parse()
        .ok()?;
    // SAFETY: sysconf takes a constant name and reads no memory of ours.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let per_second = u64::try_from(per_second).ok().filter(|&hz| hz > 0)?;
    Some(Duration::from_nanos(ticks * (1_000_000_000 / per_second)))
}

#[cfg(not(target_os = "linux"))]
pub fn steal_time() -> Option<Duration> {
    None
}

/// Where Criterion keeps its results.
pub(crate) fn criterion_dir() -> PathBuf {
    // Benchmarks run in their member's directory: the workspace's target
    // is one up.
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    target.join("criterion")
}

/// Prints the environment and saves it as `target/criterion/environment.json`.
pub(crate) fn report(quick: bool) -> serde_json::Value {
    let unknown = || "unknown".to_owned();
    let flags = cpuinfo_field("flags").unwrap_or_default();
    let virtualisation = match (
        flags.split(' ').any(|f| f == "hypervisor"),
        read("/sys/hypervisor/type"),
    ) {
        (_, Some(kind)) => format!("yes ({kind})"),
        (true, None) => "yes (cpu reports a hypervisor)".to_owned(),
        (false, None) => "none detected".to_owned(),
    };
    let turbo = match (
        read("/sys/devices/system/cpu/intel_pstate/no_turbo"),
        read("/sys/devices/system/cpu/cpufreq/boost"),
    ) {
        (Some(v), _) => if v == "0" { "on" } else { "off" }.to_owned(),
        (None, Some(v)) => if v == "1" { "on" } else { "off" }.to_owned(),
        _ => "not readable".to_owned(),
    };
    let env = serde_json::json!({
        "cpu": cpuinfo_field("model name").unwrap_or_else(unknown),
        "logical_cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "clocksource": read("/sys/devices/system/clocksource/clocksource0/current_clocksource").unwrap_or_else(unknown),
        "governor": read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").unwrap_or_else(|| "not readable".to_owned()),
        "turbo": turbo,
        "virtualisation": virtualisation,
        "kernel": read("/proc/sys/kernel/osrelease").unwrap_or_else(unknown),
        "rustc": command("rustc", &["--version"]).unwrap_or_else(unknown),
        "revision": command("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_else(unknown),
        "vdso_clock_gettime_ns": (clock_read_ns(&SystemClock, 1_000_000) * 10.0).round() / 10.0,
        "syscall_clock_gettime_ns": (clock_read_ns(&SyscallClock, 100_000) * 10.0).round() / 10.0,
        "syscall_clock_is_native": SyscallClock::IS_NATIVE,
        "quick": quick,
    });
    println!("flakegen benchmark environment");
    for (key, value) in env.as_object().into_iter().flatten() {
        println!("  {key:<26} {value}");
    }
    println!();
    let dir = criterion_dir();
    if fs::create_dir_all(&dir).is_ok() {
        let _ = fs::write(dir.join("environment.json"), format!("{env:#}\n"));
    }
    env
}
