//! `Snowflake` through sqlx (feature `sqlx`): round trips on SQLite in
//! memory, and on the real PostgreSQL and MariaDB of `scripts/services.sh`
//! (`FLAKEGEN_TEST_POSTGRES_URL`, `FLAKEGEN_TEST_MYSQL_URL`); the same
//! refusals, with the same texts, as the `postgres` feature.

use flakegen::{AtomicGenerator, IdGenerator, Snowflake};
use sqlx::{Connection, Executor};

/// A URL the services script exports; fails, saying how to start the
/// servers, when it is not set: the tests never pass by skipping.
fn url(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set: start the test servers with `eval \"$(scripts/services.sh start)\"`"
        )
    })
}

/// Writes IDs to a `BIGINT` column of a new table and reads them back;
/// checks both refusals. Each test gives a worker id of its own: the tests
/// run at once, and a process refuses a second generator on one. A macro,
/// as sqlx's bounds for a function generic over the database would be
/// longer than the body.
macro_rules! round_trip {
    ($worker:expr, $connection:expr, $ddl:expr, $insert:expr, $select:expr) => {{
        let mut connection = $connection;
        connection.execute($ddl).await.unwrap();
        let generator = AtomicGenerator::new($worker).unwrap();
        let ids: Vec<Snowflake> = (0..100).map(|_| generator.next_id().unwrap()).collect();
        for id in &ids {
            sqlx::query($insert)
                .bind(*id)
                .execute(&mut connection)
                .await
                .unwrap();
        }
        let back: Vec<Snowflake> = sqlx::query_scalar($select)
            .fetch_all(&mut connection)
            .await
            .unwrap();
        assert_eq!(back, ids);

        // Above i64::MAX: refused, with IdError's text, nothing written.
        let too_big = Snowflake::from_u64(u64::MAX);
        let e = sqlx::query($insert)
            .bind(too_big)
            .execute(&mut connection)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("NUMERIC(20)"), "{e}");
        // A negative value in the column: refused on the way out.
        sqlx::query($insert)
            .bind(-7i64)
            .execute(&mut connection)
            .await
            .unwrap();
        let e = sqlx::query_scalar::<_, Snowflake>($select)
            .fetch_all(&mut connection)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("wrong column"), "{e}");
    }};
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn sqlite_integer_round_trips() {
    runtime().block_on(async {
        let connection = sqlx::SqliteConnection::connect("sqlite::memory:")
            .await
            .unwrap();
        round_trip!(
            5,
            connection,
            "CREATE TABLE ids (n INTEGER PRIMARY KEY AUTOINCREMENT, id INTEGER NOT NULL)",
            "INSERT INTO ids (id) VALUES (?)",
            "SELECT id FROM ids ORDER BY n"
        );
    });
}

#[test]
fn postgres_bigint_round_trips() {
    runtime().block_on(async {
        let connection = sqlx::PgConnection::connect(&url("FLAKEGEN_TEST_POSTGRES_URL"))
            .await
            .unwrap();
        round_trip!(
            6,
            connection,
            "CREATE TEMPORARY TABLE ids (n BIGSERIAL PRIMARY KEY, id BIGINT NOT NULL)",
            "INSERT INTO ids (id) VALUES ($1)",
            "SELECT id FROM ids ORDER BY n"
        );
    });
}

#[test]
fn mariadb_bigint_round_trips() {
    runtime().block_on(async {
        let connection = sqlx::MySqlConnection::connect(&url("FLAKEGEN_TEST_MYSQL_URL"))
            .await
            .unwrap();
        round_trip!(
            7,
            connection,
            "CREATE TEMPORARY TABLE ids (n BIGINT AUTO_INCREMENT PRIMARY KEY, id BIGINT NOT NULL)",
            "INSERT INTO ids (id) VALUES (?)",
            "SELECT id FROM ids ORDER BY n"
        );
    });
}
