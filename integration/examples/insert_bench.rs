//! The article's claim, measured: random UUID keys "can result in poor insert
//! performance"; time-ordered 64-bit keys should not. Run by
//! `scripts/insert-bench.sh`, which starts PostgreSQL if need be.
//!
//! For each primary key type (`BIGINT` from flakegen, `UUID` v4, random, and
//! `UUID` v7, time-ordered), it creates a table, inserts `--rows` rows in
//! batches (one `INSERT ... SELECT FROM unnest(...)` per `--batch` rows, keys
//! made beforehand so only the database is timed), then inserts as many again
//! into the table now holding the first pass. It prints rows per second and
//! the final sizes of the primary key's index and the table.
//!
//! A bad URL, or a server that is down, is a one-line error naming the
//! address, and a non-zero exit.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use flakegen::{Builder, IdGenerator, Snowflake};
use postgres::{Client, NoTls};
use uuid::Uuid;

/// Insert rows under BIGINT (flakegen), UUID v4 and UUID v7 primary keys.
#[derive(Parser)]
struct Args {
    /// postgres://user:password@host:port/database
    #[arg(env = "FLAKEGEN_TEST_POSTGRES_URL")]
    url: String,
    /// Rows per pass (two passes per key type).
    #[arg(long, default_value_t = 1_000_000)]
    rows: usize,
    /// Rows per INSERT statement.
    #[arg(long, default_value_t = 10_000)]
    batch: usize,
}

/// The keys of one pass, made before the clock starts.
enum Keys {
    Bigint(Vec<Snowflake>),
    Uuid(Vec<Uuid>),
}

struct Kind {
    name: &'static str,
    column: &'static str,
    make: fn(usize) -> Keys,
}

const KINDS: [Kind; 3] = [
    Kind {
        name: "BIGINT (flakegen)",
        column: "bigint",
        make: |n| {
            let generator = Builder::new().worker(1).build_ticker().unwrap();
            let mut ids = vec![Snowflake::default(); n];
            for chunk in ids.chunks_mut(4096) {
                generator.next_ids(chunk).unwrap();
            }
            Keys::Bigint(ids)
        },
    },
    Kind {
        name: "UUID v4 (random)",
        column: "uuid",
        make: |n| Keys::Uuid((0..n).map(|_| Uuid::new_v4()).collect()),
    },
    Kind {
        name: "UUID v7 (time-ordered)",
        column: "uuid",
        make: |n| Keys::Uuid((0..n).map(|_| Uuid::now_v7()).collect()),
    },
];

/// Inserts `keys` with a payload, in batches; returns the time taken.
fn insert(
    client: &mut Client,
    table: &str,
    column: &str,
    keys: &Keys,
    batch: usize,
) -> Result<Duration, postgres::Error> {
    let sql = format!(
        "INSERT INTO {table} (id, payload) SELECT * FROM unnest($1::{column}[], $2::int[])"
    );
    let statement = client.prepare(&sql)?;
    let start = Instant::now();
    let len = match keys {
        Keys::Bigint(k) => k.len(),
        Keys::Uuid(k) => k.len(),
    };
    for from in (0..len).step_by(batch) {
        let to = (from + batch).min(len);
        let payload: Vec<i32> = (from..to).map(|i| i as i32).collect();
        match keys {
            Keys::Bigint(k) => client.execute(&statement, &[&&k[from..to], &payload])?,
            Keys::Uuid(k) => client.execute(&statement, &[&&k[from..to], &payload])?,
        };
    }
    Ok(start.elapsed())
}

fn run(args: &Args) -> Result<(), String> {
    let mut config: postgres::Config = args
        .url
        .parse()
        .map_err(|e| format!("invalid PostgreSQL URL: {e}"))?;
    let address = match (config.get_hosts().first(), config.get_ports().first()) {
        (Some(postgres::config::Host::Tcp(host)), port) => {
            format!("{host}:{}", port.unwrap_or(&5432))
        }
        _ => "the server in the URL".to_owned(),
    };
    config.connect_timeout(Duration::from_secs(3));
    let mut client = config.connect(NoTls).map_err(|e| {
        let cause = std::error::Error::source(&e).map_or(String::new(), |c| format!(" ({c})"));
        format!("cannot connect to PostgreSQL at {address}: {e}{cause}")
    })?;
    let db = |e: postgres::Error| format!("PostgreSQL at {address}: {e}");
    let settings: Vec<String> = [
        "server_version",
        "shared_buffers",
        "synchronous_commit",
        "fsync",
    ]
    .iter()
    .map(|name| {
        client
            .query_one(&format!("SHOW {name}"), &[])
            .map(|row| format!("{name}={}", row.get::<_, String>(0)))
            .map_err(db)
    })
    .collect::<Result<_, _>>()?;
    println!(
        "{} rows per pass, {} per INSERT; {}",
        args.rows,
        args.batch,
        settings.join(", ")
    );
    println!();
    println!("| primary key | pass | rows/s | index size | table size |");
    println!("|---|---|---|---|---|");
    for (i, kind) in KINDS.iter().enumerate() {
        let table = format!("insert_bench_{i}");
        client
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS {table}; \
                 CREATE TABLE {table} (id {} PRIMARY KEY, payload INT NOT NULL); CHECKPOINT",
                kind.column
            ))
            .map_err(db)?;
        for pass in ["empty table", "holding pass 1"] {
            let keys = (kind.make)(args.rows);
            let took =
                insert(&mut client, &table, kind.column, &keys, args.batch.max(1)).map_err(db)?;
            let sizes = client
                .query_one(
                    &format!(
                        "SELECT pg_size_pretty(pg_relation_size('{table}_pkey')), \
                                pg_size_pretty(pg_table_size('{table}'))"
                    ),
                    &[],
                )
                .map_err(db)?;
            let (index, size): (String, String) = (sizes.get(0), sizes.get(1));
            println!(
                "| {} | {pass} | {:.0} | {index} | {size} |",
                kind.name,
                args.rows as f64 / took.as_secs_f64()
            );
        }
        client
            .batch_execute(&format!("DROP TABLE {table}"))
            .map_err(db)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
