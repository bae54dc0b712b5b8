//! flakegen without `std`: the atomic strategy on a clock the page gives
//! it, the layouts, decoding and base32, in a WebAssembly module with no
//! standard library. `run.mjs` drives it from node and checks what it
//! issues.
//!
//! Every export answers with a number: an ID (non-negative, the Twitter
//! layout keeps the sign bit clear), or a negative code for an error.

#![no_std]

extern crate alloc;

use core::alloc::{GlobalAlloc, Layout as Allocation};
use core::sync::atomic::{AtomicU64, Ordering};

use flakegen::{AtomicGenerator, Base32, BuildError, Builder, Clock, IdGenerator, IssueError};
use flakegen::{Layout, Snowflake};

/// The page's clock: milliseconds since 1970, as `performance.timeOrigin +
/// performance.now()` or `Date.now()` tell them (the page chooses).
#[derive(Clone, Copy, Debug)]
struct PageClock;

#[link(wasm_import_module = "page")]
unsafe extern "C" {
    fn now_millis() -> f64;
}

impl Clock for PageClock {
    fn unix_nanos(&self) -> u64 {
        // SAFETY: an import of the page's, taking nothing.
        let millis = unsafe { now_millis() };
        // A float to an integer saturates: a time before 1970 reads 0.
        (millis * 1e6) as u64
    }
}

static GENERATOR: spin::Once<AtomicGenerator<PageClock>> = spin::Once::new();

/// The wait the last refused call was told to make, in ns.
static LAST_WAIT: AtomicU64 = AtomicU64::new(0);

const WOULD_BLOCK: i64 = -1;
const CLOCK_BEHIND: i64 = -2;
const NOT_STARTED: i64 = -3;
const OTHER_ISSUE_ERROR: i64 = -4;
const WORKER_IN_USE: i32 = 2;
const OTHER_BUILD_ERROR: i32 = 3;

fn build(worker: u32) -> Result<AtomicGenerator<PageClock>, BuildError> {
    Builder::on(PageClock)
        .worker(u64::from(worker))
        .build_atomic()
}

fn code(e: &BuildError) -> i32 {
    match e {
        BuildError::WorkerInUse { .. } => WORKER_IN_USE,
        _ => OTHER_BUILD_ERROR,
    }
}

/// Builds the module's generator on `worker`: 0, or an error's code.
#[unsafe(no_mangle)]
pub extern "C" fn flakegen_start(worker: u32) -> i32 {
    match build(worker) {
        Ok(generator) => {
            GENERATOR.call_once(|| generator);
            0
        }
        Err(e) => code(&e),
    }
}

/// Builds a second generator on `worker` while the first lives: the
/// process's table of generators refuses it (`WORKER_IN_USE`).
#[unsafe(no_mangle)]
pub extern "C" fn flakegen_build_again(worker: u32) -> i32 {
    match build(worker) {
        Ok(_) => 0,
        Err(e) => code(&e),
    }
}

/// The next ID, or `WOULD_BLOCK` (the wait in `flakegen_last_wait`): a
/// build without `std` never sleeps.
#[unsafe(no_mangle)]
pub extern "C" fn flakegen_next() -> i64 {
    let Some(generator) = GENERATOR.get() else {
        return NOT_STARTED;
    };
    match generator.next_id() {
        Ok(id) => id.as_u64() as i64,
        Err(IssueError::WouldBlock { wait_nanos }) => {
            LAST_WAIT.store(wait_nanos, Ordering::Relaxed);
            WOULD_BLOCK
        }
        Err(IssueError::ClockBehind { .. }) => CLOCK_BEHIND,
        Err(_) => OTHER_ISSUE_ERROR,
    }
}

/// How long the last `WOULD_BLOCK` said to wait, in ns.
#[unsafe(no_mangle)]
pub extern "C" fn flakegen_last_wait() -> i64 {
    LAST_WAIT.load(Ordering::Relaxed) as i64
}

/// The worker id decoded from `id` (Twitter's layout), or -1.
#[unsafe(no_mangle)]
pub extern "C" fn flakegen_worker_of(id: i64) -> i64 {
    Layout::TWITTER
        .decode(Snowflake::from_u64(id as u64))
        .map_or(-1, |fields| fields.worker as i64)
}

/// Whether `id` comes back from its base32 text: 1, else 0.
#[unsafe(no_mangle)]
pub extern "C" fn flakegen_base32_round_trip(id: i64) -> i32 {
    let id = Snowflake::from_u64(id as u64);
    let text: Base32 = id.to_base32();
    i32::from(Snowflake::from_base32(text.as_str()) == Ok(id))
}

/// Memory straight from the module's own: a page (64 KiB) or more per
/// allocation, never given back. A generator allocates a few times when
/// built, never while issuing.
struct Pages;

#[global_allocator]
static PAGES: Pages = Pages;

// SAFETY: every allocation is fresh memory the module just grew, aligned
// to a page (64 KiB, above any alignment asked for here), never handed out
// twice.
unsafe impl GlobalAlloc for Pages {
    unsafe fn alloc(&self, allocation: Allocation) -> *mut u8 {
        const PAGE: usize = 65_536;
        let pages = allocation.size().div_ceil(PAGE).max(1);
        match core::arch::wasm32::memory_grow(0, pages) {
            usize::MAX => core::ptr::null_mut(),
            first => (first * PAGE) as *mut u8,
        }
    }

    unsafe fn dealloc(&self, _: *mut u8, _: Allocation) {}
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}
