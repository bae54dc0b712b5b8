//! The records a registry stores, and what a swap expects and writes.

/// One worker id's record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// The worker id.
    pub worker: u64,
    /// The holder's token; empty when nobody holds it.
    pub holder: String,
    /// Changes with every write; a [`swap`](super::Registry::swap) names the version it replaces.
    pub version: u64,
    /// The marker in force when the record was written.
    pub marker_unix_millis: u64,
    /// When the lease expires, by the registry's clock (ms since 1970: the
    /// server's, or its clients' for a store without one, [`TimeBase`](super::TimeBase));
    /// 0 when free.
    pub expires_unix_millis: u64,
    /// The fence (ms since 1970): every ID its holders issued lies below it.
    pub fence_unix_millis: u64,
}

/// What a record says, under a marker and by the server's clock: the one
/// judgement that leasing and every tool make of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[cfg_attr(not(feature = "inspect"), allow(unreachable_pub))]
pub enum RecordState {
    /// A live lease: its holder may still be issuing.
    Held,
    /// Its lease expired: free to take, at or past its fence.
    Expired,
    /// Given back: free to take, at or past its fence.
    Free,
    /// Written under another marker, before a loss the registry cannot
    /// vouch across: free to take, fenced by the loss rule.
    Void,
}

#[cfg_attr(not(feature = "inspect"), allow(unreachable_pub, dead_code))]
impl RecordState {
    /// The state's name, as tools print it.
    pub const fn name(self) -> &'static str {
        match self {
            RecordState::Held => "held",
            RecordState::Expired => "expired",
            RecordState::Free => "free",
            RecordState::Void => "void",
        }
    }
}

impl Record {
    /// What this record says when the marker in force is `marker_unix_millis`
    /// and the server's clock reads `server_unix_millis`.
    #[cfg(feature = "inspect")]
    pub fn state(&self, marker_unix_millis: Option<u64>, server_unix_millis: u64) -> RecordState {
        self.judged(marker_unix_millis, server_unix_millis)
    }

    /// What this record says, as leasing judges it: what `state` tells a tool.
    pub(crate) fn judged(
        &self,
        marker_unix_millis: Option<u64>,
        server_unix_millis: u64,
    ) -> RecordState {
        if Some(self.marker_unix_millis) != marker_unix_millis {
            RecordState::Void
        } else if self.holder.is_empty() {
            RecordState::Free
        } else if self.expires_unix_millis <= server_unix_millis {
            RecordState::Expired
        } else {
            RecordState::Held
        }
    }
}

/// What a [`swap`](super::Registry::swap) expects to find.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expect {
    /// The marker in force.
    pub marker_unix_millis: u64,
    /// The record's version; `None` when there must be no record.
    pub version: Option<u64>,
}

/// The record a [`swap`](super::Registry::swap) writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewRecord<'a> {
    /// The holder's token; empty to free the id.
    pub holder: &'a str,
    /// The new version.
    pub version: u64,
    /// How long the lease lasts from the server's now, in ms; 0 for a free record.
    pub ttl_millis: u64,
    /// The fence, in ms since 1970.
    pub fence_unix_millis: u64,
}
