//! `Snowflake` as a PostgreSQL `BIGINT`, against the real server at
//! `FLAKEGEN_TEST_POSTGRES_URL` (see `scripts/services.sh`): round trips,
//! and every conversion that would lose information fails instead.

use flakegen::{AtomicGenerator, Fields, IdGenerator, Layout, Snowflake};
use postgres::{Client, NoTls};

fn client() -> (Client, String) {
    let url = std::env::var("FLAKEGEN_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!(
            "FLAKEGEN_TEST_POSTGRES_URL is not set: start the test servers with \
             `eval \"$(scripts/services.sh start)\"` (or run without the postgres feature)"
        )
    });
    let mut client = Client::connect(&url, NoTls).unwrap();
    let table = format!("sql_test_{}", std::process::id());
    client
        .batch_execute(&format!(
            "CREATE TEMPORARY TABLE {table} (id BIGINT PRIMARY KEY, small INT, note TEXT)"
        ))
        .unwrap();
    (client, table)
}

#[test]
fn ids_go_in_and_come_back_as_bigint() {
    let (mut client, table) = client();
    let generator = AtomicGenerator::new(9).unwrap();
    let mut ids = [Snowflake::default(); 100];
    generator.next_ids(&mut ids).unwrap();
    for id in &ids {
        client
            .execute(&format!("INSERT INTO {table} (id) VALUES ($1)"), &[id])
            .unwrap();
    }
    let rows = client
        .query(&format!("SELECT id FROM {table} ORDER BY id"), &[])
        .unwrap();
    let back: Vec<Snowflake> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(back, ids, "ids sort in the database as they were issued");
    let raw: i64 = rows[0].get(0);
    assert_eq!(raw as u64, ids[0].as_u64());
}

#[test]
fn an_id_above_i64_max_is_refused_not_wrapped() {
    let (mut client, table) = client();
    // Discord's layout uses all 64 bits: this ID is past i64::MAX.
    let big = Layout::DISCORD
        .compose(Fields {
            timestamp: Layout::DISCORD.max_timestamp(),
            worker: 1,
            sequence: 1,
        })
        .unwrap();
    let e = client
        .execute(&format!("INSERT INTO {table} (id) VALUES ($1)"), &[&big])
        .unwrap_err();
    assert!(
        e.to_string().contains("i64::MAX") || format!("{e:?}").contains("AboveI64"),
        "{e:?}"
    );
    let count: i64 = client
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .unwrap()
        .get(0);
    assert_eq!(count, 0);
}

#[test]
fn only_bigint_is_read_or_written() {
    let (mut client, table) = client();
    client
        .execute(
            &format!("INSERT INTO {table} (id, small) VALUES (1, 2)"),
            &[],
        )
        .unwrap();
    let row = client
        .query_one(&format!("SELECT id, small FROM {table}"), &[])
        .unwrap();
    assert_eq!(row.get::<_, Snowflake>(0), Snowflake::from_u64(1));
    assert!(
        row.try_get::<_, Snowflake>(1).is_err(),
        "an INT column is not an ID"
    );
    let e = client
        .execute(
            &format!("UPDATE {table} SET small = $1"),
            &[&Snowflake::from_u64(7)],
        )
        .unwrap_err();
    assert!(format!("{e:?}").contains("WrongType"), "{e:?}");
}

#[test]
fn a_negative_bigint_is_not_an_id() {
    let (mut client, table) = client();
    client
        .execute(&format!("INSERT INTO {table} (id) VALUES (-5)"), &[])
        .unwrap();
    let row = client
        .query_one(&format!("SELECT id FROM {table}"), &[])
        .unwrap();
    let e = row.try_get::<_, Snowflake>(0).unwrap_err();
    assert!(format!("{e:?}").contains("Negative"), "{e:?}");
}
