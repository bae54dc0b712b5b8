//! The IDs every strategy issues under one fixed clock script, pinned.
//!
//! IDs are stored: a change that alters which ID a script produces changes
//! what users' databases hold and how they sort, so it must be deliberate.
//! The script crosses units, exhausts sequences, steps the clock back and
//! mixes singles, batches and non-blocking calls.

mod common;

use std::time::Duration;

use common::*;
use flakegen::{IdGenerator, Layout, Snowflake};

/// FNV-1a over the IDs' bytes: a fingerprint of the whole sequence.
fn fingerprint(ids: &[Snowflake]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for id in ids {
        for byte in id.as_u64().to_le_bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

fn script(layout: Layout, lead_units: u32) -> Vec<Vec<Snowflake>> {
    STRATEGIES
        .iter()
        .map(|strategy| {
            let (clock, builder) = manual(layout, 5);
            let generator = build(*strategy, builder.max_lead(layout.unit() * lead_units));
            let mut ids = vec![];
            let mut batch = [Snowflake::default(); 7];
            for step in 0..400u32 {
                match step % 11 {
                    0 | 5 => clock.advance(layout.unit()),
                    3 => clock.advance(Duration::from_micros(u64::from(step) * 37)),
                    7 if step % 3 == 0 => clock.rewind(layout.unit() * 3),
                    _ => {}
                }
                match step % 4 {
                    0 | 1 => {
                        if let Ok(id) = generator.try_next_id() {
                            ids.push(id);
                        }
                    }
                    2 => {
                        if generator.try_next_ids(&mut batch).is_ok() {
                            ids.extend(batch);
                        }
                    }
                    _ => {
                        if let Ok(id) = generator.try_next_id() {
                            ids.push(id);
                        }
                    }
                }
            }
            ids
        })
        .collect()
}

#[test]
fn every_strategy_issues_the_pinned_ids() {
    for (layout, lead, count, want) in [
        (Layout::TWITTER, 0, 782, 0x4d6a_395d_8551_54b3),
        (NARROW, 0, 222, 0x1d1f_6bd1_a09a_8ebc),
        (NARROW, 2, 486, 0x6675_dbd9_a091_639c),
        (Layout::SONYFLAKE, 1, 770, 0xefc2_71be_49c2_83b1),
    ] {
        let runs = script(layout, lead);
        for (strategy, ids) in STRATEGIES.iter().zip(&runs) {
            assert_eq!(
                (ids.len(), fingerprint(ids)),
                (count, want),
                "{strategy}, {layout:?}, lead {lead}: the IDs changed"
            );
        }
    }
}
