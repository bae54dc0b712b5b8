//! Holder tokens and record versions: names no other acquisition, and no
//! other write, uses.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// A token no other acquisition uses: host, process, time and a random number.
pub(crate) fn holder_token() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    format!("{host}/{}/{:016x}", std::process::id(), hasher.finish())
}

/// A version no write has used: 63 random bits (so it fits a signed
/// column), never 0. Two writes pick the same one with odds of 2⁻⁶³.
pub(crate) fn fresh_version() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    // Relaxed: only uniqueness of the count matters.
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    (hasher.finish() >> 1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_differ() {
        assert_ne!(holder_token(), holder_token());
    }

    #[test]
    fn versions_differ_and_fit_a_signed_column() {
        let a = fresh_version();
        let b = fresh_version();
        assert_ne!(a, b);
        assert!(a > 0 && a <= i64::MAX as u64);
    }
}
