//! IDs where a browser reads them: a real JavaScript `JSON.parse` (node's)
//! reads a million IDs of [`Layout::JAVASCRIPT`] that the crate wrote as
//! JSON numbers, writes them back, and the crate finds every one intact;
//! the same trip rounds Twitter-layout IDs sent as numbers, and keeps them
//! sent as strings, flakegen's default.
//!
//! ```text
//! cargo test --features serde --test javascript
//! ```
//!
//! Needs `node` on the path (Node 20 here): without it the test fails and
//! says so, never passes by skipping.

#![cfg(feature = "serde")]

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use flakegen::{Fields, Layout, Snowflake};

#[derive(serde::Serialize, serde::Deserialize)]
struct AsNumber(#[serde(with = "flakegen::serde::as_safe_number")] Snowflake);

#[derive(serde::Serialize, serde::Deserialize)]
struct Unchecked(#[serde(with = "flakegen::serde::as_number")] Snowflake);

/// `count` IDs of `layout` spread over its whole life, every worker and
/// sequence bit in play, its very last ID among them.
fn ids(layout: &Layout, count: u64) -> Vec<Snowflake> {
    let spread = |n: u64, max: u64| n.wrapping_mul(0x9E37_79B9_7F4A_7C15) % (max + 1);
    let step = layout.max_timestamp() / count;
    let mut ids: Vec<Snowflake> = (0..count)
        .map(|i| {
            let fields = Fields {
                timestamp: i * step + spread(i, step.saturating_sub(1)),
                worker: spread(i + 1, layout.max_worker()),
                sequence: spread(i + 2, layout.max_sequence()),
            };
            layout.compose(fields).unwrap()
        })
        .collect();
    let last = Fields {
        timestamp: layout.max_timestamp(),
        worker: layout.max_worker(),
        sequence: layout.max_sequence(),
    };
    ids.push(layout.compose(last).unwrap());
    ids
}

/// `json` through node: `JSON.stringify(JSON.parse(json))`.
fn through_javascript(json: &str) -> String {
    // A directory per call: the tests run at once and each removes its own.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("flakegen-js-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (input, output) = (dir.join("in.json"), dir.join("out.json"));
    std::fs::write(&input, json).unwrap();
    let script = "const fs = require('fs'); \
                  fs.writeFileSync(process.argv[2], JSON.stringify(JSON.parse(fs.readFileSync(process.argv[1], 'utf8'))));";
    let status = Command::new("node")
        .args(["-e", script])
        .arg(&input)
        .arg(&output)
        .status()
        .unwrap_or_else(|e| {
            panic!("node: {e}: this test needs node on the path (Debian: apt install nodejs)")
        });
    assert!(status.success(), "node failed");
    let back = std::fs::read_to_string(&output).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    back
}

#[test]
fn a_million_ids_of_the_javascript_layout_cross_json_parse_intact() {
    let sent = ids(&Layout::JAVASCRIPT, 1_000_000);
    let numbers: Vec<AsNumber> = sent.iter().copied().map(AsNumber).collect();
    let json = serde_json::to_string(&numbers).unwrap();
    assert!(
        json.starts_with("[") && !json.contains('"'),
        "numbers, not strings"
    );
    let back: Vec<AsNumber> = serde_json::from_str(&through_javascript(&json)).unwrap();
    assert_eq!(back.len(), sent.len());
    let mismatches = sent.iter().zip(&back).filter(|(a, b)| **a != b.0).count();
    println!(
        "{} IDs of Layout::JAVASCRIPT through node's JSON.parse: {mismatches} changed",
        sent.len()
    );
    assert_eq!(mismatches, 0);
}

#[test]
fn wider_ids_are_rounded_as_numbers_and_kept_as_strings() {
    let sent = ids(&Layout::TWITTER, 10_000);
    // As plain numbers: JavaScript rounds what lies above 2^53.
    let numbers: Vec<Unchecked> = sent.iter().copied().map(Unchecked).collect();
    let json = serde_json::to_string(&numbers).unwrap();
    let back: Vec<Unchecked> = serde_json::from_str(&through_javascript(&json)).unwrap();
    let rounded = sent.iter().zip(&back).filter(|(a, b)| **a != b.0).count();
    let above = sent
        .iter()
        .filter(|id| id.as_u64() > flakegen::serde::MAX_SAFE_INTEGER)
        .count();
    println!(
        "{} Twitter-layout IDs as JSON numbers: {rounded} changed ({above} above 2^53)",
        sent.len()
    );
    assert!(rounded > 0 && rounded <= above, "{rounded} of {above}");
    // As strings, the default form: intact.
    let json = serde_json::to_string(&sent).unwrap();
    let back: Vec<Snowflake> = serde_json::from_str(&through_javascript(&json)).unwrap();
    assert_eq!(back, sent);
    // And the safe form refuses them rather than let them be rounded.
    let refused = serde_json::to_string(&AsNumber(*sent.last().unwrap())).unwrap_err();
    assert!(refused.to_string().contains("2^53"), "{refused}");
}
