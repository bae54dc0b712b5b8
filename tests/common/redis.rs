//! Redis, as the tests use it: without persistence, so that a restart
//! loses every lease.

use super::backend::Backend;

pub const BACKEND: Backend = Backend {
    name: "redis",
    env: "REDIS",
    service: "redis",
    truncate: None,
    admin: None,
    pid_file: |member| match member {
        None => "redis.pid".to_owned(),
        Some(member) => format!("redis-pair-{member}.pid"),
    },
    crashes: true,
};
