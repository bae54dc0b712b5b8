//! Keys for a sharded database, end to end, against a real PostgreSQL or
//! MySQL/MariaDB (the article's sharded MySQL), through sqlx.
//!
//! ```text
//! eval "$(scripts/services.sh start)"
//! cargo run --release --features sqlx --example sharded -- "$FLAKEGEN_TEST_POSTGRES_URL"
//! cargo run --release --features sqlx --example sharded -- "$FLAKEGEN_TEST_MYSQL_URL"
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
use flakegen::clock::ManualClock;
use flakegen::{Builder, Fields, IdGenerator, Layout, Snowflake};
use sqlx::{AnyConnection, Connection, Row};

/// Shard rows by Snowflake ID in PostgreSQL or MySQL, then query a time range by key.
#[derive(Parser)]
struct Args {
    /// postgres://user:password@host:port/database or mysql://user:password@host:port/database
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

/// What differs between the two databases.
#[derive(Clone, Copy, PartialEq)]
enum Dialect {
    Postgres,
    MySql,
}

impl Dialect {
    fn of(url: &str) -> Result<Dialect, String> {
        let scheme = url
            .split_once("://")
            .map_or("", |(s, _)| s)
            .to_ascii_lowercase();
        match scheme.as_str() {
            "postgres" | "postgresql" => Ok(Dialect::Postgres),
            "mysql" | "mariadb" => Ok(Dialect::MySql),
            _ => Err(format!(
                "{scheme:?} URLs are not supported: use postgres:// or mysql://"
            )),
        }
    }

    /// The `n`th (from 1) bind parameter.
    fn param(self, n: usize) -> String {
        match self {
            Dialect::Postgres => format!("${n}"),
            Dialect::MySql => "?".to_owned(),
        }
    }

    fn analyze(self, table: &str) -> String {
        match self {
            Dialect::Postgres => format!("ANALYZE {table}"),
            Dialect::MySql => format!("ANALYZE TABLE {table}"),
        }
    }
}

const LAYOUT: Layout = Layout::TWITTER;
const HISTORY: Duration = Duration::from_secs(3_600);

fn table(shard: u32) -> String {
    format!("sharded_orders_{shard}")
}

/// Rows per multi-row INSERT: two parameters each, well under both
/// databases' limit of 65,535 per statement.
const BATCH: usize = 1_000;

async fn run(args: &Args) -> Result<(), String> {
    let dialect = Dialect::of(&args.url)?;
    sqlx::any::install_default_drivers();
    let address = args
        .url
        .rsplit_once('@')
        .map_or(args.url.as_str(), |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or("the server in the URL")
        .to_owned();
    let connect = AnyConnection::connect(&args.url);
    let mut db = tokio::time::timeout(Duration::from_secs(3), connect)
        .await
        .map_err(|_| format!("cannot connect to {address}: no answer within 3 s"))?
        .map_err(|e| format!("cannot connect to {address}: {e}"))?;
    let failed = |e: sqlx::Error| format!("{address}: {e}");
    let shards = NonZeroU32::new(args.shards).ok_or("--shards must be at least 1")?;

    for shard in 0..shards.get() {
        let t = table(shard);
        sqlx::query(&format!("DROP TABLE IF EXISTS {t}"))
            .execute(&mut db)
            .await
            .map_err(failed)?;
        sqlx::query(&format!(
            "CREATE TABLE {t} (id BIGINT PRIMARY KEY, item VARCHAR(64) NOT NULL)"
        ))
        .execute(&mut db)
        .await
        .map_err(failed)?;
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
        let t = table(shard as u32);
        for batch in ids.chunks(BATCH) {
            let rows: Vec<String> = (0..batch.len())
                .map(|i| {
                    format!(
                        "({}, {})",
                        dialect.param(2 * i + 1),
                        dialect.param(2 * i + 2)
                    )
                })
                .collect();
            let sql = format!("INSERT INTO {t} (id, item) VALUES {}", rows.join(", "));
            let mut insert = sqlx::query(&sql);
            for id in batch {
                insert = insert.bind(*id).bind(format!("order {id}"));
            }
            insert.execute(&mut db).await.map_err(failed)?;
        }
        sqlx::query(&dialect.analyze(&t))
            .execute(&mut db)
            .await
            .map_err(failed)?;
    }

    println!(
        "{} rows over {} shards, routed by Snowflake::shard:",
        args.rows, shards
    );
    for shard in 0..shards.get() {
        let count: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {}", table(shard)))
            .fetch_one(&mut db)
            .await
            .map_err(failed)?;
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
    let range = |t: &str| {
        format!(
            "SELECT count(*) FROM {t} WHERE id BETWEEN {} AND {}",
            dialect.param(1),
            dialect.param(2)
        )
    };
    let mut found = 0;
    for shard in 0..shards.get() {
        let count: i64 = sqlx::query_scalar(&range(&table(shard)))
            .bind(low)
            .bind(high)
            .fetch_one(&mut db)
            .await
            .map_err(failed)?;
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

    let explain = format!("EXPLAIN {}", range(&table(0)).replace("count(*)", "*"));
    let plan = sqlx::query(&explain)
        .bind(low)
        .bind(high)
        .fetch_all(&mut db)
        .await
        .map_err(failed)?;
    println!("\nEXPLAIN for {}:", table(0));
    let uses_key = match dialect {
        // One line of text per row.
        Dialect::Postgres => {
            let lines: Vec<String> = plan.iter().filter_map(|r| r.try_get(0).ok()).collect();
            lines.iter().for_each(|line| println!("  {line}"));
            lines
                .iter()
                .any(|line| line.contains("Index") && line.contains("pkey"))
        }
        // One row per table, its access type and key in columns.
        Dialect::MySql => plan.iter().any(|row| {
            let access: Option<String> = row.try_get("type").ok().flatten();
            let key: Option<String> = row.try_get("key").ok().flatten();
            println!("  type={access:?} key={key:?}");
            access.as_deref() == Some("range") && key.as_deref() == Some("PRIMARY")
        }),
    };
    if !uses_key {
        return Err("the plan does not use the primary key's index".to_owned());
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
