//! Every output of the CLI's tests is read for raw times: a person reads
//! `2026-12-01T19:05:31.808Z, 3.2 s ago`, never `unix ms 1796151863658`.
//! JSON lines may carry `…_unix_ms` numbers, for machines, and a layout's
//! text form its `epoch_unix_millis=`.

use std::process::Output;

/// Panics if a line of `output` that is not JSON holds a raw time: the
/// words "unix ms", or, with `digits`, a run of 13 digits that reads as a
/// millisecond between 2001 and 2100 (IDs are 19 digits or base32), but
/// for a `key=value`'s value and what is quoted (a namespace's name is the
/// user's). Commands that echo 13-digit IDs they were
/// given pass `digits: false`.
pub(crate) fn refuse_raw_times(output: &Output, digits: bool) {
    for stream in [&output.stdout, &output.stderr] {
        for line in String::from_utf8_lossy(stream).lines() {
            if line.trim_start().starts_with('{') {
                continue;
            }
            assert!(!line.contains("unix ms"), "a raw time in: {line}");
            let unquoted: String = line.split('"').step_by(2).collect::<Vec<_>>().join("\"\"");
            let bytes = unquoted.as_bytes();
            let mut at = 0;
            while at < bytes.len() {
                let end = bytes[at..]
                    .iter()
                    .position(|b| !b.is_ascii_digit())
                    .map_or(bytes.len(), |n| at + n);
                let value = at > 0 && bytes[at - 1] == b'=';
                if digits && end - at == 13 && !value {
                    let ms: u64 = unquoted[at..end].parse().unwrap();
                    assert!(
                        !(1_000_000_000_000..4_102_444_800_000).contains(&ms),
                        "a raw time, {ms}, in: {line}"
                    );
                }
                at = end.max(at + 1);
            }
        }
    }
}
