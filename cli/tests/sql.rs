//! `flakegen sql` against the real servers of `scripts/services.sh`: the
//! functions it prints decode every preset's IDs in PostgreSQL and MariaDB
//! exactly as the library does, bound them by time as `first_id_at` and
//! `last_id_at` do, and a range query between those bounds is planned as
//! a range over the primary key's index.
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo test -p flakegen-cli --test sql
//! ```
//!
//! The URLs must be set, and `psql` and `mariadb` on the path (the script
//! installs them): the tests never pass by skipping.

use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use flakegen::{Fields, Layout, Snowflake};

#[allow(dead_code, unreachable_pub)]
#[path = "../../tests/common/services.rs"]
mod services;

/// IDs per preset.
const COUNT: u64 = 100_000;

fn url(backend: &str) -> String {
    services::url(backend, "")
}

/// What `flakegen sql` prints for `dialect`, `layout` and `prefix`.
///
/// Each test names its functions with a prefix of its own: the tests run
/// side by side, and MariaDB replaces a function by a `DROP` and then a
/// `CREATE`, between which another test's call finds none.
fn functions(dialect: &str, layout: &str, prefix: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_flakegen"))
        .args([
            "sql",
            "--dialect",
            dialect,
            "--layout",
            layout,
            "--prefix",
            prefix,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `script` through a database's command-line client on stdin;
/// what it prints.
fn run(program: &str, args: &[&str], script: &str) -> String {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e} (scripts/services.sh installs it)"));
    let mut stdin = child.stdin.take().unwrap();
    let script = script.to_owned();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(script.as_bytes()).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "{program}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn psql(script: &str) -> String {
    let url = url("postgres");
    run(
        "psql",
        &[&url, "-qtA", "-v", "ON_ERROR_STOP=1", "-F", " "],
        script,
    )
}

fn mariadb(script: &str) -> String {
    let url = url("mysql");
    let rest = url.split_once('@').unwrap().1;
    let (host, port) = rest.split('/').next().unwrap().split_once(':').unwrap();
    let args = [
        "-h",
        host,
        "-P",
        port,
        "-u",
        "flakegen",
        "-pflakegen-test",
        "-N",
        "-B",
    ];
    let mut all = args.to_vec();
    all.push("flakegen");
    run("mariadb", &all, script)
}

/// `COUNT` IDs of `layout`, spread over its lifetime (as far as a signed
/// `BIGINT` holds them) with every worker and sequence bit in play.
fn ids(layout: &Layout) -> Vec<Snowflake> {
    let shift = layout.shift(flakegen::Field::Timestamp);
    let top = layout.max_timestamp().min(i64::MAX as u64 >> shift);
    (0..COUNT)
        .map(|i| {
            let spread = |n: u64, max: u64| n.wrapping_mul(0x9E37_79B9_7F4A_7C15) % (max + 1);
            let fields = Fields {
                timestamp: i * (top / COUNT) + spread(i, top / COUNT),
                worker: spread(i + 1, layout.max_worker()),
                sequence: spread(i + 2, layout.max_sequence()),
            };
            layout.compose(fields).unwrap()
        })
        .collect()
}

/// Microseconds since 1970 of `time`.
fn micros(time: SystemTime) -> u64 {
    u64::try_from(time.duration_since(UNIX_EPOCH).unwrap().as_micros()).unwrap()
}

/// What the library says of `id`: `id worker sequence µs`, as the queries
/// below print it.
fn expected(layout: &Layout, id: Snowflake) -> String {
    let fields = layout.decode(id).unwrap();
    let time = micros(layout.time_of(fields.timestamp));
    format!("{id} {} {} {time}", fields.worker, fields.sequence)
}

/// A time in each tenth of `layout`'s signed-`BIGINT` life (at most 60
/// years), at odd microseconds, with the bounds the library gives it.
fn times(layout: &Layout) -> Vec<(SystemTime, Snowflake, Snowflake)> {
    let shift = layout.shift(flakegen::Field::Timestamp);
    let top = layout.max_timestamp().min(i64::MAX as u64 >> shift);
    let signed = layout.time_of(top).duration_since(layout.epoch()).unwrap();
    let life = signed.min(Duration::from_secs(60 * 365 * 86_400));
    (1..10)
        .map(|tenth| {
            let t = layout.epoch() + life / 10 * tenth + Duration::from_micros(123_457);
            (
                t,
                layout.first_id_at(t).unwrap(),
                layout.last_id_at(t).unwrap(),
            )
        })
        .collect()
}

fn rfc3339_micros(time: SystemTime) -> String {
    let micros = micros(time);
    let seconds = micros / 1_000_000;
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:06}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        micros % 1_000_000
    )
}

