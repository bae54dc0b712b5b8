//! How times, leads and URLs look, the same in every command.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `2026-11-25T23:40:01.123Z`.
pub(crate) fn time(unix_millis: u64) -> String {
    let time = UNIX_EPOCH + Duration::from_millis(unix_millis);
    humantime::format_rfc3339_millis(time).to_string()
}

/// An instant and how far it lies from `now_millis` (the registry's clock,
/// or this host's): `2026-12-01T19:05:31.808Z, 3.2 s ago`.
pub(crate) fn moment(unix_millis: u64, now_millis: u64) -> String {
    let ms = lead_millis(now_millis, unix_millis);
    let age = match ms {
        0 => "now".to_owned(),
        ms if ms > 0 => format!("in {}", span(ms.unsigned_abs())),
        _ => format!("{} ago", span(ms.unsigned_abs())),
    };
    format!("{}, {age}", time(unix_millis))
}

/// A span of ms, sized to be read: `3 ms`, `9.9 s`, `10.0 min`, `10.0 h`,
/// `3.0 days`.
fn span(abs: u64) -> String {
    if abs < 1_000 {
        format!("{abs} ms")
    } else if abs < 120_000 {
        format!("{:.1} s", abs as f64 / 1_000.0)
    } else if abs < 7_200_000 {
        format!("{:.1} min", abs as f64 / 60_000.0)
    } else if abs < 172_800_000 {
        format!("{:.1} h", abs as f64 / 3_600_000.0)
    } else {
        format!("{:.1} days", abs as f64 / 86_400_000.0)
    }
}

/// A fence as a time, or `-` for none (0: a record that never held one).
pub(crate) fn fence(unix_millis: u64) -> String {
    if unix_millis == 0 {
        "-".to_owned()
    } else {
        time(unix_millis)
    }
}

/// Milliseconds since 1970, of a time.
pub(crate) fn unix_millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A span of time, roughly: `3.0 min`, `28.4 years`.
pub(crate) fn duration(millis: u64) -> String {
    const YEAR: f64 = 31_557_600_000.0;
    let ms = millis as f64;
    if ms >= YEAR {
        format!("{:.1} years", ms / YEAR)
    } else if ms >= 172_800_000.0 {
        format!("{:.1} days", ms / 86_400_000.0)
    } else if ms >= 7_200_000.0 {
        format!("{:.1} h", ms / 3_600_000.0)
    } else {
        format!("{:.1} min", ms / 60_000.0)
    }
}

/// `to - from` in ms, signed, for JSON.
pub(crate) fn lead_millis(from_millis: u64, to_millis: u64) -> i64 {
    let lead = i128::from(to_millis) - i128::from(from_millis);
    i64::try_from(lead).unwrap_or(if lead < 0 { i64::MIN } else { i64::MAX })
}

/// How far `to` lies from `from`, signed: `+9.9 s`, `-61.0 s`, `+3 ms`.
pub(crate) fn lead(from_millis: u64, to_millis: u64) -> String {
    let ms = lead_millis(from_millis, to_millis);
    let sign = if ms < 0 { '-' } else { '+' };
    format!("{sign}{}", span(ms.unsigned_abs()))
}

/// What may be printed of a URL, whatever its shape: the library's
/// judgement (`flakegen::lease::redacted_url`), or a word where it shows
/// nothing.
pub(crate) fn redacted(url: &str) -> String {
    flakegen::lease::redacted_url(url)
        .unwrap_or_else(|| "(the URL, not shown: it may hold a password)".to_owned())
}

/// The help of a registry URL argument: every registry flakegen knows, as
/// the library's table lists them.
pub(crate) fn url_help() -> String {
    format!(
        "The registry: a {} URL, as the generators are given it; or \
         FLAKEGEN_LEASE_URL, which keeps a password out of the command line",
        flakegen::lease::RegistryKind::schemes_said()
    )
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
        assert_eq!(fence(0), "-");
        assert_eq!(
            moment(1_796_151_863_658, 1_796_151_866_858),
            "2026-12-01T19:04:23.658Z, 3.2 s ago"
        );
        assert_eq!(moment(10_000, 0), "1970-01-01T00:00:10.000Z, in 10.0 s");
    }
}
