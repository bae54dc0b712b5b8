//! Keys for a sharded database, end to end, against a real PostgreSQL.
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo run --release --features postgres --example sharded -- "$FLAKEGEN_TEST_POSTGRES_URL"
//! ```
//!
//! It creates `--shards` tables and inserts `--rows` rows keyed by IDs from
//! one generator, each routed to its table by `Snowflake::shard`. So that there
//! is history to ask about, the IDs are made as if the rows had arrived
//! evenly over the past hour (the generator reads a clock that walks through
//! that hour). It prints the rows per shard. Then it answers "rows created in
//! the last N seconds" in every shard with a primary-key range built from
//! the layout, and prints the plan (`EXPLAIN`) that shows an index range scan.
//!
//! A bad URL, or a server that is down, is a one-line error naming the
//! address, and a non-zero exit.

use std::num::NonZeroU32;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::Parser;
use flakegen::{Builder, Fields, IdGenerator, Layout, ManualClock, Snowflake};
use postgres::NoTls;

/// Shard rows by Snowflake ID in PostgreSQL, then query a time range by key.
#[derive(Parser)]
struct Args {
    /// postgres://user:password@host:port/database
    #[arg(env = "FLAKEGEN_TEST_POSTGRES_URL")]
    url: String,
    /// How many shard tables.
    #[arg(long, default_value_t = 4)]
    shards: u32,
    /// How many rows in all.
    #[arg(long, default_value_t = 100_000)]
    rows: u64,
    /// Ask for the rows created in the last this many seconds.
    #[arg(long, default_value_t = 60)]
    last_seconds: u64,
}

const LAYOUT: Layout = Layout::TWITTER;
const HISTORY: Duration = Duration::from_secs(3_600);

fn table(shard: u32) -> String {
    format!("sharded_orders_{shard}")
}

fn run(args: &Args) -> Result<(), String> {
    let config: postgres::Config = args
        .url
        .parse()
        .map_err(|e| format!("invalid PostgreSQL URL: {e}"))?;
    let address = match (config.get_hosts().first(), config.get_ports().first()) {
        (Some(postgres::config::Host::Tcp(host)), port) => {
            format!("{host}:{}", port.unwrap_or(&5432))
        }
        _ => "the server in the URL".to_owned(),
    };
    let mut config = config;
    config.connect_timeout(Duration::from_secs(3));
    let mut client = config.connect(NoTls).map_err(|e| {
        let cause = std::error::Error::source(&e).map_or(String::new(), |c| format!(" ({c})"));
        format!("cannot connect to PostgreSQL at {address}: {e}{cause}")
    })?;
    let db = |e: postgres::Error| format!("PostgreSQL at {address}: {e}");
    let shards = NonZeroU32::new(args.shards).ok_or("--shards must be at least 1")?;

    for shard in 0..shards.get() {
        client
            .batch_execute(&format!(
                "DROP TABLE IF EXISTS {t}; CREATE TABLE {t} (id BIGINT PRIMARY KEY, item TEXT NOT NULL)",
                t = table(shard)
            ))
            .map_err(db)?;
    }

    // One generator, reading a clock that walks through the past hour.
    let now = SystemTime::now();
    let clock = ManualClock::new(now - HISTORY);
    let generator = Builder::new()
        .layout(LAYOUT)
        .worker(1)
        .clock(clock.clone())
        .build_atomic()
        .map_err(|e| e.to_string())?;
    let step = HISTORY / u32::try_from(args.rows.max(1)).map_err(|_| "--rows is too large")?;
    let mut per_shard: Vec<Vec<Snowflake>> = vec![vec![]; shards.get() as usize];
    for _ in 0..args.rows {
        let id = generator.next_id().map_err(|e| e.to_string())?;
        per_shard[id.shard(shards) as usize].push(id);
        clock.advance(step);
    }
    for (shard, ids) in per_shard.iter().enumerate() {
        let items: Vec<String> = ids.iter().map(|id| format!("order {id}")).collect();
        for (ids, items) in ids.chunks(10_000).zip(items.chunks(10_000)) {
            client
                .execute(
                    &format!(
                        "INSERT INTO {} (id, item) SELECT * FROM unnest($1::bigint[], $2::text[])",
                        table(shard as u32)
                    ),
                    &[&ids, &items],
                )
                .map_err(db)?;
        }
        client
            .batch_execute(&format!("ANALYZE {}", table(shard as u32)))
            .map_err(db)?;
    }

    println!(
        "{} rows over {} shards, routed by Snowflake::shard:",
        args.rows, shards
    );
    for shard in 0..shards.get() {
        let count: i64 = client
            .query_one(&format!("SELECT count(*) FROM {}", table(shard)), &[])
            .map_err(db)?
            .get(0);
        println!("  {:<18} {count:>8} rows", table(shard));
    }

    // "Created in the last N seconds" is a key range: from the first ID of
    // the unit N seconds ago to the last possible ID of this unit.
    let since = now - Duration::from_secs(args.last_seconds);
    let low = LAYOUT
        .compose(Fields {
            timestamp: LAYOUT.timestamp_at(since),
            worker: 0,
            sequence: 0,
        })
        .map_err(|e| e.to_string())?;
    let high = LAYOUT
        .compose(Fields {
            timestamp: LAYOUT.timestamp_at(now),
            worker: LAYOUT.max_worker(),
            sequence: LAYOUT.max_sequence(),
        })
        .map_err(|e| e.to_string())?;
    let expected = per_shard
        .iter()
        .flatten()
        .filter(|id| **id >= low && **id <= high)
        .count();
    println!(
        "\nrows created in the last {} s: id BETWEEN {low} AND {high}",
        args.last_seconds
    );
    let mut found = 0;
    for shard in 0..shards.get() {
        let count: i64 = client
            .query_one(
                &format!(
                    "SELECT count(*) FROM {} WHERE id BETWEEN $1 AND $2",
                    table(shard)
                ),
                &[&low, &high],
            )
            .map_err(db)?
            .get(0);
        println!("  {:<18} {count:>8} rows", table(shard));
        found += count as usize;
    }
    println!(
        "  {:<18} {found:>8} rows (expected {expected})",
        "all shards"
    );
    if found != expected {
        return Err(format!(
            "the range query found {found} rows, not {expected}"
        ));
    }

    let plan = client
        .query(
            &format!(
                "EXPLAIN SELECT * FROM {} WHERE id BETWEEN $1 AND $2",
                table(0)
            ),
            &[&low, &high],
        )
        .map_err(db)?;
    println!("\nEXPLAIN for {}:", table(0));
    let plan: Vec<String> = plan.iter().map(|row| row.get(0)).collect();
    for line in &plan {
        println!("  {line}");
    }
    if !plan
        .iter()
        .any(|line| line.contains("Index") && line.contains("pkey"))
    {
        return Err("the plan does not use the primary key's index".to_owned());
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
