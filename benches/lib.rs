//! Nothing: this member holds flakegen's benchmarks (`strategies.rs`,
//! `lease_scale.rs`), run by `cargo bench` at the repository's root.