/// Every preset's IDs decoded by PostgreSQL as by the library, and the
/// bounds of times alike.
#[test]
fn postgres_decodes_every_preset_as_the_library_does() {
    for (name, layout) in Layout::presets() {
        let prefix = format!("fgtest_{name}_");
        let ids = ids(layout);
        let mut script = functions("postgres", name, &prefix);
        let _ = writeln!(script, "CREATE TEMP TABLE ids (id bigint);");
        let _ = writeln!(script, "COPY ids FROM STDIN;");
        for id in &ids {
            let _ = writeln!(script, "{id}");
        }
        let _ = writeln!(script, "\\.");
        let _ = writeln!(
            script,
            "SELECT id, {prefix}worker(id), {prefix}sequence(id), \
             (extract(epoch from ({prefix}time(id) - timestamptz 'epoch')) * 1000000)::bigint \
             FROM ids ORDER BY id;"
        );
        for (t, _, _) in times(layout) {
            let t = rfc3339_micros(t);
            let _ = writeln!(
                script,
                "SELECT {prefix}first_id('{t}+00'), {prefix}last_id('{t}+00');"
            );
        }
        let said = psql(&script);
        let mut lines = said.lines();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        for (i, id) in sorted.iter().enumerate() {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("{name}: {i} rows of {COUNT}"));
            assert_eq!(line, expected(layout, *id), "{name}: row {i}");
        }
        for (t, first, last) in times(layout) {
            let line = lines.next().unwrap();
            assert_eq!(line, format!("{first} {last}"), "{name}: {t:?}");
        }
    }
}

/// Every preset's IDs decoded by MariaDB as by the library, and the
/// bounds of times alike.
#[test]
fn mariadb_decodes_every_preset_as_the_library_does() {
    for (name, layout) in Layout::presets() {
        let prefix = format!("fgtest_{name}_");
        let ids = ids(layout);
        let mut script = functions("mysql", name, &prefix);
        let _ = writeln!(
            script,
            "CREATE TEMPORARY TABLE fgtest_ids (id BIGINT PRIMARY KEY);"
        );
        for chunk in ids.chunks(5_000) {
            let values: Vec<String> = chunk.iter().map(|id| format!("({id})")).collect();
            let _ = writeln!(
                script,
                "INSERT INTO fgtest_ids VALUES {};",
                values.join(",")
            );
        }
        let _ = writeln!(
            script,
            "SELECT id, {prefix}worker(id), {prefix}sequence(id), \
             TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {prefix}time(id)) \
             FROM fgtest_ids ORDER BY id;"
        );
        for (t, _, _) in times(layout) {
            let t = rfc3339_micros(t);
            let _ = writeln!(
                script,
                "SELECT {prefix}first_id('{t}'), {prefix}last_id('{t}');"
            );
        }
        let said = mariadb(&script);
        let mut lines = said.lines().map(|l| l.replace('\t', " "));
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        for (i, id) in sorted.iter().enumerate() {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("{name}: {i} rows of {COUNT}"));
            assert_eq!(line, expected(layout, *id), "{name}: row {i}");
        }
        for (t, first, last) in times(layout) {
            let line = lines.next().unwrap();
            assert_eq!(line, format!("{first} {last}"), "{name}: {t:?}");
        }
    }
}

