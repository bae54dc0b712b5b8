//! Helpers of the benchmark binary.

pub(crate) mod costly;
pub(crate) mod cpu;
pub(crate) mod environment;
pub(crate) mod figures;
pub(crate) mod floor;
pub(crate) mod latency;
pub(crate) mod peer;
