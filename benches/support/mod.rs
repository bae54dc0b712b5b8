//! Helpers of the benchmark binary.

pub mod costly;
pub mod cpu;
pub mod environment;
pub mod floor;
pub mod latency;
pub mod peer;
