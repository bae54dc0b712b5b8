//! One name for "a registry on a server is built in": `cfg(remote)`, set
//! when any of the `mysql`, `postgres`, `redis` and `etcd` features is on, so that
//! a new backend joins one list here rather than a `cfg(any(...))` at every
//! use.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(remote)");
    let remote = ["MYSQL", "POSTGRES", "REDIS", "ETCD"];
    if remote
        .iter()
        .any(|feature| std::env::var_os(format!("CARGO_FEATURE_{feature}")).is_some())
    {
        println!("cargo::rustc-cfg=remote");
    }
}
