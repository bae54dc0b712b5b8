//! The client layer the remote stores stand on, as object_store's
//! `client/` is for its stores: a registry's URL and its checks, the
//! budget every call is bounded by, the probe that tells what a port
//! speaks, TLS, the runtime and connection pool of a remote store, and
//! the HTTP client etcd and Kubernetes share,
//! and how long what such a client knows of a record stays good. Nothing here knows a
//! store's dialect or the protocol.

pub(crate) mod budget;
#[cfg(any(feature = "etcd", feature = "kubernetes"))]
pub(super) mod http;
#[cfg(any(feature = "etcd", feature = "kubernetes"))]
pub(super) mod known;
#[cfg(feature = "remote")]
pub(super) mod probe;
#[cfg(feature = "remote")]
pub(super) mod remote;
#[cfg(feature = "remote")]
pub(super) mod tls;
pub(crate) mod url;
