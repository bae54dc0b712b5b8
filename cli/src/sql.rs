//! `flakegen sql`: database functions that read a layout's IDs, and find
//! the IDs of a time, from the layout's own numbers.
//!
//! Each function is declared immutable (PostgreSQL) or deterministic
//! (MySQL, MariaDB), so that `WHERE id BETWEEN first_id(t1) AND
//! last_id(t2)` is planned as a range over the primary key's index, the
//! bounds worked out once. Times are microseconds: a layout whose unit or
//! epoch is finer than that has no exact SQL form, and is refused.

use flakegen::{Field, Layout};

use crate::Failed;

/// Print SQL functions that decode a layout's IDs and bound them by time.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// The database: postgres, or mysql (MySQL and MariaDB).
    #[arg(long, value_enum)]
    dialect: Dialect,
    /// The layout: twitter, discord, sonyflake, instagram or javascript,
    /// or a custom layout's fields.
    #[arg(long, default_value = "twitter")]
    layout: Layout,
    /// What the functions' names begin with: one set per layout, each
    /// with its own prefix.
    #[arg(long, default_value = "flakegen_")]
    prefix: String,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Dialect {
    Postgres,
    Mysql,
}

/// The layout's numbers, in the units SQL speaks.
struct Numbers {
    timestamp_shift: u32,
    timestamp_mask: u64,
    worker_shift: u32,
    worker_mask: u64,
    sequence_shift: u32,
    sequence_mask: u64,
    unit_micros: u64,
    epoch_micros: u64,
    /// Every worker and sequence bit: the low bits of a unit's last ID.
    below_timestamp: u64,
}

impl Numbers {
    fn of(layout: &Layout) -> Result<Numbers, Failed> {
        let unit_nanos = layout.unit().as_nanos();
        let epoch_nanos = u128::from(layout.epoch_unix_millis()) * 1_000_000;
        if unit_nanos % 1_000 != 0 || unit_nanos == 0 {
            return Err(Failed::input(format!(
                "the layout's unit, {:?}, is not a whole number of microseconds, the finest \
                 time SQL keeps: its IDs have no exact SQL form",
                layout.unit()
            )));
        }
        let mask = |bits: u32| {
            if bits == 0 {
                0
            } else {
                u64::MAX >> (64 - bits)
            }
        };
        let timestamp_shift = layout.shift(Field::Timestamp);
        Ok(Numbers {
            timestamp_shift,
            timestamp_mask: mask(layout.timestamp_bits()),
            worker_shift: layout.shift(Field::Worker),
            worker_mask: mask(layout.worker_bits()),
            sequence_shift: layout.shift(Field::Sequence),
            sequence_mask: mask(layout.sequence_bits()),
            unit_micros: u64::try_from(unit_nanos / 1_000).expect("a layout's unit fits"),
            epoch_micros: u64::try_from(epoch_nanos / 1_000).expect("an epoch in ms fits"),
            below_timestamp: mask(timestamp_shift),
        })
    }
}

pub(crate) fn run(args: &Args) -> Result<(), Failed> {
    let n = Numbers::of(&args.layout)?;
    if !args
        .prefix
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        || args.prefix.starts_with(|c: char| c.is_ascii_digit())
    {
        return Err(Failed::input(format!(
            "--prefix {:?}: letters, digits and _ only, not first a digit",
            args.prefix
        )));
    }
    let p = &args.prefix;
    say!(
        "-- flakegen sql --dialect {} --layout {}",
        match args.dialect {
            Dialect::Postgres => "postgres",
            Dialect::Mysql => "mysql",
        },
        args.layout
    );
    say!(
        "-- Functions for IDs of the layout {}: {p}time, {p}worker and {p}sequence of an \
         ID;\n-- {p}first_id and {p}last_id of a time, the bounds of an index range scan.",
        args.layout
    );
    match args.dialect {
        Dialect::Postgres => {
            say!("-- Times are timestamptz: an instant, whatever the session's TimeZone.");
            postgres(p, &n);
        }
        Dialect::Mysql => {
            say!(
                "-- Times are DATETIME(6) in UTC: pass UTC_TIMESTAMP(6), not NOW(), which is\n\
                 -- the session's time zone (or SET time_zone = '+00:00' first). With the\n\
                 -- binary log on, creating functions needs SUPER or\n\
                 -- log_bin_trust_function_creators = 1 (these are DETERMINISTIC NO SQL)."
            );
            mysql(p, &n);
        }
    }
    Ok(())
}

