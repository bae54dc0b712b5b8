//! Nothing: this member holds the README's first example
//! (`examples/decode.rs`), with flakegen as its only dependency.
