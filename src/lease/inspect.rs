//! What a registry shows an operator: the records of a namespace, the
//! server's settings, and what they mean for the generators that lease
//! there. `flakegen leases` and `flakegen leases check` print these; a
//! registry of your own offers them by implementing [`Inspect`] (optional:
//! leasing never calls it).

use core::fmt;

use crate::clock::units::Moment;

pub use super::backend::inspect::{
    Caveat, Inspect, Listing, ServerClock, Severity, Survey, Transport, Verified,
};

/// What a namespace's [`Listing`] says of it, as the loss rule reads it:
/// whether the registry vouches for its records, and what its generators
/// do. [`Listing::condition`] judges it; its `Display` says it to an
/// operator, with what generators will do.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Condition {
    /// No marker, no record: the namespace is new, or was emptied (its
    /// data lost with the registry's, or deleted), and nothing tells which.
    NoTrace,
    /// Records, but no marker in force: the registry lost its data or its
    /// history changed since they were written, and every one is void.
    NoMarker {
        /// How many records the namespace has.
        records: usize,
    },
    /// The registry vouches for the namespace's records since the marker:
    /// 0 for a namespace a registry saw begin (a `MemoryRegistry`).
    Vouched {
        /// The marker, in ms since 1970.
        marker_unix_millis: u64,
        /// Ids handed out under the marker whose records are gone.
        gone: Vec<u64>,
    },
}

impl Listing {
    /// What this listing says of its namespace.
    pub fn condition(&self) -> Condition {
        let Some(marker_unix_millis) = self.marker_unix_millis else {
            return if self.records.is_empty() {
                Condition::NoTrace
            } else {
                Condition::NoMarker {
                    records: self.records.len(),
                }
            };
        };
        let gone = (0..self.high_water)
            .filter(|&w| {
                !self
                    .records
                    .iter()
                    .any(|r| r.worker == w && r.marker_unix_millis == marker_unix_millis)
            })
            .take(1_000)
            .collect();
        Condition::Vouched {
            marker_unix_millis,
            gone,
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Condition::NoTrace => f.write_str(
                "no trace here (no marker, no record): no generator has leased in it, or the \
                 registry lost it (a restart without persistence, a failover, a restore) or it \
                 was deleted (FLUSHALL, its tables dropped, its keys or rows deleted), and \
                 nothing tells which. Generators that held ids in it can no longer renew: \
                 each runs to its fence, then leases again by itself, waiting the TTL and the \
                 skew allowance from the moment it saw the loss, and no ID is issued twice; \
                 the next build waits as long, once",
            ),
            Condition::NoMarker { records } => write!(
                f,
                "{records} records, but no marker in force: the registry lost its data or \
                 its history changed since they were written (a restart, a TRUNCATE, a \
                 failover, a restore), and every one is void. Their holders run to their \
                 fences and lease again; the next acquisition writes a marker, and every id \
                 waits the TTL and the skew allowance past it"
            ),
            Condition::Vouched {
                marker_unix_millis: 0,
                gone,
            } if gone.is_empty() => f.write_str(
                "seen to begin by the registry, and nothing lost since: every record is \
                 vouched for",
            ),
            Condition::Vouched {
                marker_unix_millis,
                gone,
            } => {
                if *marker_unix_millis == 0 {
                    f.write_str("vouched for since the registry saw it begin")?;
                } else {
                    write!(
                        f,
                        "vouched for since its marker, {} (the moment the registry found it \
                         with no marker: new, emptied, or past a loss; ids with no record \
                         wait the TTL and the skew allowance past it)",
                        Moment::now(*marker_unix_millis)
                    )?;
                }
                if gone.is_empty() {
                    return Ok(());
                }
                let ids: Vec<String> = gone.iter().take(10).map(u64::to_string).collect();
                write!(
                    f,
                    "; but the records of {} id(s) handed out since are lost (deleted by \
                     hand?): {}{}. Their holders can no longer renew: they run to their \
                     fences and lease again by themselves, and whoever takes those ids next \
                     waits the TTL and the skew allowance from the moment the registry is \
                     seen without them, so no ID is issued twice",
                    gone.len(),
                    ids.join(", "),
                    if gone.len() > 10 { ", …" } else { "" }
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::backend::Record;

    fn listing(marker: Option<u64>, high_water: u64, workers: &[u64]) -> Listing {
        Listing {
            server_unix_millis: 5_000,
            marker_unix_millis: marker,
            high_water,
            records: workers
                .iter()
                .map(|&worker| Record {
                    worker,
                    marker_unix_millis: marker.unwrap_or(1),
                    ..Record::default()
                })
                .collect(),
        }
    }

    #[test]
    fn a_listing_says_what_the_loss_rule_reads_in_it() {
        assert_eq!(listing(None, 0, &[]).condition(), Condition::NoTrace);
        // Emptied and new look alike: no advice may assume it is new.
        assert!(!Condition::NoTrace.to_string().contains("leases init"));
        assert_eq!(
            listing(None, 0, &[0, 1]).condition(),
            Condition::NoMarker { records: 2 }
        );
        let gone = listing(Some(900), 4, &[0, 2]).condition();
        assert_eq!(
            gone,
            Condition::Vouched {
                marker_unix_millis: 900,
                gone: vec![1, 3]
            }
        );
        assert!(gone.to_string().contains("2 id(s)"), "{gone}");
        assert!(
            listing(Some(0), 1, &[0])
                .condition()
                .to_string()
                .contains("seen to begin")
        );
    }
}
