//! Helpers of the benchmark binary.

pub mod cpu;
pub mod environment;
pub mod registry;
