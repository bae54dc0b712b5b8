//! How times, leads and JSON look, the same in every command.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `2026-11-25T23:40:01.123Z`.
pub(crate) fn time(unix_millis: u64) -> String {
    let time = UNIX_EPOCH + Duration::from_millis(unix_millis);
    humantime::format_rfc3339_millis(time).to_string()
}

/// Milliseconds since 1970, of a time.
pub(crate) fn unix_millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How far `to` lies from `from`, signed: `+9.9 s`, `-61.0 s`, `+3 ms`.
pub(crate) fn lead(from_millis: u64, to_millis: u64) -> String {
    let ms = i128::from(to_millis) - i128::from(from_millis);
    let sign = if ms < 0 { '-' } else { '+' };
    let abs = ms.unsigned_abs();
    if abs < 1_000 {
        format!("{sign}{abs} ms")
    } else if abs < 120_000 {
        format!("{sign}{:.1} s", abs as f64 / 1_000.0)
    } else if abs < 7_200_000 {
        format!("{sign}{:.1} min", abs as f64 / 60_000.0)
    } else {
        format!("{sign}{:.1} h", abs as f64 / 3_600_000.0)
    }
}

/// `to - from` in ms, signed, for JSON.
pub(crate) fn lead_millis(from_millis: u64, to_millis: u64) -> i64 {
    let lead = i128::from(to_millis) - i128::from(from_millis);
    i64::try_from(lead).unwrap_or(if lead < 0 { i64::MIN } else { i64::MAX })
}

/// A URL with its password, if any, replaced: what may be printed.
pub(crate) fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((credentials, host)) => {
            let user = credentials.split(':').next().unwrap_or("");
            let hidden = if credentials.contains(':') {
                ":***"
            } else {
                ""
            };
            // A query may carry a password too: keep only its TLS settings.
            let path = path.split('?').next().unwrap_or("");
            format!("{scheme}://{user}{hidden}@{host}{path}")
        }
        None => format!(
            "{scheme}://{authority}{}",
            path.split('?').next().unwrap_or("")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads_are_signed_and_sized() {
        assert_eq!(lead(1_000, 1_003), "+3 ms");
        assert_eq!(lead(10_000, 0), "-10.0 s");
        assert_eq!(lead(0, 9_900), "+9.9 s");
        assert_eq!(lead(0, 600_000), "+10.0 min");
        assert_eq!(lead(0, 36_000_000), "+10.0 h");
        assert_eq!(lead_millis(5, 2), -3);
    }

    #[test]
    fn passwords_are_never_printed() {
        assert_eq!(
            redacted("postgres://app:secret@db:5432/app?sslmode=verify-full"),
            "postgres://app:***@db:5432/app"
        );
        assert_eq!(
            redacted("redis://:secret@cache:6379/0"),
            "redis://:***@cache:6379/0"
        );
        assert_eq!(redacted("mysql://root@db/app"), "mysql://root@db/app");
        assert_eq!(redacted("redis://cache:6379"), "redis://cache:6379");
    }
}
