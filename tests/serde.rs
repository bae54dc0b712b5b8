//! The `serde` feature: strings in JSON, integers in a binary format, either read back.

#![cfg(feature = "serde")]

use flakegen::Snowflake;
use serde::{Deserialize, Serialize};

const BIG: u64 = 1_050_118_621_198_921_728; // above 2^53: a JavaScript number would round it

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Row {
    id: Snowflake,
    #[serde(with = "flakegen::serde::as_number")]
    parent: Snowflake,
}

fn row() -> Row {
    Row {
        id: Snowflake::from_u64(BIG),
        parent: Snowflake::from_u64(BIG + 1),
    }
}

#[test]
fn json_writes_strings_by_default_and_numbers_on_request() {
    let json = serde_json::to_string(&row()).unwrap();
    assert_eq!(json, format!(r#"{{"id":"{BIG}","parent":{}}}"#, BIG + 1));
    assert_eq!(serde_json::from_str::<Row>(&json).unwrap(), row());
}

#[test]
fn json_reads_numbers_and_strings_alike() {
    for text in [format!("{BIG}"), format!(r#""{BIG}""#)] {
        assert_eq!(
            serde_json::from_str::<Snowflake>(&text).unwrap(),
            Snowflake::from_u64(BIG)
        );
    }
    let both_strings = format!(r#"{{"id":"{BIG}","parent":"{}"}}"#, BIG + 1);
    assert_eq!(serde_json::from_str::<Row>(&both_strings).unwrap(), row());
}

#[test]
fn json_rejects_what_is_not_an_id() {
    for bad in [
        r#""12x""#,
        "-1",
        r#""""#,
        "1.5",
        "null",
        r#""18446744073709551616""#,
    ] {
        let e = serde_json::from_str::<Snowflake>(bad)
            .unwrap_err()
            .to_string();
        assert!(!e.is_empty(), "{bad}");
    }
    let e = serde_json::from_str::<Snowflake>("-1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("negative"), "{e}");
}

#[test]
fn postcard_writes_a_varint_and_reads_it_back() {
    let bytes = postcard::to_allocvec(&row()).unwrap();
    // Two u64 varints of 9 bytes each: no decimal strings in a binary format.
    assert_eq!(bytes.len(), 18);
    assert_eq!(postcard::from_bytes::<Row>(&bytes).unwrap(), row());
    let id: Snowflake =
        postcard::from_bytes(&postcard::to_allocvec(&Snowflake::from_u64(7)).unwrap()).unwrap();
    assert_eq!(id.as_u64(), 7);
}
