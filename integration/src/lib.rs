//! Nothing to link: this package holds flakegen's examples and tests that
//! need heavy dependencies (axum, sqlx, the postgres client, UUIDs), so
//! that the library itself, and the README's commands, build light. See
//! `Cargo.toml` for how to run them.
