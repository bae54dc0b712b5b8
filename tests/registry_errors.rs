//! What a registry says when its server refuses: each message names the
//! cause and what to do. Against the real servers (`scripts/services.sh`).

#![cfg(feature = "remote")]

mod common;

use flakegen::lease::LeaseError;
use flakegen::lease::backend::{Expect, NewRecord, ReadRequest, Registry};

/// `url` with its user name, password and database replaced.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "redis"))]
fn as_user(url: &str, userinfo: &str, database: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let host = host.split_once('/').map_or(host, |(host, _)| host);
    format!("{scheme}://{userinfo}{host}/{database}")
}

/// Every step is refused as `Forbidden`, in the server's words, naming the
/// DDL to run and the rights to grant.
#[cfg(any(feature = "postgres", feature = "mysql"))]
fn refused_with_the_ddl(registry: &dyn Registry, server_says: &str, ddl: &str) {
    for e in every_step(registry) {
        assert!(matches!(e, LeaseError::Forbidden { .. }), "{e:?}");
        let message = e.to_string();
        assert!(message.contains(server_says), "{message}");
        assert!(message.contains(ddl), "{message}");
        assert!(
            message
                .contains("GRANT SELECT, INSERT, UPDATE ON flakegen_leases, flakegen_namespaces"),
            "{message}"
        );
    }
}

/// Every storage step, so each path to the server is asked once.
fn every_step(registry: &dyn Registry) -> Vec<LeaseError> {
    let write = NewRecord {
        holder: "h",
        version: 1,
        ttl_millis: 1_000,
        fence_unix_millis: 1,
    };
    let expect = Expect {
        marker_unix_millis: 0,
        version: None,
    };
    vec![
        registry.read("errors", &ReadRequest::new(4)).unwrap_err(),
        registry.mark("errors").unwrap_err(),
        registry.swap("errors", 0, expect, &write).unwrap_err(),
    ]
}

/// A wrong password, on every registry, is said as wrong credentials, in
/// the registry's own URL terms, by every storage step.
#[test]
fn a_wrong_password_is_said_as_credentials_on_every_registry() {
    for server in common::server::ALL {
        let url = server.url();
        let (scheme, rest) = url.split_once("://").unwrap();
        let (wrong, credential) = match rest.rsplit_once('@') {
            Some((userinfo, rest)) => {
                let user = userinfo.split(':').next().unwrap();
                (
                    format!("{scheme}://{user}:wrong-password@{rest}"),
                    "password",
                )
            }
            // A bearer token in a file (Kubernetes'): a file with a wrong one.
            None => {
                let file = std::env::temp_dir().join(format!(
                    "flakegen-wrong-token-{}-{}",
                    server.name,
                    std::process::id()
                ));
                std::fs::write(&file, "wrong-password").unwrap();
                let (base, query) = url.split_once('?').unwrap();
                let query: Vec<String> = query
                    .split('&')
                    .map(|pair| match pair.split_once('=') {
                        Some(("token_file", _)) => format!("token_file={}", file.display()),
                        _ => pair.to_owned(),
                    })
                    .collect();
                (format!("{base}?{}", query.join("&")), "token")
            }
        };
        let registry = flakegen::lease::connect(&wrong).unwrap();
        for e in every_step(&*registry) {
            assert!(
                matches!(e, LeaseError::Unauthorized { .. }),
                "{}: {e:?}",
                server.name
            );
            let message = e.to_string();
            assert!(
                message.contains(&format!("{scheme}://")) && message.contains(credential),
                "{}: {message}",
                server.name
            );
            assert!(
                !message.contains("wrong-password"),
                "{}: {message}",
                server.name
            );
        }
    }
}

