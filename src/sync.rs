//! Every atomic of the crate, swapped for loom's under `cfg(loom)` so the model
//! checker can explore their interleavings, and for `portable-atomic`'s on a
//! target without 64-bit atomics (32-bit Arm, RISC-V), where its fallback
//! keeps them with the 32-bit ones the target has.

/// The ticker's stop flag: the ticker needs `std`.
#[cfg(all(not(loom), feature = "std"))]
pub(crate) use core::sync::atomic::AtomicBool;
#[cfg(all(not(loom), target_has_atomic = "64"))]
pub(crate) use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
#[cfg(all(not(loom), not(target_has_atomic = "64")))]
pub(crate) use portable_atomic::{AtomicPtr, AtomicU64, Ordering};

/// The same atomics, never loom's: for statics, which need a constant
/// constructor, and which no model explores.
pub(crate) mod plain {
    /// A process's value made once per copy (`process::PerCopy`), with `std`.
    #[cfg(feature = "std")]
    pub(crate) use core::sync::atomic::AtomicPtr;
    #[cfg(target_has_atomic = "64")]
    pub(crate) use core::sync::atomic::{AtomicU64, Ordering};
    #[cfg(not(target_has_atomic = "64"))]
    pub(crate) use portable_atomic::{AtomicU64, Ordering};
}

/// The lock of the cold paths (a build, a drop, a heal): the standard
/// library's, which parks a waiting thread; without `std`, a spin lock.
#[cfg(feature = "std")]
pub(crate) type Lock<T> = std::sync::Mutex<T>;
#[cfg(not(feature = "std"))]
pub(crate) type Lock<T> = spin::Mutex<T>;

/// Locks `lock`. A thread that panicked holding it left it consistent:
/// every critical section here writes its fields in one step.
#[cfg(feature = "std")]
pub(crate) fn lock<T>(lock: &Lock<T>) -> std::sync::MutexGuard<'_, T> {
    lock.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
#[cfg(not(feature = "std"))]
pub(crate) fn lock<T>(lock: &Lock<T>) -> spin::MutexGuard<'_, T> {
    lock.lock()
}
