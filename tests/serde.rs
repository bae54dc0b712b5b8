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

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Config {
    layout: flakegen::Layout,
    strategy: flakegen::Strategy,
}

/// A layout in a configuration file: a preset by name, a custom layout as
/// its fields; a strategy by name. Each reads back as itself, in JSON and
/// in a binary format.
#[test]
fn layouts_and_strategies_round_trip_in_config() {
    use flakegen::{FieldOrder, Layout, Strategy};
    let custom = Layout::builder()
        .timestamp_bits(40)
        .worker_bits(8)
        .sequence_bits(15)
        .unit(std::time::Duration::from_millis(10))
        .epoch_unix_millis(1_704_067_200_000)
        .field_order(FieldOrder::SequenceWorker)
        .build()
        .unwrap();
    let preset = Config {
        layout: Layout::SONYFLAKE,
        strategy: Strategy::Ticker,
    };
    assert_eq!(
        serde_json::to_string(&preset).unwrap(),
        r#"{"layout":"sonyflake","strategy":"ticker"}"#
    );
    let config = Config {
        layout: custom,
        strategy: Strategy::Mutex,
    };
    let json = serde_json::to_string(&config).unwrap();
    assert_eq!(
        json,
        r#"{"layout":{"timestamp_bits":40,"worker_bits":8,"sequence_bits":15,"unit":"10ms","epoch_unix_millis":1704067200000,"field_order":"sequence-worker"},"strategy":"mutex"}"#
    );
    for config in [preset, config] {
        let json = serde_json::to_string(&config).unwrap();
        assert_eq!(serde_json::from_str::<Config>(&json).unwrap(), config);
        let bytes = postcard::to_allocvec(&config).unwrap();
        assert_eq!(postcard::from_bytes::<Config>(&bytes).unwrap(), config);
    }
    // Fields left out take the builder's defaults; bad ones say what is wrong.
    let partial: Config =
        serde_json::from_str(r#"{"layout":{"worker_bits":5},"strategy":"atomic"}"#).unwrap();
    assert_eq!(partial.layout.worker_bits(), 5);
    let bad = serde_json::from_str::<Config>(r#"{"layout":"snowflake","strategy":"atomic"}"#);
    assert!(
        bad.unwrap_err()
            .to_string()
            .contains("twitter, discord, sonyflake, instagram")
    );
    let bad = serde_json::from_str::<Config>(r#"{"layout":"twitter","strategy":"spin"}"#);
    assert!(
        bad.unwrap_err()
            .to_string()
            .contains("atomic, mutex, ticker")
    );
}