/// An application role that may not create tables (PostgreSQL 15's default
/// for the public schema) is told how to have the table made for it.
#[cfg(feature = "postgres")]
#[test]
fn a_role_that_may_not_create_the_table_is_told_how_to_get_it() {
    let postgres = &common::postgres::SERVER;
    let admin_url = postgres.url();
    let admin = |sql: &str| drop(postgres.services("sql", &[sql]));
    let database = format!("flakegen_forbidden_{}", std::process::id());
    admin(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"));
    admin("DROP ROLE IF EXISTS flakegen_app");
    admin("CREATE ROLE flakegen_app LOGIN PASSWORD 'app'");
    admin(&format!("CREATE DATABASE {database}"));

    let url = as_user(&admin_url, "flakegen_app:app@", &database);
    let registry = flakegen::lease::PostgresRegistry::new(&url).unwrap();
    refused_with_the_ddl(&registry, "permission denied", "PostgresRegistry::DDL");
    drop(registry);
    admin(&format!("DROP DATABASE {database} WITH (FORCE)"));
    admin("DROP ROLE flakegen_app");
}

/// A Redis that needs a password, given none, says so, whichever command
/// meets the refusal first (a long one is refused as a protocol error).
#[cfg(feature = "redis")]
#[test]
fn a_redis_that_wants_a_password_says_so() {
    let url = as_user(&common::redis::SERVER.url(), "", "0");
    let registry = flakegen::lease::RedisRegistry::new(&url).unwrap();
    for e in every_step(&registry) {
        assert!(matches!(e, LeaseError::Unauthorized { .. }), "{e:?}");
        let message = e.to_string();
        assert!(message.contains("password in the URL"), "{message}");
        assert!(message.contains("redis://:password@host"), "{message}");
    }
}

/// A MySQL user that may read the database but not create tables is told
/// how to have the table made for it.
#[cfg(feature = "mysql")]
#[test]
fn a_mysql_user_that_may_not_create_the_table_is_told_how_to_get_it() {
    let database = format!("flakegen_forbidden_{}", std::process::id());
    let user = format!("flakegen_app_{}", std::process::id());
    let mysql = &common::mysql::SERVER;
    let admin = |sql: &str| drop(mysql.services("sql", &[sql]));
    admin(&format!(
        "DROP DATABASE IF EXISTS {database}; CREATE DATABASE {database}; \
         DROP USER IF EXISTS {user}; CREATE USER {user} IDENTIFIED BY 'app'; \
         GRANT SELECT ON {database}.* TO {user}"
    ));

    let url = as_user(&mysql.url(), &format!("{user}:app@"), &database);
    let registry = flakegen::lease::MysqlRegistry::new(&url).unwrap();
    refused_with_the_ddl(&registry, "CREATE command denied", "MysqlRegistry::DDL");
    drop(registry);
    admin(&format!("DROP DATABASE {database}; DROP USER {user}"));
}

/// A URL that names a database the server does not have says which, and
/// how to make it.
#[cfg(feature = "mysql")]
#[test]
fn a_mysql_database_that_does_not_exist_is_named() {
    let url = common::mysql::SERVER.url();
    let (base, _) = url.rsplit_once('/').unwrap();
    let registry = flakegen::lease::MysqlRegistry::new(&format!("{base}/no_such_db")).unwrap();
    for e in every_step(&registry) {
        assert!(matches!(e, LeaseError::UnknownDatabase { .. }), "{e:?}");
        let message = e.to_string();
        assert!(message.contains("no database \"no_such_db\""), "{message}");
        assert!(message.contains("CREATE DATABASE no_such_db"), "{message}");
    }
}

/// A wrong password is said as wrong credentials, with the URL's form, not
/// as a TLS problem (the server is asked again over TLS to tell them apart).
#[cfg(feature = "mysql")]
#[test]
fn a_wrong_mysql_password_is_said_as_credentials() {
    let url = common::mysql::SERVER.url();
    let database = url.rsplit('/').next().unwrap();
    let url = as_user(&url, "flakegen:wrong@", database);
    let registry = flakegen::lease::MysqlRegistry::new(&url).unwrap();
    for e in every_step(&registry) {
        assert!(matches!(e, LeaseError::Unauthorized { .. }), "{e:?}");
        let message = e.to_string();
        assert!(message.contains("Access denied"), "{message}");
        assert!(message.contains("mysql://user:password@host"), "{message}");
    }
}
