//! Example.
fn main() {}
