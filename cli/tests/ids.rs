//! `flakegen new`, `decode` and `layout`, and the command line's
//! conventions: what a user sees, and the exit status.

use std::process::{Command, Output};

fn flakegen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flakegen"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn decode_says_each_field_in_text_and_json() {
    let out = flakegen(&["decode", "1050118621198921728"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "1050118621198921728  2018-10-10T20:19:24.211Z  worker=347 sequence=0     layout=twitter\n"
    );
    let out = flakegen(&[
        "decode",
        "--json",
        "--layout",
        "discord",
        "175928847299117063",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["id"], "175928847299117063");
    assert_eq!(json["time"], "2016-04-30T11:18:25.796Z");
    assert_eq!(
        (json["worker"].as_u64(), json["process"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(json["sequence"], 7);
}

#[test]
fn an_id_that_does_not_decode_is_an_error_after_the_rest() {
    let out = flakegen(&["decode", "12x", "1050118621198921728"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).starts_with("1050118621198921728 "),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("error: 12x: invalid id"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn new_issues_increasing_ids_with_each_strategy() {
    let out = flakegen(&["new", "--count", "2", "--worker", "9", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6);
    let ids: Vec<u64> = lines
        .iter()
        .map(|l| l["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(lines.iter().all(|l| l["worker"] == 9));
    assert_eq!(lines[5]["strategy"], "ticker");
}

#[test]
fn layout_says_capacity_and_end() {
    let out = flakegen(&["layout", "twitter", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["workers"], 1024);
    assert_eq!(json["ids_per_second"], 4_096_000);
    assert_eq!(json["end"], "2080-07-10T17:30:30.209Z");
    let out = flakegen(&["layout", "worker_bits=30,sequence_bits=30"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("invalid layout"), "{}", stderr(&out));
}

#[test]
fn a_bad_command_line_exits_2_and_every_command_has_help() {
    for args in [
        &[][..],
        &["decode"],
        &["leases"],
        &["new", "--strategy", "fast"],
    ] {
        let out = flakegen(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stdout(&out));
        assert!(out.stdout.is_empty(), "{args:?}: errors go to stderr");
    }
    for command in ["new", "decode", "layout", "leases", "leases check"] {
        let mut args: Vec<&str> = command.split(' ').collect();
        args.push("--help");
        let out = flakegen(&args);
        assert!(out.status.success(), "{command} --help");
        assert!(stdout(&out).contains("Usage: flakegen"), "{command}");
    }
}
