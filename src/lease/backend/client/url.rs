//! A registry URL as anything of flakegen's shows it: never a secret. A URL
//! may carry a password in its user part, in a `password=` parameter (a
//! query, or libpq's `key=value` form), and, mistyped, anywhere: a space
//! where the `@` belongs leaves it in what a client takes for the host. So
//! a URL is shown with everything between the scheme and the last `@`
//! masked, and every password parameter; one whose shape leaves any doubt
//! is not shown at all. And what a client says of a URL it could not parse
//! is scrubbed of the URL's secrets before it reaches a message.

use super::super::error::LeaseError;

/// The parameters that name a password, in a query or libpq's form.
const PASSWORD_KEYS: [&str; 4] = ["password", "pass", "pwd", "sslpassword"];

/// What may be printed of `url`: its secrets masked, or `None` where its
/// shape leaves doubt about where they are (no `scheme://` and no libpq
/// `key=value` form, or a host part that is not hosts and ports).
///
/// # Examples
///
/// ```
/// use flakegen::lease::redacted_url;
///
/// assert_eq!(
///     redacted_url("postgres://app:S3cret@db:5432/app").as_deref(),
///     Some("postgres://***@db:5432/app")
/// );
/// // A space where the `@` belongs: the password would show as a host.
/// assert_eq!(redacted_url("postgres://app:S3cret db:5432/app"), None);
/// ```
#[cfg_attr(not(feature = "inspect"), allow(dead_code, unreachable_pub))]
pub fn redacted_url(url: &str) -> Option<String> {
    let masked = mask_parameters(url);
    let Some((scheme, rest)) = split_scheme(&masked) else {
        // libpq's `key=value` form: every value but the passwords is safe.
        let libpq = masked.split_whitespace().all(|pair| pair.contains('='));
        return (libpq && !masked.trim().is_empty()).then_some(masked);
    };
    let after_user = rest.rfind('@').map(|at| &rest[at + 1..]);
    let hosts = after_user
        .unwrap_or(rest)
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("");
    if !hosts.chars().all(host_char) {
        return None;
    }
    Some(match after_user {
        Some(after) => format!("{scheme}***@{after}"),
        None => masked.clone(),
    })
}

/// Refuses a URL whose host part is not hosts and ports: its password
/// could show in every message that names the server (a missing `@`).
///
/// # Errors
///
/// [`LeaseError::InvalidUrl`], which shows nothing of the URL.
pub(crate) fn check_shape(url: &str) -> Result<(), LeaseError> {
    let Some((_, rest)) = split_scheme(url) else {
        return Ok(());
    };
    let hosts = rest.rfind('@').map_or(rest, |at| &rest[at + 1..]);
    let hosts = hosts.split(['/', '?', '#']).next().unwrap_or("");
    if hosts.chars().all(host_char) {
        return Ok(());
    }
    Err(LeaseError::InvalidUrl {
        reason: "what follows the scheme is not host:port[,host:port…] (is the @ between \
                 the password and the host missing? percent-encode special characters in \
                 the user name and password); the URL is not shown: it may hold a password"
            .to_owned(),
    })
}

/// `text` (what a client said of `url`) with every secret of `url` masked:
/// its user part, and the values of its password parameters, as given and
/// percent-decoded.
#[cfg_attr(
    not(any(
        feature = "mysql",
        feature = "postgres",
        feature = "redis",
        feature = "etcd"
    )),
    allow(dead_code)
)]
pub(crate) fn scrub(text: &str, url: &str) -> String {
    let mut secrets: Vec<String> = Vec::new();
    if split_scheme(url).is_none() && !url.contains('=') {
        // No shape to find a secret in: all of it may be one.
        secrets.push(url.to_owned());
    }
    if let Some((_, rest)) = split_scheme(url) {
        if let Some(at) = rest.rfind('@') {
            let user = &rest[..at];
            secrets.push(user.to_owned());
            if let Some((_, password)) = user.split_once(':') {
                secrets.push(password.to_owned());
            }
        } else {
            // No `@`: the host part may be a password and a host run together.
            let hosts = rest.split(['/', '?', '#']).next().unwrap_or("");
            if !hosts.chars().all(host_char) {
                secrets.push(hosts.to_owned());
                secrets.extend(hosts.split([' ', ':']).map(str::to_owned));
            }
        }
    }
    for pair in url.split(['?', '&', ';', ' ']) {
        if let Some((key, value)) = pair.split_once('=') {
            if PASSWORD_KEYS.contains(&key.trim().to_ascii_lowercase().as_str()) {
                secrets.push(value.to_owned());
            }
        }
    }
    let decoded: Vec<String> = secrets.iter().filter_map(|s| percent_decoded(s)).collect();
    secrets.extend(decoded);
    secrets.retain(|s| s.len() >= 2);
    // The longest first, so a password inside its user part goes with it.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = text.to_owned();
    for secret in &secrets {
        out = out.replace(secret.as_str(), "***");
    }
    out
}

