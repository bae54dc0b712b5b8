//! What a granted lease writes: renewals that move its fence forward only once
//! the registry confirmed them (rule 1), never over a record that is gone
//! or another's (rule 4), and a release that lowers only its own lease
//! (rule 5).

use super::ids::fresh_version;
use super::sighting;
use super::start::{Lost, StartCause};
use super::terms::Terms;
#[cfg(feature = "inspect")]
use crate::lease::backend::ReadRequest;
use crate::lease::backend::{Expect, LeaseError, NewRecord, Registry, TimeBase};

/// How many writes whose outcome is unknown a holder remembers.
const IN_DOUBT: usize = 4;

/// A lease the registry granted this process, as far as it knows: what its
/// renewals and its release name, and where its IDs start.
#[derive(Clone, Debug)]
pub(crate) struct Grant {
    pub(crate) token: String,
    pub(crate) worker: u64,
    /// The marker the lease was taken under: every write names it.
    pub(crate) marker_unix_millis: u64,
    /// The fence the server confirmed: the generator issues below it.
    pub(crate) fence_unix_millis: u64,
    /// The versions the record may have: the last confirmed one first, then
    /// those of writes whose replies were lost.
    pub(super) versions: Vec<u64>,
    /// Where its IDs start: the fence the previous holder left, or a later
    /// one the rules set. This holder issues at or past it, and a release
    /// of a lease nothing was issued under goes back to it.
    pub(crate) previous_fence_unix_millis: u64,
    /// Which bound set that start.
    pub(crate) cause: StartCause,
}

/// Why a renewal did not confirm a new fence.
#[derive(Debug)]
pub(crate) enum Unconfirmed {
    /// The record is gone, or another holder's, or another lease's: the
    /// holder runs to its fence and stops (rule 4).
    Lost(LeaseError),
    /// The call failed, or wrote a fence this holder may not use; try again.
    Failed(LeaseError),
}

impl Grant {
    /// What a healing acquisition needs to know of this lease once lost.
    pub(crate) fn as_lost(&self) -> Lost {
        Lost {
            worker: self.worker,
            marker_unix_millis: self.marker_unix_millis,
            fence_unix_millis: self.fence_unix_millis,
        }
    }

    /// Extends the lease and moves the fence to a TTL past `now_ms` (never
    /// back); returns the fence now confirmed (rule 1).
    ///
    /// The swap names this exact lease, marker and version, so a record that
    /// is gone, or was written by anyone else since, is never written back
    /// (rule 4).
    pub(crate) fn renew(
        &mut self,
        registry: &dyn Registry,
        terms: &Terms<'_>,
        now_ms: u64,
    ) -> Result<u64, Unconfirmed> {
        let fence_unix_millis = terms.fence_from(self.fence_unix_millis, now_ms);
        let token = self.token.clone();
        let write = NewRecord {
            holder: &token,
            version: fresh_version(),
            ttl_millis: terms.ttl_millis,
            fence_unix_millis,
        };
        match self.swap(registry, terms, &write) {
            Ok(Some(server_unix_millis)) => {
                // The record is ours at the new version either way; whether
                // its fence may be used depends on this clock.
                terms
                    .check_skew(now_ms, server_unix_millis)
                    .map_err(Unconfirmed::Failed)?;
                self.fence_unix_millis = fence_unix_millis;
                Ok(fence_unix_millis)
            }
            Ok(None) => Err(Unconfirmed::Lost(terms.lost(self.worker))),
            Err(e) => Err(Unconfirmed::Failed(e)),
        }
    }

    /// Gives the lease up, lowering its fence to `high_water_ms` (the start
    /// of the unit after the last ID issued), never above the confirmed
    /// fence. Only this exact lease is written (rule 5). Returns whether it
    /// was still this holder's to give up.
    pub(crate) fn release(
        &mut self,
        registry: &dyn Registry,
        terms: &Terms<'_>,
        high_water_ms: u64,
    ) -> Result<bool, LeaseError> {
        let write = NewRecord {
            holder: "",
            version: fresh_version(),
            ttl_millis: 0,
            fence_unix_millis: high_water_ms.min(self.fence_unix_millis),
        };
        Ok(self.swap(registry, terms, &write)?.is_some())
    }

    /// Writes `write` over whichever version the record has of those it may
    /// have; remembers `write`'s version as possible when the call fails.
    fn swap(
        &mut self,
        registry: &dyn Registry,
        terms: &Terms<'_>,
        record: &NewRecord<'_>,
    ) -> Result<Option<u64>, LeaseError> {
        while let Some(&version) = self.versions.first() {
            let expect = Expect {
                marker_unix_millis: self.marker_unix_millis,
                version: Some(version),
            };
            match registry.swap(terms.namespace, self.worker, expect, record) {
                Ok(Some(server_unix_millis)) => {
                    if !record.holder.is_empty() && registry.time_base() == TimeBase::Client {
                        sighting::written_here(terms, self.worker, record.version);
                    }
                    self.versions = vec![record.version];
                    return Ok(Some(server_unix_millis));
                }
                // Not at that version now, and never again: versions are not reused.
                Ok(None) => {
                    self.versions.remove(0);
                }
                Err(e) => {
                    if self.versions.len() >= IN_DOUBT {
                        self.versions.remove(1);
                    }
                    self.versions.push(record.version);
                    return Err(e);
                }
            }
        }
        Ok(None)
    }
}

/// Writes id 0's record of the namespace again, free, marking the
/// namespace first if need be (as a first build would: no earlier than any
/// loss). What a tool writes to learn whether this host may write. Never
/// takes an id from a holder: a live record is left alone. Its fence is
/// where an acquisition would start id 0 ([`Terms::choose`]): where its
/// previous holder left it, or past a loss (rule 6) when the registry no
/// longer vouches for its record, so a build after it waits as a build
/// before it would, and none starts under a holder the loss hid. Returns
/// whether it wrote: not over a live record, nor when another writer came
/// between.
#[cfg(feature = "inspect")]
pub(crate) fn test_write(registry: &dyn Registry, terms: &Terms<'_>) -> Result<bool, LeaseError> {
    let mut snapshot = registry.read(terms.namespace, &ReadRequest::new(1).prefer(Some(0)))?;
    if registry.time_base() == TimeBase::Client {
        sighting::held_from_first_sight(terms, &mut snapshot);
    }
    let marker_unix_millis = match snapshot.marker_unix_millis {
        Some(marker) => marker,
        None => registry.mark(terms.namespace)?,
    };
    let terms = Terms {
        workers: 1,
        ..*terms
    };
    let now_ms = snapshot.server_unix_millis;
    let Ok(choice) = terms.choose(&snapshot, &[], marker_unix_millis, now_ms, Some(0)) else {
        // Held: a live record is left alone.
        return Ok(false);
    };
    let free = NewRecord {
        holder: "",
        version: fresh_version(),
        ttl_millis: 0,
        fence_unix_millis: choice.start_unix_millis,
    };
    Ok(registry
        .swap(terms.namespace, 0, choice.expect, &free)?
        .is_some())
}
