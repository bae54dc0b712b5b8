//! `flakegen new`, `decode` and `layout`, and the command line's
//! conventions: what a user sees, and the exit status.

mod raw_times;

use std::process::{Command, Output};

fn flakegen(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_flakegen"))
        .args(args)
        .output()
        .unwrap();
    raw_times::refuse_raw_times(&out, false);
    out
}

fn stdout(output: &Output) -> String {
    raw_times::refuse_raw_times(output, false);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    raw_times::refuse_raw_times(output, false);
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
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout(&out).starts_with("1050118621198921728 "),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("error: argument 1: 12x: invalid id"),
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
        &["decode", "--layout", "nonsense"],
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

/// `flakegen new | head -1`: the reader goes away, and the command ends
/// quietly, with status 0, as Unix tools do.
#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let mut child = Command::new(env!("CARGO_BIN_EXE_flakegen"))
        .args(["new", "--worker", "4", "--count", "5000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The pipe's reader is dropped here, as `head -1` exits.
    let out = child.wait_with_output().unwrap();
    assert!(first.contains("worker=4"), "{first}");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("Broken pipe"), "{}", stderr(&out));
}

/// `flakegen new | flakegen decode`: with no IDs, or `-`, decode reads
/// stdin, each line's first word; base32 and decimal alike.
#[test]
fn decode_reads_stdin_in_either_form() {
    use std::io::Write;
    use std::process::Stdio;

    let made = flakegen(&[
        "new",
        "--worker",
        "6",
        "--strategy",
        "mutex",
        "--format",
        "base32",
    ]);
    assert!(made.status.success(), "{}", stderr(&made));
    let base32 = stdout(&made);
    assert_eq!(base32.lines().count(), 3);
    assert!(
        base32
            .lines()
            .all(|l| l.split_whitespace().next().unwrap().len() == 13),
        "{base32}"
    );
    for args in [vec!["decode"], vec!["decode", "-"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_flakegen"))
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("{base32}1050118621198921728\n").as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let lines: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(
            lines[..3].iter().all(|l| l.contains("worker=6")),
            "{lines:?}"
        );
        assert!(lines[3].contains("2018-10-10T20:19:24.211Z"), "{lines:?}");
    }
    // The same ID in both forms decodes alike.
    let out = flakegen(&["decode", "0X4P5A9Y9BC00", "1050118621198921728", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let times: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["time"].clone())
        .collect();
    assert_eq!(times[0], times[1]);
}

/// An ID decoded with another layout than it was made with often lands in
/// the future: said, on stderr, with the likely cause.
#[test]
fn a_time_in_the_future_is_warned_of() {
    let out = flakegen(&["decode", "--layout", "sonyflake", "2126015274351079424"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ahead of this host's clock"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("--layout"), "{}", stderr(&out));
    let out = flakegen(&["decode", "1050118621198921728"]);
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
}

/// A layout whose timestamps have run out can issue nothing: exit status 1,
/// after its description, with what to change.
#[test]
fn a_layout_that_can_issue_nothing_fails() {
    let out = flakegen(&["layout", "timestamp_bits=30"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("already passed"), "{}", stdout(&out));
    assert!(stderr(&out).contains("can issue no ID"), "{}", stderr(&out));
    assert!(stderr(&out).contains("epoch"), "{}", stderr(&out));
    assert!(flakegen(&["layout", "twitter"]).status.success());
}

/// The help of every command that takes a registry URL names every
/// registry of the library's table, and no other scheme.
#[test]
fn the_help_names_every_registry_of_the_table() {
    for args in [
        &["leases", "--help"][..],
        &["leases", "check", "--help"],
        &["leases", "init", "--help"],
        &["new", "--help"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_flakegen"))
            .args(args)
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout).replace('\n', " ");
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            help.contains(&flakegen::lease::RegistryKind::schemes_said()),
            "{args:?}: {help}"
        );
        let named: Vec<&str> = help
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == ':' || c == '/'))
            .filter_map(|word| word.strip_suffix("://"))
            .collect();
        for scheme in named {
            assert!(
                flakegen::lease::REGISTRIES
                    .iter()
                    .any(|k| k.schemes.contains(&scheme)),
                "{args:?} names {scheme}://, which no registry of the table answers to"
            );
        }
    }
}

/// The help of every command that takes a layout names every preset of
/// the library's.
#[test]
fn the_help_names_every_preset_layout() {
    for args in [
        &["new", "--help"][..],
        &["layout", "--help"],
        &["decode", "--help"],
    ] {
        let help = stdout(&flakegen(args));
        for (name, _) in flakegen::Layout::presets() {
            assert!(help.contains(name), "{args:?} leaves out {name}: {help}");
        }
    }
}

/// Lines of stdin that do not read are named by their numbers, and the
/// rest are decoded; the status says the input was wrong.
#[test]
fn decode_names_bad_lines_by_number_and_decodes_the_rest() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flakegen"))
        .arg("decode")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"1050118621198921728\n\xff\xfe\nabc\n\n{\"id\":\"1050118621198921728\"}\n1050118621198921729\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 3, "{}", stdout(&out));
    let said = stderr(&out);
    assert!(said.contains("line 2: not UTF-8"), "{said}");
    assert!(said.contains("line 3: abc"), "{said}");
    assert_eq!(said.lines().count(), 2, "{said}");
}

/// `flakegen new --json | flakegen decode` decodes what `new` made.
#[test]
fn new_in_json_pipes_into_decode() {
    let made = flakegen(&["new", "--worker", "9", "--count", "2", "--json"]);
    assert!(made.status.success(), "{}", stderr(&made));
    let mut child = Command::new(env!("CARGO_BIN_EXE_flakegen"))
        .args(["decode", "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&made.stdout).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let decoded: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let made: Vec<serde_json::Value> = stdout(&made)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(decoded.len(), 6);
    for (d, m) in decoded.iter().zip(&made) {
        assert_eq!((&d["id"], &d["worker"]), (&m["id"], &m["worker"]));
    }
}

/// Thirteen digits are decimal and base32 alike: refused with both
/// readings named, unless `--read-as` says which.
#[test]
fn thirteen_digits_that_read_two_ways_are_refused_unless_told() {
    let out = flakegen(&["decode", "1234567890123"]);
    assert_eq!(out.status.code(), Some(2));
    let said = stderr(&out);
    assert!(
        said.contains("the ID 1234567890123") && said.contains("--read-as"),
        "{said}"
    );
    let base32 = flakegen::Snowflake::from_base32("1234567890123").unwrap();
    assert!(said.contains(&base32.to_string()), "{said}");
    let out = flakegen(&["decode", "--read-as", "decimal", "1234567890123"]);
    assert!(out.status.success());
    assert!(stdout(&out).starts_with("1234567890123 "));
    let out = flakegen(&["decode", "--read-as", "base32", "--json", "1234567890123"]);
    assert!(out.status.success());
    assert!(
        stdout(&out).contains(r#""id":"1234567890123""#),
        "{}",
        stdout(&out)
    );
}

/// `--count 0` is a command-line error, not a quiet nothing.
#[test]
fn a_count_of_zero_is_refused() {
    let out = flakegen(&["new", "--worker", "1", "--count", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--count"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
}

/// Every command's help holds the one table of exit statuses.
#[test]
fn every_command_tells_the_same_exit_statuses() {
    let top = stdout(&flakegen(&["--help"]));
    let table = &top[top.find("Exit status:").expect("a table in --help")..];
    for args in [
        &["new", "--help"][..],
        &["decode", "--help"],
        &["layout", "--help"],
        &["sql", "--help"],
        &["leases", "--help"],
        &["leases", "check", "--help"],
        &["leases", "init", "--help"],
    ] {
        let help = stdout(&flakegen(args));
        assert!(help.contains(table.trim_end()), "{args:?}: {help}");
    }
}

/// A StatefulSet pod's ordinal as its worker id: `orders-3` is 3; a name
/// with no ordinal, or one the layout cannot hold, is refused.
#[test]
fn the_worker_id_comes_from_a_statefulset_ordinal() {
    let new = |hostname: &str| {
        Command::new(env!("CARGO_BIN_EXE_flakegen"))
            .args(["new", "--worker-from", "ordinal", "--count", "1", "--json"])
            .args(["--strategy", "atomic"])
            .env("HOSTNAME", hostname)
            .output()
            .unwrap()
    };
    let out = new("orders-3");
    assert!(out.status.success(), "{}", stderr(&out));
    let line: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(line["worker"], 3);
    let out = new("orders");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("does not end in -<ordinal>"),
        "{}",
        stderr(&out)
    );
    let out = new("orders-1024");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("0 to 1023"), "{}", stderr(&out));
}

/// What `flakegen decode` says of `input` on stdin, given `args`.
fn decode_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;

    let mut child = Command::new(env!("CARGO_BIN_EXE_flakegen"))
        .arg("decode")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// `flakegen new --layout discord --json | flakegen decode`: the JSON line
/// names its layout and decode uses it (it printed 2022 dates, with
/// Twitter's epoch, and exited 0); a `--layout` that contradicts it is
/// refused with exit 2, one that repeats it is fine.
#[test]
fn decode_uses_the_layout_a_json_line_names() {
    let made = flakegen(&[
        "new",
        "--layout",
        "discord",
        "--worker",
        "37",
        "--strategy",
        "atomic",
        "--json",
        "--count",
        "2",
    ]);
    assert!(made.status.success(), "{}", stderr(&made));
    assert!(
        stdout(&made).contains(r#""layout":"discord""#),
        "{}",
        stdout(&made)
    );
    let out = decode_stdin(&[], &made.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    let year = humantime_year();
    for line in stdout(&out).lines() {
        assert!(line.contains("layout=discord"), "{line}");
        assert!(line.contains("worker=1 process=5"), "{line}");
        assert!(line.contains(&format!(" {year}-")), "{line}");
    }
    let out = decode_stdin(&["--layout", "discord"], &made.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = decode_stdin(&["--layout", "twitter"], &made.stdout);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("made with the layout discord, but --layout says twitter"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
}

/// This year, as `flakegen new` prints times.
fn humantime_year() -> String {
    let made = flakegen(&[
        "new",
        "--worker",
        "1",
        "--strategy",
        "atomic",
        "--count",
        "1",
    ]);
    let time = stdout(&made).split_whitespace().nth(1).unwrap().to_owned();
    time[..4].to_owned()
}

/// The check that every test runs over the outputs can fail: a raw time
/// in prose is caught, a JSON line's and a key=value's are not.
#[test]
fn the_raw_time_check_catches_one() {
    use std::os::unix::process::ExitStatusExt;

    let output = |text: &str| Output {
        status: std::process::ExitStatus::from_raw(0),
        stdout: text.as_bytes().to_vec(),
        stderr: vec![],
    };
    for raw in [
        "the fence (unix ms 1796151863658) was reached",
        "the fence, 1796151863658, was reached",
    ] {
        let caught = std::panic::catch_unwind(|| raw_times::refuse_raw_times(&output(raw), true));
        assert!(caught.is_err(), "not caught: {raw}");
    }
    for fine in [
        r#"{"unix_ms":1796151863658}"#,
        "epoch_unix_millis=1288834974657",
        r#"namespace "dropped-11917-1796158265136": no trace here"#,
        "2026-12-01T19:04:23.658Z, 3.2 s ago",
    ] {
        raw_times::refuse_raw_times(&output(fine), true);
    }
}