/// The scheme (with its `://`, or a mistyped `//` or `:/`) and the rest.
fn split_scheme(url: &str) -> Option<(&str, &str)> {
    let end = url.find(|c: char| !(c.is_ascii_alphanumeric() || "+.-".contains(c)))?;
    if end == 0 {
        return None;
    }
    let after = &url[end..];
    let separator = ["://", ":/", "//", ":"]
        .into_iter()
        .find(|s| after.starts_with(s))?;
    let rest = &after[separator.len()..];
    (separator != ":" || rest.contains('@')).then(|| url.split_at(end + separator.len()))
}

/// A character a host list may hold: a name, an IPv4 or bracketed IPv6
/// address, a port, a comma between hosts, a `%` of an encoded zone.
fn host_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._:,[]%".contains(c)
}

/// `url` with the value of each parameter that names a password masked.
#[cfg_attr(not(feature = "inspect"), allow(dead_code))]
fn mask_parameters(url: &str) -> String {
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
        if PASSWORD_KEYS.contains(&key.as_str()) && value_end > eq + 1 {
            out.push_str("***");
        } else {
            out.push_str(&rest[eq + 1..value_end]);
        }
        rest = &rest[value_end..];
    }
    out.push_str(rest);
    out
}

/// `%XX` sequences decoded, if there are any and they are valid UTF-8.
#[cfg_attr(
    not(any(
        feature = "mysql",
        feature = "postgres",
        feature = "redis",
        feature = "etcd"
    )),
    allow(dead_code)
)]
fn percent_decoded(text: &str) -> Option<String> {
    if text.contains('%') {
        percent_decode(text)
    } else {
        None
    }
}

/// `%XX` sequences decoded; `None` for a bad one, or bytes that are not
/// UTF-8.
#[cfg_attr(
    not(any(
        feature = "mysql",
        feature = "postgres",
        feature = "redis",
        feature = "etcd"
    )),
    allow(dead_code)
)]
pub(in crate::lease::backend) fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shape of URL tried so far, as an operator mistypes them: none
    /// shows its password, in the URL shown or in a client's message.
    #[test]
    fn no_secret_is_shown_whatever_the_urls_shape() {
        let cases: [(&str, Option<&str>); 14] = [
            (
                "postgres://app:S3cret@db:5432/app?sslmode=verify-full",
                Some("postgres://***@db:5432/app?sslmode=verify-full"),
            ),
            (
                "redis://:S3cret@cache:6379/0",
                Some("redis://***@cache:6379/0"),
            ),
            (
                "redis//:S3cret@cache:6379/0",
                Some("redis//***@cache:6379/0"),
            ),
            ("mysql:/app:S3cret@db/app", Some("mysql:/***@db/app")),
            ("mysql:app:S3cret@db/app", Some("mysql:***@db/app")),
            (
                "postgres://app:S3/cr@t@db/app",
                Some("postgres://***@db/app"),
            ),
            ("postgres://flakegen:S3cret 127.0.0.1:25432/postgres", None),
            (
                "etcd://flakegen:S3cret 10.0.0.1:2379,10.0.0.2:2379/flakegen",
                None,
            ),
            (
                "host=db user=app password=S3cret dbname=app",
                Some("host=db user=app password=*** dbname=app"),
            ),
            (
                "postgres://db/app?user=app&password=S3cret&sslmode=require",
                Some("postgres://db/app?user=app&password=***&sslmode=require"),
            ),
            ("mysql://root@db/app", Some("mysql://***@db/app")),
            ("redis://cache:6379", Some("redis://cache:6379")),
            (
                "etcds://u:S3cret@[::1]:2379,h2/p",
                Some("etcds://***@[::1]:2379,h2/p"),
            ),
            ("S3cret", None),
        ];
        for (url, shown) in cases {
            assert_eq!(redacted_url(url).as_deref(), shown, "{url}");
            assert!(
                !redacted_url(url).unwrap_or_default().contains("S3"),
                "{url}"
            );
            let said = format!("the client could not parse {url}: {url:?}");
            assert!(
                !scrub(&said, url).contains("S3"),
                "{url}: {}",
                scrub(&said, url)
            );
        }
        // Percent-encoded, as the client may decode it.
        let url = "redis://:S3%2Fcr%40t@cache:6379/0";
        assert!(!scrub("password S3/cr@t refused", url).contains("S3"));
    }

    #[test]
    fn a_host_part_that_is_not_hosts_is_refused_without_the_url() {
        let e = check_shape("postgres://flakegen:S3cret 127.0.0.1:25432/postgres").unwrap_err();
        assert!(!e.to_string().contains("S3"), "{e}");
        assert!(
            e.to_string()
                .contains("@ between the password and the host"),
            "{e}"
        );
        for fine in [
            "postgres://app:S3 cret@db:5432/app",
            "etcd://u:p@10.0.0.1:2379,10.0.0.2/prefix",
            "redis://[::1]:6379/0",
            "host=db user=app",
        ] {
            check_shape(fine).unwrap();
        }
    }
}
