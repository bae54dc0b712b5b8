//! Which history an etcd prefix's records belong to: the epoch (the
//! cluster the prefix was marked in, and when), the witness (the highest
//! raft term the prefix saw), and each namespace's mark under the epoch.
//! A restore that gives the cluster a new id, or brings its term back
//! below the witness, ends the epoch, and every namespace's mark with it.

use std::sync::PoisonError;

use super::super::client::known::Highest;
use super::EtcdRegistry;
use super::gateway::{Answer, Get, Header, Txn};
use super::keys::{Keys, pad};
use crate::clock::units::ceil_millis;
use crate::clock::{Clock, SystemClock};
use crate::lease::backend::LeaseError;

/// The raft terms a client has seen, by the cluster that answered and the
/// epoch in force: see [`EtcdRegistry::rewound`].
pub(super) type Terms = Highest<(u64, Option<String>)>;

/// A namespace's mark as read.
#[derive(Clone, Copy, Debug)]
pub(super) struct Mark {
    pub(super) epoch: u64,
    pub(super) marker: u64,
    pub(super) high_water: u64,
    pub(super) create_revision: u64,
    pub(super) mod_revision: u64,
}

/// The epoch, the witness and a namespace's mark, judged against an
/// answer's header.
pub(super) struct Head {
    pub(super) header: Header,
    /// The epoch key's value and revision, if it exists.
    pub(super) epoch: Option<(String, u64)>,
    /// The witness's term and revision, if it exists.
    pub(super) witness: Option<(u64, u64)>,
    /// The epoch in force: written in this cluster, and not rewound since.
    pub(super) epoch_in_force: Option<u64>,
    /// The namespace's mark, if it was read and exists.
    pub(super) mark: Option<Mark>,
}

/// The ranges that read a head, added to a transaction.
pub(super) struct HeadGets {
    epoch: Get,
    witness: Get,
    mark: Get,
}

impl Head {
    /// The namespace's marker and high-water mark, if its mark is in force:
    /// written under the epoch in force.
    pub(super) fn in_force(&self) -> Option<Mark> {
        let epoch = self.epoch_in_force?;
        self.mark.filter(|m| m.epoch == epoch)
    }

    /// The epoch's value as the swaps compare it.
    pub(super) fn epoch_text(&self) -> Option<&str> {
        self.epoch.as_ref().map(|(text, _)| text.as_str())
    }
}

impl EtcdRegistry {
    /// Adds the ranges of a head to `txn`.
    pub(super) fn head_gets(txn: &mut Txn, keys: &Keys) -> HeadGets {
        HeadGets {
            epoch: txn.get(&keys.epoch),
            witness: txn.get(&keys.witness),
            mark: txn.get(&keys.mark),
        }
    }

    /// Judges the epoch, the witness and the mark `gets` read in `answer`
    /// against its header; notes the term seen.
    pub(super) fn head(&self, answer: &Answer, gets: &HeadGets) -> Result<Head, LeaseError> {
        let header = answer.header;
        let text = |bytes: Vec<u8>, what: &str| {
            String::from_utf8(bytes).map_err(|e| self.corrupt(format!("the {what}: {e}")))
        };
        let witness = match self.kv(answer, gets.witness)? {
            Some(kv) => Some((
                text(kv.value, "witness")?
                    .parse::<u64>()
                    .map_err(|e| self.corrupt(format!("the witness: {e}")))?,
                kv.mod_revision,
            )),
            None => None,
        };
        let epoch = match self.kv(answer, gets.epoch)? {
            Some(kv) => Some((text(kv.value, "epoch")?, kv.mod_revision)),
            None => None,
        };
        let current = epoch.as_ref().map(|(text, _)| text.as_str());
        let rewound =
            self.rewound(header, current) || witness.is_some_and(|(term, _)| header.term < term);
        let epoch_in_force = match current {
            Some(text) if !rewound => {
                let (ms, cluster) = numbers(text)
                    .and_then(|n| <[u64; 2]>::try_from(n).ok())
                    .map(|[ms, cluster]| (ms, cluster))
                    .ok_or_else(|| self.corrupt(format!("the epoch {text:?}")))?;
                (cluster == header.cluster).then_some(ms)
            }
            _ => None,
        };
        let mark = match self.kv(answer, gets.mark)? {
            Some(kv) => {
                let value = text(kv.value, "mark")?;
                let [epoch, marker, high_water] = numbers(&value)
                    .and_then(|n| <[u64; 3]>::try_from(n).ok())
                    .ok_or_else(|| self.corrupt(format!("the mark {value:?} of {}", kv.key)))?;
                Some(Mark {
                    epoch,
                    marker,
                    high_water,
                    create_revision: kv.create_revision,
                    mod_revision: kv.mod_revision,
                })
            }
            None => None,
        };
        Ok(Head {
            header,
            epoch,
            witness,
            epoch_in_force,
            mark,
        })
    }

    /// Whether the cluster's term went back since this client last saw it
    /// under the epoch `epoch` (the cluster was restored); notes the term
    /// seen.
    pub(super) fn rewound(&self, header: Header, epoch: Option<&str>) -> bool {
        self.terms
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .went_down((header.cluster, epoch.map(str::to_owned)), header.term)
    }

    /// Writes the witness up to the term `head` saw, where it is below:
    /// best effort, as any later read does it too.
    pub(super) fn raise_witness(&self, head: &Head, keys: &Keys) -> Result<(), LeaseError> {
        if head
            .witness
            .is_some_and(|(term, _)| term >= head.header.term)
        {
            return Ok(());
        }
        let mut txn = Txn::new();
        match head.witness {
            Some((_, revision)) => txn.modified_at(&keys.witness, revision),
            None => txn.created_at(&keys.witness, 0),
        }
        txn.put(&keys.witness, &pad(head.header.term));
        self.txn(&txn)?;
        Ok(())
    }

    /// Starts a new epoch where none is in force: the host's clock now,
    /// later than the one it replaces, in the cluster that answered, with
    /// the witness at its term. Every namespace's mark under the old one is
    /// void from then on. Returns whether this client wrote it (another may
    /// have first: read again).
    pub(super) fn new_epoch(&self, head: &Head, keys: &Keys) -> Result<bool, LeaseError> {
        let now = ceil_millis(SystemClock.unix_nanos());
        let mut txn = Txn::new();
        let ms = match &head.epoch {
            Some((text, revision)) => {
                txn.modified_at(&keys.epoch, *revision);
                let before = numbers(text).and_then(|n| n.first().copied());
                before.map_or(now, |b| now.max(b + 1))
            }
            None => {
                txn.created_at(&keys.epoch, 0);
                now
            }
        };
        let text = format!("{ms} {}", head.header.cluster);
        txn.put(&keys.epoch, &text);
        txn.put(&keys.witness, &pad(head.header.term));
        let written = self.txn(&txn)?.succeeded;
        if written {
            // The count of terms starts again under the new epoch.
            self.rewound(head.header, Some(&text));
        }
        Ok(written)
    }
}

/// The numbers of a value made of numbers separated by spaces.
fn numbers(text: &str) -> Option<Vec<u64>> {
    text.split(' ').map(|n| n.parse().ok()).collect()
}
