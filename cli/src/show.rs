//! How times, leads and URLs look, the same in every command.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `2026-11-25T23:40:01.123Z`.
pub(crate) fn time(unix_millis: u64) -> String {
    let time = UNIX_EPOCH + Duration::from_millis(unix_millis);
    humantime::format_rfc3339_millis(time).to_string()
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

/// What may be printed of a URL, whatever its shape: everything between
/// the scheme and the last `@` masked (a password may hold `/`, `@` or `:`
/// unencoded), and the value of every `password=`-like parameter, in a
/// query or in libpq's `key=value` form.
pub(crate) fn redacted(url: &str) -> String {
    let mut out = mask_parameters(url);
    if let Some(at) = out.rfind('@') {
        // The scheme, if the URL starts with one: letters, then `:`, `://`
        // or a mistyped `//`.
        let scheme_len = out
            .find(|c: char| !(c.is_ascii_alphanumeric() || "+.-".contains(c)))
            .filter(|&end| end > 0)
            .map_or(0, |end| {
                let rest = &out[end..];
                end + rest.len() - rest.trim_start_matches([':', '/']).len()
            });
        if scheme_len <= at {
            out.replace_range(scheme_len..at, "***");
        }
    }
    out
}

/// `url` with the value of each parameter that names a password masked.
fn mask_parameters(url: &str) -> String {
    const NAMES: [&str; 4] = ["password", "pass", "pwd", "sslpassword"];
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(eq) = rest.find('=') {
        let key_start = rest[..eq]
            .rfind(|c: char| c == '?' || c == '&' || c == ';' || c.is_whitespace())
            .map_or(0, |i| i + 1);
        let key = rest[key_start..eq].trim().to_ascii_lowercase();
        let value_end = rest[eq + 1..]
            .find(|c: char| c == '&' || c == ';' || c.is_whitespace() || c == '#')
            .map_or(rest.len(), |i| eq + 1 + i);
        out.push_str(&rest[..=eq]);
        if NAMES.contains(&key.as_str()) && value_end > eq + 1 {
            out.push_str("***");
        } else {
            out.push_str(&rest[eq + 1..value_end]);
        }
        rest = &rest[value_end..];
    }
    out.push_str(rest);
    out
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
    }

    #[test]
    fn passwords_are_never_printed_whatever_the_urls_shape() {
        let cases = [
            (
                "postgres://app:S3cret@db:5432/app?sslmode=verify-full",
                "postgres://***@db:5432/app?sslmode=verify-full",
            ),
            ("redis://:S3cret@cache:6379/0", "redis://:***@cache:6379/0"),
            ("redis//:S3cret@cache:6379/0", "redis//:***@cache:6379/0"),
            ("mysql:/app:S3cret@db/app", "mysql:/***@db/app"),
            ("postgres://app:S3/cr@t@db/app", "postgres://***@db/app"),
            (
                "host=db user=app password=S3cret dbname=app",
                "host=db user=app password=*** dbname=app",
            ),
            (
                "postgres://db/app?user=app&password=S3cret&sslmode=require",
                "postgres://db/app?user=app&password=***&sslmode=require",
            ),
            ("mysql://root@db/app", "mysql://***@db/app"),
            ("redis://cache:6379", "redis://cache:6379"),
        ];
        for (url, shown) in cases {
            assert_eq!(redacted(url), shown, "{url}");
            assert!(!redacted(url).contains("S3"), "{url}");
        }
    }
}
