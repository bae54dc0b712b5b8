//! A PostgreSQL leasing session commits durably whatever the server, the
//! role or the URL set `synchronous_commit` to: a renewal the server
//! confirmed is on its disk before the holder is told, so that it outlives
//! a crash, which would otherwise forget it while its holder issues IDs
//! under it.
//!
//! A binary of its own: the test watches the server's WAL being flushed,
//! which any other session's commit would do too.

#![cfg(feature = "postgres")]

mod common;

use flakegen::lease::PostgresRegistry;
use flakegen::lease::backend::{Expect, NewRecord, Registry};

/// `synchronous_commit = off` in the URL: the leasing session must set it
/// back. Each renewal is on disk when swap returns: the WAL flushed past
/// where it ended before the renewal began. An asynchronous commit returns
/// before its WAL is flushed (the WAL writer flushes it within
/// `wal_writer_delay`, 200 ms): one of 20 renewals at least would show it.
#[test]
fn a_leasing_session_commits_durably_though_its_url_turns_it_off() {
    let url = common::postgres::SERVER.url();
    let sep = if url.contains('?') { '&' } else { '?' };
    let off = format!("{url}{sep}options=-c%20synchronous_commit%3Doff");
    let registry = PostgresRegistry::new(&off).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let observer = runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
    });
    let lsn = |which: &str| -> i64 {
        runtime
            .block_on(observer.query_one(&format!("SELECT ({which}() - '0/0')::bigint"), &[]))
            .unwrap()
            .get(0)
    };
    let ns = format!("durable-{}", std::process::id());
    let marker = registry.mark(&ns).unwrap();
    let renew = |version: Option<u64>| {
        let record = NewRecord {
            holder: "a",
            version: version.map_or(1, |v| v + 1),
            ttl_millis: 60_000,
            fence_unix_millis: 1_000,
        };
        let expect = Expect {
            marker_unix_millis: marker,
            version,
        };
        registry
            .swap(&ns, 0, expect, &record)
            .unwrap()
            .expect("written");
    };
    renew(None);
    for version in 1..=20 {
        let before = lsn("pg_current_wal_insert_lsn");
        renew(Some(version));
        let flushed = lsn("pg_current_wal_flush_lsn");
        assert!(
            flushed > before,
            "renewal {version} returned before the server flushed its commit \
             (the WAL flushed to {flushed}, it began past {before}): the leasing session \
             kept synchronous_commit = off"
        );
    }
}
