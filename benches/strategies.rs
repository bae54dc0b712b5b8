//! Benchmarks (filled in by the benchmark issue).
fn main() {}
