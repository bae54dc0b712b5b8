//! MySQL, as the tests use it: a MariaDB server.

use super::backend::{Backend, client};

pub const BACKEND: Backend = Backend {
    name: "mysql",
    env: "MYSQL",
    service: "mariadb",
    // TRUNCATE takes the table's sentinel row with the rest.
    truncate: Some(
        "SET @t = IF((SELECT COUNT(*) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_name = 'flakegen_leases') > 0, \
         'TRUNCATE flakegen_leases', 'DO 0'); \
         PREPARE s FROM @t; EXECUTE s; DEALLOCATE PREPARE s",
    ),
    admin: Some(mariadb),
    pid_file: |member| match member {
        None => "mariadb/mariadb.pid".to_owned(),
        Some(member) => format!("mariadb-pair-{member}/mariadb.pid"),
    },
    crashes: true,
};

/// `mysql://user:password@host:port/database` through MariaDB's client. A
/// statement that waits on a lock (a TRUNCATE behind a client's open
/// transaction) fails after 10 s, never hangs.
fn mariadb(url: &str, sql: &str) {
    let rest = url.trim_start_matches("mysql://");
    let (credentials, rest) = rest.split_once('@').unwrap();
    let (user, password) = credentials.split_once(':').unwrap();
    let (address, database) = rest.split_once('/').unwrap();
    let (host, port) = address.split_once(':').unwrap();
    let database = database.split('?').next().unwrap();
    let sql = format!("SET SESSION lock_wait_timeout = 10; {sql}");
    let args = [
        "-h", host, "-P", port, "-u", user, database, "-N", "-e", &sql,
    ]
    .map(String::from)
    .into_iter()
    .chain([format!("-p{password}")])
    .collect::<Vec<_>>();
    client("mariadb", &args);
}