/// A query for the IDs of an hour, between the bounds the functions give,
/// on an indexed ID column: PostgreSQL plans an index scan with the
/// bounds as its condition, MariaDB a range over the primary key.
#[test]
fn a_range_between_the_bounds_of_a_time_scans_the_index() {
    let layout = Layout::TWITTER;
    let ids = ids(&layout);
    let hour = ("2026-11-28 09:00:00", "2026-11-28 10:00:00");
    let mut script = functions("postgres", "twitter", "fgtest_scan_twitter_");
    let _ = writeln!(
        script,
        "CREATE TEMP TABLE orders (id bigint PRIMARY KEY, item text);\nCOPY orders FROM STDIN;"
    );
    for id in &ids {
        let _ = writeln!(script, "{id}\tx");
    }
    let _ = writeln!(script, "\\.\nANALYZE orders;");
    let _ = writeln!(
        script,
        "EXPLAIN SELECT * FROM orders WHERE id BETWEEN \
         fgtest_scan_twitter_first_id('{}+00') AND fgtest_scan_twitter_last_id('{}+00');",
        hour.0, hour.1
    );
    let plan = psql(&script);
    assert!(
        plan.contains("Index") && plan.contains("Index Cond") && !plan.contains("Seq Scan"),
        "postgres: {plan}"
    );

    let mut script = functions("mysql", "twitter", "fgtest_scan_twitter_");
    let _ = writeln!(
        script,
        "CREATE TEMPORARY TABLE fgtest_orders (id BIGINT PRIMARY KEY, item VARCHAR(8));"
    );
    for chunk in ids.chunks(5_000) {
        let values: Vec<String> = chunk.iter().map(|id| format!("({id},'x')")).collect();
        let _ = writeln!(
            script,
            "INSERT INTO fgtest_orders VALUES {};",
            values.join(",")
        );
    }
    let _ = writeln!(script, "ANALYZE TABLE fgtest_orders;");
    let _ = writeln!(
        script,
        "EXPLAIN SELECT * FROM fgtest_orders WHERE id BETWEEN \
         fgtest_scan_twitter_first_id('{}') AND fgtest_scan_twitter_last_id('{}');",
        hour.0, hour.1
    );
    let plan = mariadb(&script);
    let explained = plan.lines().last().unwrap_or_default();
    let columns: Vec<&str> = explained.split('\t').collect();
    // id, select_type, table, type, possible_keys, key, ...
    assert_eq!(
        (columns.get(3), columns.get(5)),
        (Some(&"range"), Some(&"PRIMARY")),
        "mariadb: {plan}"
    );
}

/// A bound past a signed `BIGINT` (Instagram's IDs pass it in 2046) is an
/// error in both databases, never a wrapped, negative ID.
#[test]
fn a_bound_past_a_bigint_is_an_error() {
    let past = "2050-01-01 00:00:00";
    let attempt = |program: &str, script: String| {
        let mut child = Command::new(program)
            .args(if program == "psql" {
                vec![
                    url("postgres"),
                    "-qtA".into(),
                    "-v".into(),
                    "ON_ERROR_STOP=1".into(),
                ]
            } else {
                let url = url("mysql");
                let rest = url.split_once('@').unwrap().1.to_owned();
                let (host, port) = rest.split('/').next().unwrap().split_once(':').unwrap();
                [
                    "-h",
                    host,
                    "-P",
                    port,
                    "-u",
                    "flakegen",
                    "-pflakegen-test",
                    "-N",
                    "flakegen",
                ]
                .map(str::to_owned)
                .to_vec()
            })
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(script.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let pg = functions("postgres", "instagram", "fgtest_past_instagram_")
        + &format!("SELECT fgtest_past_instagram_first_id('{past}+00');\n");
    let out = attempt("psql", pg);
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("bigint out of range"));
    let my = functions("mysql", "instagram", "fgtest_past_instagram_")
        + &format!("SELECT fgtest_past_instagram_last_id('{past}');\n");
    let out = attempt("mariadb", my);
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("Out of range"));
}
