//! The benchmarks' library: the verdict's rules (`verdict`), which the
//! benchmark binary (`strategies.rs`) feeds with what it measured and the
//! tests hold on canned figures. The benchmarks themselves
//! (`strategies.rs`, `lease_scale.rs`) are run by `cargo bench` at the
//! repository's root.

pub mod verdict;
