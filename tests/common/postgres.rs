//! PostgreSQL, as the tests use it.

use super::backend::{Backend, client};

pub const BACKEND: Backend = Backend {
    name: "postgres",
    env: "POSTGRES",
    service: "postgres",
    // Before flakegen first connects there is no table, and nothing to lose.
    truncate: Some(
        "DO $$ BEGIN IF to_regclass('flakegen_leases') IS NOT NULL THEN \
         TRUNCATE flakegen_leases; END IF; END $$",
    ),
    admin: Some(psql),
    pid_file: |member| match member {
        None => "postgres/postmaster.pid".to_owned(),
        Some(member) => format!("postgres-pair-{member}/postmaster.pid"),
    },
    crashes: false,
};

fn psql(url: &str, sql: &str) {
    client(
        "psql",
        &[url.to_owned(), "-qAt".into(), "-c".into(), sql.into()],
    );
}
