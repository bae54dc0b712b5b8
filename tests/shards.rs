//! `Snowflake::shard` spreads IDs evenly at any load: a chi-square test on
//! IDs from a real generator at low load (one ID per unit, so every sequence
//! is 0) and at saturation, with few workers, for 2, 16 and 1000 shards.
//! The same test shows `id % n` failing at low load.

mod common;

use std::num::NonZeroU32;

use common::*;
use flakegen::{IdGenerator, Layout, Snowflake};

/// IDs per run: about 100 per shard for 1000 shards.
const IDS: usize = 100_000;

/// The chi-square statistic of `counts` against a uniform expectation.
fn chi_square(counts: &[u64]) -> f64 {
    let total: u64 = counts.iter().sum();
    let expected = total as f64 / counts.len() as f64;
    counts
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum()
}

/// The chi-square value exceeded with probability 0.001 at `df` degrees of
/// freedom (Wilson–Hilferty; z = 3.09).
fn critical(df: f64) -> f64 {
    let z = 3.090_232;
    df * (1.0 - 2.0 / (9.0 * df) + z * (2.0 / (9.0 * df)).sqrt()).powi(3)
}

fn counts(ids: &[Snowflake], shards: u32, place: impl Fn(Snowflake) -> u32) -> Vec<u64> {
    let mut counts = vec![0u64; shards as usize];
    for &id in ids {
        counts[place(id) as usize] += 1;
    }
    counts
}

/// IDs from generators of `workers` workers taking turns, one ID per unit
/// each, with the clock moving a unit per round.
fn low_load(workers: u64) -> Vec<Snowflake> {
    let (clock, _) = manual(Layout::TWITTER, 0);
    let generators: Vec<_> = (0..workers)
        .map(|w| {
            let builder = flakegen::Builder::new().worker(w).clock(clock.clone());
            builder.build_atomic().unwrap()
        })
        .collect();
    let mut ids = Vec::with_capacity(IDS);
    while ids.len() < IDS {
        for generator in &generators {
            ids.push(generator.next_id().unwrap());
        }
        clock.advance(millis(1));
    }
    ids.truncate(IDS);
    ids
}

/// IDs from one generator taking every sequence number of every unit.
fn saturated() -> Vec<Snowflake> {
    let (clock, builder) = manual(Layout::TWITTER, 3);
    let generator = builder.build_atomic().unwrap();
    let mut ids = vec![Snowflake::default(); IDS];
    for chunk in ids.chunks_mut(4096) {
        generator.next_ids(chunk).unwrap();
        clock.advance(millis(1));
    }
    ids
}

#[test]
fn shards_are_even_at_low_load_and_at_saturation() {
    for (name, ids) in [
        ("low load, 1 worker", low_load(1)),
        ("low load, 3 workers", low_load(3)),
        ("saturated", saturated()),
    ] {
        for shards in [2, 16, 1000] {
            let n = NonZeroU32::new(shards).unwrap();
            let counts = counts(&ids, shards, |id| id.shard(n));
            let (stat, limit) = (chi_square(&counts), critical(f64::from(shards - 1)));
            assert!(
                stat < limit,
                "{name}, {shards} shards: chi-square {stat:.1} over {limit:.1}: {counts:?}"
            );
        }
    }
}

#[test]
fn modulo_is_skewed_at_low_load() {
    let ids = low_load(3);
    for shards in [2u32, 16, 1000] {
        let counts = counts(&ids, shards, |id| (id.as_u64() % u64::from(shards)) as u32);
        let (stat, limit) = (chi_square(&counts), critical(f64::from(shards - 1)));
        assert!(stat > limit, "{shards} shards: id % n passed ({stat:.1})");
    }
}