/// PostgreSQL: `bigint` IDs, `timestamptz` times. Each is a one-line SQL
/// function, `IMMUTABLE`: with constant arguments the planner works it out
/// once and compares the index with the result.
fn postgres(p: &str, n: &Numbers) {
    let units = format!("((id >> {}) & {})", n.timestamp_shift, n.timestamp_mask);
    let micros = "floor(extract(epoch from (t - timestamptz 'epoch')) * 1000000)::bigint";
    let functions = [
        (
            "time(id bigint) RETURNS timestamptz",
            format!(
                "timestamptz 'epoch' + ({units} * {} + {}) * interval '1 microsecond'",
                n.unit_micros, n.epoch_micros
            ),
        ),
        (
            "worker(id bigint) RETURNS bigint",
            format!("(id >> {}) & {}", n.worker_shift, n.worker_mask),
        ),
        (
            "sequence(id bigint) RETURNS bigint",
            format!("(id >> {}) & {}", n.sequence_shift, n.sequence_mask),
        ),
        // In numeric, then cast: a bound past a BIGINT is an error, never
        // a wrapped, negative one.
        (
            "first_id(t timestamptz) RETURNS bigint",
            format!(
                "((greatest({micros} - {}, 0) / {})::numeric * {})::bigint",
                n.epoch_micros,
                n.unit_micros,
                1u128 << n.timestamp_shift
            ),
        ),
        (
            "last_id(t timestamptz) RETURNS bigint",
            format!(
                "((greatest({micros} - {}, 0) / {})::numeric * {} + {})::bigint",
                n.epoch_micros,
                n.unit_micros,
                1u128 << n.timestamp_shift,
                n.below_timestamp
            ),
        ),
    ];
    for (signature, body) in functions {
        say!(
            "CREATE OR REPLACE FUNCTION {p}{signature}\n  LANGUAGE sql IMMUTABLE STRICT \
             PARALLEL SAFE\n  AS $$ SELECT {body} $$;"
        );
    }
}

/// MySQL and MariaDB: `BIGINT` IDs, `DATETIME(6)` times in UTC. Each is a
/// one-statement function, `DETERMINISTIC NO SQL`. Shifts are unsigned
/// there, and a bound past a signed `BIGINT` is an out-of-range error on
/// return.
fn mysql(p: &str, n: &Numbers) {
    let units = format!("((id >> {}) & {})", n.timestamp_shift, n.timestamp_mask);
    let epoch = "'1970-01-01 00:00:00'";
    let micros = format!("TIMESTAMPDIFF(MICROSECOND, {epoch}, t)");
    let functions = [
        (
            "time",
            "id BIGINT",
            "DATETIME(6)",
            format!(
                "TIMESTAMPADD(MICROSECOND, {units} * {} + {}, {epoch})",
                n.unit_micros, n.epoch_micros
            ),
        ),
        (
            "worker",
            "id BIGINT",
            "BIGINT",
            format!("(id >> {}) & {}", n.worker_shift, n.worker_mask),
        ),
        (
            "sequence",
            "id BIGINT",
            "BIGINT",
            format!("(id >> {}) & {}", n.sequence_shift, n.sequence_mask),
        ),
        (
            "first_id",
            "t DATETIME(6)",
            "BIGINT",
            format!(
                "(GREATEST({micros} - {}, 0) DIV {}) << {}",
                n.epoch_micros, n.unit_micros, n.timestamp_shift
            ),
        ),
        (
            "last_id",
            "t DATETIME(6)",
            "BIGINT",
            format!(
                "((GREATEST({micros} - {}, 0) DIV {}) << {}) | {}",
                n.epoch_micros, n.unit_micros, n.timestamp_shift, n.below_timestamp
            ),
        ),
    ];
    for (name, parameter, returns, body) in functions {
        say!("DROP FUNCTION IF EXISTS {p}{name};");
        say!(
            "CREATE FUNCTION {p}{name}({parameter}) RETURNS {returns} DETERMINISTIC NO SQL\n  \
             RETURN {body};"
        );
    }
}
