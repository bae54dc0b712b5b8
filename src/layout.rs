//! Bit layouts: where timestamp, worker id and sequence sit in 64 bits.
//!
//! All of the crate's bit arithmetic lives here: composing and decoding IDs,
//! converting clock readings to units, and the *ticks* the generators count
//! in (see `Layout::compose_tick`).

use core::fmt;
use core::time::Duration;
#[cfg(feature = "std")]
use std::time::{SystemTime, UNIX_EPOCH};

use crate::clock::units::NANOS_PER_MILLI;
#[cfg(feature = "std")]
use crate::clock::units::unix_nanos;
use crate::divisor::Divisor;
use crate::id::Snowflake;
use crate::id::{Field, IdError};

/// The order of the two fields below the timestamp.
///
/// The timestamp is always the most significant field, so IDs sort by time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldOrder {
    /// `timestamp | worker | sequence`, as Twitter, Discord and Instagram do.
    WorkerSequence,
    /// `timestamp | sequence | worker`, as Sonyflake does.
    SequenceWorker,
}

/// How a [`Snowflake`] divides its 64 bits, and what its timestamp counts.
///
/// ```text
/// Layout::TWITTER (63 bits used, the sign bit stays clear):
///
///  6 6                                                 2 2
///  3 2                                                 2 1          1 1
/// +-+---------------------------------------------------+------------+------------+
/// |0|     timestamp: 41 bits of ms since 2010-11-04      | worker: 10 | seq: 12    |
/// +-+---------------------------------------------------+------------+------------+
/// ```
///
/// | preset | timestamp | worker | sequence | unit | epoch | IDs/s per worker | runs out |
/// |---|---|---|---|---|---|---|---|
/// | [`TWITTER`](Layout::TWITTER) | 41 | 10 | 12 | 1 ms | 2010-11-04T01:42:54.657Z | 4,096,000 | 2080-07-10 |
/// | [`DISCORD`](Layout::DISCORD) | 42 | 10 (5 worker + 5 process) | 12 | 1 ms | 2015-01-01 | 4,096,000 | 2154-05-15 |
/// | [`SONYFLAKE`](Layout::SONYFLAKE) | 39 | 16, *below* the sequence | 8 | 10 ms | 2014-09-01 | 25,600 | 2188-11-16 |
/// | [`INSTAGRAM`](Layout::INSTAGRAM) | 41 | 13 (shard) | 10 | 1 ms | 2011-08-24T21:07:01.721Z | 1,024,000 | 2081-04-30 |
/// | [`JAVASCRIPT`](Layout::JAVASCRIPT) | 38 | 8 | 7 | 10 ms | 2025-01-01 | 12,800 | 2112-02-09 |
///
/// Discord and Instagram use all 64 bits, so their IDs pass `i64::MAX` (and stop
/// fitting a signed `BIGINT`) halfway through their lifetime: in 2084 and 2046.
/// `JAVASCRIPT` uses 53, so every ID it makes is a number JavaScript holds
/// exactly (see [IDs in JSON](crate#ids-in-json)).
///
/// A layout is `Copy` and its constructors are `const`, so it can live in a
/// `const` or `static`.
///
/// # Examples
///
/// ```
/// use flakegen::{Layout, Snowflake};
///
/// let fields = Layout::TWITTER.decode(Snowflake::from_u64(1050118621198921728))?;
/// assert_eq!((fields.worker, fields.sequence), (347, 0));
/// assert_eq!(Layout::TWITTER.unix_millis_of(fields.timestamp), 1539202764211); // 2018-10-10T20:19:24.211Z
/// assert_eq!(Layout::TWITTER.ids_per_second(), 4_096_000);
/// # Ok::<(), flakegen::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    timestamp_bits: u32,
    worker_bits: u32,
    sequence_bits: u32,
    order: FieldOrder,
    unit_nanos: u64,
    epoch_unix_nanos: u64,
    // Derived from the fields above, kept so the hot path does no work twice.
    worker_shift: u32,
    sequence_shift: u32,
    unit_divisor: Divisor,
    // `compose_tick`'s: a multiply by a power of two is a shift whose
    // amount needs no register of its own, and the mask is not rebuilt.
    sequence_mask: u64,
    timestamp_scale: u64,
    sequence_scale: u64,
}

/// The three fields of an ID, as numbers.
///
/// `timestamp` counts the layout's units since its epoch; turn it into a time
/// with [`Layout::time_of`] or [`Layout::unix_millis_of`].
///
/// # Examples
///
/// ```
/// use flakegen::{Layout, Fields};
///
/// let fields = Fields { timestamp: 1_000, worker: 7, sequence: 42 };
/// let id = Layout::TWITTER.compose(fields)?;
/// assert_eq!(Layout::TWITTER.decode(id)?, fields);
/// # Ok::<(), flakegen::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fields {
    /// Time units since the layout's epoch.
    pub timestamp: u64,
    /// The worker (machine, shard, process) id.
    pub worker: u64,
    /// The sequence number within the time unit.
    pub sequence: u64,
}

/// Builds a custom [`Layout`]; start from [`Layout::builder`].
///
/// Every setter is `const`, so a custom layout can be a `const` too (see
/// [`build_const`](LayoutBuilder::build_const)).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use flakegen::{FieldOrder, Layout};
///
/// // 40 bits of centiseconds since 2024-01-01, 8 worker bits, 15 sequence bits.
/// let layout = Layout::builder()
///     .timestamp_bits(40)
///     .worker_bits(8)
///     .sequence_bits(15)
///     .unit(Duration::from_millis(10))
///     .epoch_unix_millis(1_704_067_200_000)
///     .field_order(FieldOrder::WorkerSequence)
///     .build()?;
/// assert_eq!(layout.max_worker(), 255);
/// assert_eq!(layout.ids_per_second(), 3_276_800);
/// # Ok::<(), flakegen::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct LayoutBuilder {
    timestamp_bits: u32,
    worker_bits: u32,
    sequence_bits: u32,
    order: FieldOrder,
    unit_nanos: u128,
    epoch_unix_millis: u64,
}

impl LayoutBuilder {
    /// Width of the timestamp field in bits.
    pub const fn timestamp_bits(mut self, bits: u32) -> Self {
        self.timestamp_bits = bits;
        self
    }

    /// Width of the worker field in bits (0 for a single worker).
    pub const fn worker_bits(mut self, bits: u32) -> Self {
        self.worker_bits = bits;
        self
    }

    /// Width of the sequence field in bits: `2^bits` IDs per time unit per worker.
    pub const fn sequence_bits(mut self, bits: u32) -> Self {
        self.sequence_bits = bits;
        self
    }

    /// Order of the worker and sequence fields.
    pub const fn field_order(mut self, order: FieldOrder) -> Self {
        self.order = order;
        self
    }

    /// Length of one timestamp unit.
    pub const fn unit(mut self, unit: Duration) -> Self {
        self.unit_nanos = unit.as_nanos();
        self
    }

    /// The epoch: the instant timestamp 0 stands for, in milliseconds since 1970.
    pub const fn epoch_unix_millis(mut self, millis: u64) -> Self {
        self.epoch_unix_millis = millis;
        self
    }

    /// Validates the layout.
    ///
    /// # Errors
    ///
    /// A [`LayoutError`] when the timestamp has no bits, the fields add up
    /// to more than 64 bits, timestamp and sequence take all 64, the unit is zero
    /// or longer than `u64::MAX` ns, or the layout runs past the year 2554.
    pub const fn build(self) -> Result<Layout, LayoutError> {
        self.check()
    }

    /// Validates the layout at compile time, for `const` layouts.
    ///
    /// # Panics
    ///
    /// When [`build`](Self::build) would return an error; in a `const` item that
    /// is a compile error, never a run-time panic.
    ///
    /// # Examples
    ///
    /// ```
    /// use flakegen::Layout;
    ///
    /// const WIDE: Layout = Layout::builder().worker_bits(0).sequence_bits(22).build_const();
    /// assert_eq!(WIDE.max_sequence(), (1 << 22) - 1);
    /// ```
    pub const fn build_const(self) -> Layout {
        match self.check() {
            Ok(layout) => layout,
            Err(_) => panic!("invalid flakegen layout: see LayoutBuilder::build for the rules"),
        }
    }

    const fn check(self) -> Result<Layout, LayoutError> {
        let (ts, w, s) = (self.timestamp_bits, self.worker_bits, self.sequence_bits);
        if ts == 0 {
            return Err(LayoutError::NoTimestampBits);
        }
        // Each width is checked alone first so the sum below cannot overflow.
        if ts > 64 || w > 64 || s > 64 || ts + w + s > 64 {
            let total = ts.saturating_add(w).saturating_add(s);
            return Err(LayoutError::TooManyBits { total });
        }
        if ts + s > 63 {
            return Err(LayoutError::NoHeadroom);
        }
        if self.unit_nanos == 0 {
            return Err(LayoutError::ZeroUnit);
        }
        if self.unit_nanos > u64::MAX as u128 {
            return Err(LayoutError::UnitTooLarge);
        }
        let epoch_nanos = self.epoch_unix_millis as u128 * NANOS_PER_MILLI as u128;
        // ts <= 63 and unit < 2^64, so the product fits in u128.
        let end_nanos = epoch_nanos + (1u128 << ts) * self.unit_nanos;
        if end_nanos > u64::MAX as u128 {
            return Err(LayoutError::OutlivesClock);
        }
        let (worker_shift, sequence_shift) = match self.order {
            FieldOrder::WorkerSequence => (s, 0),
            FieldOrder::SequenceWorker => (0, w),
        };
        Ok(Layout {
            timestamp_bits: ts,
            worker_bits: w,
            sequence_bits: s,
            order: self.order,
            unit_nanos: self.unit_nanos as u64,
            epoch_unix_nanos: epoch_nanos as u64,
            worker_shift,
            sequence_shift,
            unit_divisor: Divisor::new(self.unit_nanos as u64),
            sequence_mask: mask(s),
            timestamp_scale: 1 << w,
            sequence_scale: 1 << sequence_shift,
        })
    }
}

const fn mask(bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        u64::MAX >> (64 - bits)
    }
}

impl Layout {
    /// Twitter's original layout: 41 bits of milliseconds since
    /// 2010-11-04T01:42:54.657Z (epoch 1288834974657), 10 worker bits,
    /// 12 sequence bits; the sign bit stays clear. Runs out in July 2080.
    pub const TWITTER: Layout = Layout::builder().build_const();

    /// Discord's layout: 42 bits of milliseconds since 2015-01-01, a 10-bit
    /// worker field that Discord splits into a 5-bit internal worker id (high)
    /// and a 5-bit process id (low), 12 sequence bits. Uses all 64 bits.
    pub const DISCORD: Layout = Layout::builder()
        .timestamp_bits(42)
        .epoch_unix_millis(1_420_070_400_000)
        .build_const();

    /// Sonyflake's layout: 39 bits of 10 ms units since 2014-09-01, then an
    /// 8-bit sequence, then a 16-bit machine id in the low bits (note the
    /// order: the sequence sits *above* the worker). 25,600 IDs/s per machine.
    pub const SONYFLAKE: Layout = Layout::builder()
        .timestamp_bits(39)
        .sequence_bits(8)
        .worker_bits(16)
        .field_order(FieldOrder::SequenceWorker)
        .unit(Duration::from_millis(10))
        .epoch_unix_millis(1_409_529_600_000)
        .build_const();

    /// Instagram's layout, from the PL/pgSQL `next_id` function they published:
    /// 41 bits of milliseconds since 1314220021721, a 13-bit shard id, a 10-bit
    /// sequence. Uses all 64 bits.
    pub const INSTAGRAM: Layout = Layout::builder()
        .worker_bits(13)
        .sequence_bits(10)
        .epoch_unix_millis(1_314_220_021_721)
        .build_const();

    /// A layout whose every ID a JavaScript `number` holds exactly: 53 bits
    /// in all (`Number.MAX_SAFE_INTEGER` is 2⁵³ − 1), 38 bits of 10 ms
    /// units since 2025-01-01, 8 worker bits, 7 sequence bits. 87 years
    /// (to 2112), 256 workers, 12,800 IDs/s each.
    ///
    /// Why these: a browser that reads an ID from JSON as a number rounds
    /// anything above 2⁵³ without a word, so the bits are 53; sonyflake's
    /// 10 ms unit buys the lifetime back (1 ms units would give 69 years or
    /// 16 workers); 256 workers cover a fleet that leases them; and 128 IDs
    /// per 10 ms per worker is more than one web entity (an order, a post)
    /// needs. Serialise its IDs with `flakegen::serde::as_safe_number`
    /// (feature `serde`) to send them as JSON numbers.
    pub const JAVASCRIPT: Layout = Layout::builder()
        .timestamp_bits(38)
        .worker_bits(8)
        .sequence_bits(7)
        .unit(Duration::from_millis(10))
        .epoch_unix_millis(1_735_689_600_000)
        .build_const();

    /// Starts a custom layout, with [`Layout::TWITTER`]'s settings as defaults.
    pub const fn builder() -> LayoutBuilder {
        LayoutBuilder {
            timestamp_bits: 41,
            worker_bits: 10,
            sequence_bits: 12,
            order: FieldOrder::WorkerSequence,
            unit_nanos: NANOS_PER_MILLI as u128,
            epoch_unix_millis: 1_288_834_974_657,
        }
    }

    /// Width of the timestamp field in bits.
    pub const fn timestamp_bits(&self) -> u32 {
        self.timestamp_bits
    }

    /// Width of the worker field in bits.
    pub const fn worker_bits(&self) -> u32 {
        self.worker_bits
    }

    /// Width of the sequence field in bits.
    pub const fn sequence_bits(&self) -> u32 {
        self.sequence_bits
    }

    /// Order of the worker and sequence fields.
    pub const fn field_order(&self) -> FieldOrder {
        self.order
    }

    /// How far up a field sits: the number of bits below it. With the
    /// field's width, what a decoder in another language needs (`flakegen
    /// sql` prints database functions from them).
    ///
    /// ```
    /// use flakegen::{Field, Layout};
    ///
    /// assert_eq!(Layout::TWITTER.shift(Field::Timestamp), 22);
    /// assert_eq!(Layout::TWITTER.shift(Field::Worker), 12);
    /// assert_eq!(Layout::SONYFLAKE.shift(Field::Sequence), 16); // above the machine id
    /// ```
    pub const fn shift(&self, field: Field) -> u32 {
        match field {
            Field::Timestamp => self.worker_bits + self.sequence_bits,
            Field::Worker => self.worker_shift,
            Field::Sequence => self.sequence_shift,
        }
    }

    /// Bits used in all; IDs of a layout with fewer than 64 never set the rest.
    pub const fn total_bits(&self) -> u32 {
        self.timestamp_bits + self.worker_bits + self.sequence_bits
    }

    /// Length of one timestamp unit.
    pub const fn unit(&self) -> Duration {
        Duration::from_nanos(self.unit_nanos)
    }

    /// The instant timestamp 0 stands for.
    #[cfg(feature = "std")]
    pub fn epoch(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(self.epoch_unix_nanos)
    }

    /// [`epoch`](Self::epoch) in milliseconds since 1970, as the builder takes it.
    pub const fn epoch_unix_millis(&self) -> u64 {
        self.epoch_unix_nanos / NANOS_PER_MILLI
    }

    /// The largest timestamp (units since the epoch) the layout can hold.
    pub const fn max_timestamp(&self) -> u64 {
        mask(self.timestamp_bits)
    }

    /// The largest worker id the layout can hold.
    pub const fn max_worker(&self) -> u64 {
        mask(self.worker_bits)
    }

    /// The largest sequence number the layout can hold.
    pub const fn max_sequence(&self) -> u64 {
        mask(self.sequence_bits)
    }

    /// IDs one worker can issue per time unit: `2^sequence_bits`.
    pub const fn ids_per_unit(&self) -> u64 {
        1 << self.sequence_bits
    }

    /// IDs one worker can issue per second, the ceiling of every generator.
    pub const fn ids_per_second(&self) -> u64 {
        ((self.ids_per_unit() as u128 * 1_000_000_000) / self.unit_nanos as u128) as u64
    }

    /// How long the timestamp lasts from the epoch: `2^timestamp_bits` units.
    pub const fn lifetime(&self) -> Duration {
        // Validation keeps epoch + lifetime within u64 nanoseconds.
        Duration::from_nanos((1u64 << self.timestamp_bits) * self.unit_nanos)
    }

    /// The first instant the layout cannot represent: no ID can be issued from then on.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::UNIX_EPOCH;
    /// use flakegen::Layout;
    ///
    /// let end = Layout::TWITTER.exhausted_at().duration_since(UNIX_EPOCH).unwrap();
    /// assert_eq!(end.as_millis(), 1288834974657 + (1 << 41)); // 2080-07-10
    /// ```
    #[cfg(feature = "std")]
    pub fn exhausted_at(&self) -> SystemTime {
        self.epoch() + self.lifetime()
    }

    /// [`exhausted_at`](Self::exhausted_at) in milliseconds since 1970,
    /// rounded down.
    pub(crate) const fn exhausted_at_unix_millis(&self) -> u64 {
        // Validation keeps epoch + lifetime within u64 nanoseconds.
        (self.epoch_unix_nanos + (1u64 << self.timestamp_bits) * self.unit_nanos) / NANOS_PER_MILLI
    }

    /// Puts fields together into an ID.
    ///
    /// # Errors
    ///
    /// [`IdError::FieldOutOfRange`] when a value does not fit its field.
    pub const fn compose(&self, fields: Fields) -> Result<Snowflake, IdError> {
        let checks = [
            (Field::Timestamp, fields.timestamp, self.max_timestamp()),
            (Field::Worker, fields.worker, self.max_worker()),
            (Field::Sequence, fields.sequence, self.max_sequence()),
        ];
        let mut i = 0;
        while i < checks.len() {
            let (field, value, max) = checks[i];
            if value > max {
                return Err(IdError::FieldOutOfRange { field, value, max });
            }
            i += 1;
        }
        Ok(Snowflake::from_u64(self.compose_tick(
            self.tick_of(fields),
            self.worker_field(fields.worker),
        )))
    }

    /// Takes an ID apart.
    ///
    /// # Errors
    ///
    /// [`IdError::OutsideLayout`] when the ID has bits set above the layout's fields.
    pub const fn decode(&self, id: Snowflake) -> Result<Fields, IdError> {
        let raw = id.as_u64();
        let bits = self.total_bits();
        if bits < 64 && raw >> bits != 0 {
            return Err(IdError::OutsideLayout { id: raw, bits });
        }
        Ok(Fields {
            timestamp: raw >> (self.worker_bits + self.sequence_bits),
            worker: (raw >> self.worker_shift) & self.max_worker(),
            sequence: (raw >> self.sequence_shift) & self.max_sequence(),
        })
    }

    /// The instant a timestamp stands for (the start of its unit).
    ///
    /// Timestamps above [`max_timestamp`](Self::max_timestamp) are treated as the maximum.
    #[cfg(feature = "std")]
    pub fn time_of(&self, timestamp: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(self.unit_start_nanos(timestamp))
    }

    /// The instant a timestamp stands for, in milliseconds since 1970.
    ///
    /// Timestamps above [`max_timestamp`](Self::max_timestamp) are treated as the maximum.
    pub const fn unix_millis_of(&self, timestamp: u64) -> u64 {
        self.unit_start_nanos(timestamp) / NANOS_PER_MILLI
    }

    /// The timestamp (whole units since the epoch) of an instant: 0 before
    /// the epoch, and possibly above [`max_timestamp`](Self::max_timestamp)
    /// after the layout's end.
    ///
    /// Handy for range queries: every ID issued at or after `time` is at least
    /// `compose(Fields { timestamp: timestamp_at(time), worker: 0, sequence: 0 })`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use flakegen::Layout;
    ///
    /// let t = UNIX_EPOCH + Duration::from_millis(1_539_202_764_211);
    /// assert_eq!(Layout::TWITTER.timestamp_at(t), 1_539_202_764_211 - 1_288_834_974_657);
    /// assert_eq!(Layout::TWITTER.timestamp_at(UNIX_EPOCH), 0);
    /// ```
    #[cfg(feature = "std")]
    pub fn timestamp_at(&self, time: SystemTime) -> u64 {
        self.units_since_epoch(unix_nanos(time))
    }

    /// The lowest ID this layout gives at or after `time`: the first of
    /// its unit, worker and sequence 0. With [`last_id_at`](Self::last_id_at),
    /// the bounds of a range query on an ID column (`WHERE id BETWEEN
    /// first AND last`), which an index on the IDs answers; `flakegen sql`
    /// prints the same as database functions. A time before the epoch gives
    /// the first ID of all.
    ///
    /// # Errors
    ///
    /// [`IdError`] when `time` lies past the layout's end.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use flakegen::{Layout, Snowflake};
    ///
    /// let nine = UNIX_EPOCH + Duration::from_millis(1_539_162_000_000); // 2018-10-10T09:00Z
    /// let ten = nine + Duration::from_secs(3600);
    /// let (first, last) = (Layout::TWITTER.first_id_at(nine)?, Layout::TWITTER.last_id_at(ten)?);
    /// // Posted 2018-10-10T20:19Z: outside 09:00 to 10:00.
    /// let id = Snowflake::from_u64(1_050_118_621_198_921_728);
    /// assert!(!(first..=last).contains(&id));
    /// assert!(first < last);
    /// # Ok::<(), flakegen::Error>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn first_id_at(&self, time: SystemTime) -> Result<Snowflake, IdError> {
        let timestamp = self.timestamp_at(time);
        self.compose(Fields {
            timestamp,
            worker: 0,
            sequence: 0,
        })
    }

    /// The highest ID this layout gives at or before `time`: the last of
    /// its unit, every worker and sequence bit set. A time before the
    /// epoch gives the last ID of the first unit.
    ///
    /// # Errors
    ///
    /// [`IdError`] when `time` lies past the layout's end.
    #[cfg(feature = "std")]
    pub fn last_id_at(&self, time: SystemTime) -> Result<Snowflake, IdError> {
        self.compose(Fields {
            timestamp: self.timestamp_at(time),
            worker: self.max_worker(),
            sequence: self.max_sequence(),
        })
    }

    // ---- crate-internal arithmetic for the generators ----

    /// What tells layouts apart, in an order: the fields that define one
    /// (the rest derive from them), so that layouts equal by `==` are
    /// equal here.
    pub(crate) const fn identity(&self) -> (u32, u32, u32, bool, u64, u64) {
        (
            self.timestamp_bits,
            self.worker_bits,
            self.sequence_bits,
            matches!(self.order, FieldOrder::WorkerSequence),
            self.unit_nanos,
            self.epoch_unix_nanos,
        )
    }

    /// Whole units from the epoch to `unix_nanos`; 0 for a time before the epoch.
    #[inline]
    pub(crate) const fn units_since_epoch(&self, unix_nanos: u64) -> u64 {
        self.unit_divisor
            .divide(unix_nanos.saturating_sub(self.epoch_unix_nanos))
    }

    /// Unix nanoseconds at which unit `units` begins (clamped to the layout's range).
    #[inline]
    pub(crate) const fn unit_start_nanos(&self, units: u64) -> u64 {
        let units = if units > self.max_timestamp() + 1 {
            self.max_timestamp() + 1
        } else {
            units
        };
        // Validation guarantees epoch + 2^timestamp_bits units fits in u64.
        self.epoch_unix_nanos + units * self.unit_nanos
    }

    /// Unix nanoseconds at which the unit of `tick` begins, for a tick of
    /// the layout (at most [`max_tick`](Self::max_tick)): a multiply where
    /// [`units_since_epoch`](Self::units_since_epoch) is a division. Wraps,
    /// meaninglessly, past the last tick.
    #[inline]
    pub(crate) const fn tick_start_nanos(&self, tick: u64) -> u64 {
        self.epoch_unix_nanos
            .wrapping_add(self.unit_of_tick(tick).wrapping_mul(self.unit_nanos))
    }

    /// The length of a unit in nanoseconds.
    #[inline]
    pub(crate) const fn unit_nanos(&self) -> u64 {
        self.unit_nanos
    }

    /// The first unit that starts at or after `unix_nanos` (0 before the
    /// epoch; possibly past [`max_timestamp`](Self::max_timestamp)).
    #[inline]
    pub(crate) const fn first_unit_at_or_after(&self, unix_nanos: u64) -> u64 {
        if unix_nanos <= self.epoch_unix_nanos {
            0
        } else {
            self.units_since_epoch(unix_nanos - 1) + 1
        }
    }

    /// The worker id moved to its place in an ID.
    #[inline]
    pub(crate) const fn worker_field(&self, worker: u64) -> u64 {
        worker << self.worker_shift
    }

    // ---- ticks ----
    //
    // A *tick* is an ID's timestamp and sequence packed without the worker,
    // `timestamp << sequence_bits | sequence`: the number the generators count
    // in. Ticks of one worker order exactly as its IDs do, and adding 1 to a
    // tick whose sequence is full carries into the next unit.
    //
    // | bits  | 63 … ts+s      | ts+s−1 … s                    | s−1 … 0  |
    // |-------|----------------|-------------------------------|----------|
    // | field | zero: headroom | timestamp (units since epoch) | sequence |
    //
    // Layouts keep `ts + s <= 63`, so a counter can run past the last tick
    // without wrapping round to tick 0.

    /// The largest tick the layout can hold: its last unit, sequence full.
    #[inline]
    pub(crate) const fn max_tick(&self) -> u64 {
        // ts + s <= 63: validation guarantees it.
        (1u64 << (self.timestamp_bits + self.sequence_bits)) - 1
    }

    /// The first tick of unit `unit` (which must be at most `max_timestamp() + 1`).
    #[inline]
    pub(crate) const fn first_tick(&self, unit: u64) -> u64 {
        unit << self.sequence_bits
    }

    /// The unit a tick belongs to.
    #[inline]
    pub(crate) const fn unit_of_tick(&self, tick: u64) -> u64 {
        tick >> self.sequence_bits
    }

    /// The tick of an ID's fields.
    #[inline]
    pub(crate) const fn tick_of(&self, fields: Fields) -> u64 {
        (fields.timestamp << self.sequence_bits) | fields.sequence
    }

    /// The ID of a tick, with a worker field from [`worker_field`](Self::worker_field).
    #[inline]
    pub(crate) const fn compose_tick(&self, tick: u64, worker_field: u64) -> u64 {
        // Wrapping: the scales are powers of two, so these are the shifts
        // `<< worker_bits` and `<< sequence_shift`, and a tick of the
        // layout's keeps every bit.
        ((tick & !self.sequence_mask).wrapping_mul(self.timestamp_scale))
            | ((tick & self.sequence_mask).wrapping_mul(self.sequence_scale))
            | worker_field
    }
}

impl Default for Layout {
    /// [`Layout::TWITTER`].
    fn default() -> Self {
        Layout::TWITTER
    }
}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Layout")
            .field("timestamp_bits", &self.timestamp_bits)
            .field("worker_bits", &self.worker_bits)
            .field("sequence_bits", &self.sequence_bits)
            .field("order", &self.order)
            .field("unit", &self.unit())
            .field(
                "epoch_unix_millis",
                &(self.epoch_unix_nanos / NANOS_PER_MILLI),
            )
            .finish()
    }
}

/// Why a [`Layout`](crate::Layout) was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LayoutError {
    /// The timestamp field has no bits, so IDs would not be time-ordered.
    NoTimestampBits,
    /// The fields add up to more than 64 bits.
    TooManyBits {
        /// The sum of the three widths.
        total: u32,
    },
    /// Timestamp and sequence together take all 64 bits, leaving the
    /// generators' packed state no bit to detect overflow with.
    NoHeadroom,
    /// The time unit is zero.
    ZeroUnit,
    /// The time unit does not fit in 64 bits of nanoseconds.
    UnitTooLarge,
    /// The layout's timestamp would run past the year 2554, where 64 bits of
    /// nanoseconds since 1970 (what a [`Clock`](crate::Clock) returns) end.
    OutlivesClock,
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid layout: ")?;
        match self {
            LayoutError::NoTimestampBits => f.write_str(
                "the timestamp field has no bits: give it at least 1 (41 is usual for milliseconds)",
            ),
            LayoutError::TooManyBits { total } => write!(
                f,
                "timestamp, worker and sequence widths add up to {total} bits: they must fit in 64"
            ),
            LayoutError::NoHeadroom => f.write_str(
                "timestamp and sequence widths add up to 64 bits: keep them to 63 at most \
                 (give the spare bit to the worker field or leave it unused)",
            ),
            LayoutError::ZeroUnit => f.write_str("the time unit is zero: use at least 1 ns"),
            LayoutError::UnitTooLarge => {
                f.write_str("the time unit is longer than u64::MAX nanoseconds (584 years)")
            }
            LayoutError::OutlivesClock => f.write_str(
                "epoch plus the timestamp's range runs past the year 2554, beyond what clocks \
                 measure: use fewer timestamp bits, a shorter unit or an earlier epoch",
            ),
        }
    }
}

impl core::error::Error for LayoutError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout_text::PRESETS;

    #[test]
    fn decodes_the_published_twitter_id() {
        // https://twitter.com/.../status/1050118621198921728, posted 2018-10-10T20:19:24.211Z.
        let fields = Layout::TWITTER
            .decode(Snowflake::from_u64(1_050_118_621_198_921_728))
            .unwrap();
        assert_eq!(fields.worker, 347);
        assert_eq!(fields.sequence, 0);
        assert_eq!(
            Layout::TWITTER.unix_millis_of(fields.timestamp),
            1_539_202_764_211
        );
    }

    #[test]
    fn decodes_a_discord_id() {
        // Discord's documented example: 175928847299117063 is 2016-04-30T11:18:25.796Z,
        // internal worker 1, process 0, increment 7.
        let fields = Layout::DISCORD
            .decode(Snowflake::from_u64(175_928_847_299_117_063))
            .unwrap();
        assert_eq!(
            Layout::DISCORD.unix_millis_of(fields.timestamp),
            1_462_015_105_796
        );
        assert_eq!(
            (fields.worker >> 5, fields.worker & 31, fields.sequence),
            (1, 0, 7)
        );
    }

    #[test]
    fn first_and_last_ids_bound_every_id_of_their_unit() {
        use crate::layout_text::PRESETS;
        for (name, layout) in PRESETS {
            let start = layout.epoch() + layout.unit() * 1_000_003;
            for step in [0u32, 1, 7, 999] {
                let t = start + layout.unit() * step + layout.unit() / 2;
                let (first, last) = (
                    layout.first_id_at(t).unwrap(),
                    layout.last_id_at(t).unwrap(),
                );
                for (worker, sequence) in
                    [(0, 0), (layout.max_worker(), layout.max_sequence()), (1, 2)]
                {
                    let timestamp = layout.timestamp_at(t);
                    let id = layout
                        .compose(Fields {
                            timestamp,
                            worker,
                            sequence,
                        })
                        .unwrap();
                    assert!(
                        first <= id && id <= last,
                        "{name}: {id} outside {first}..={last}"
                    );
                }
                let next = layout.first_id_at(t + layout.unit()).unwrap();
                assert_eq!(
                    next.as_u64(),
                    last.as_u64() + 1,
                    "{name}: units are adjacent"
                );
            }
            assert_eq!(
                layout.first_id_at(UNIX_EPOCH).unwrap().as_u64(),
                0,
                "{name}"
            );
            assert!(layout.first_id_at(layout.exhausted_at()).is_err(), "{name}");
        }
    }

    /// The end as errors say it, which a build without `std` reckons
    /// without a `SystemTime`.
    #[test]
    fn the_end_in_milliseconds_is_the_end_in_time() {
        let odd = Layout::builder()
            .unit(Duration::from_micros(1_500))
            .epoch_unix_millis(1_000_000_000_123)
            .build_const();
        for (name, layout) in PRESETS.iter().copied().chain([("odd", odd)]) {
            assert_eq!(
                layout.exhausted_at_unix_millis(),
                crate::clock::units::unix_millis(layout.exhausted_at()),
                "{name}"
            );
        }
    }

    #[test]
    fn sonyflake_puts_the_sequence_above_the_machine_id() {
        let id = Layout::SONYFLAKE
            .compose(Fields {
                timestamp: 3,
                worker: 0xABCD,
                sequence: 0x12,
            })
            .unwrap();
        assert_eq!(id.as_u64(), (3 << 24) | (0x12 << 16) | 0xABCD);
    }

    #[test]
    fn presets_report_their_limits() {
        assert_eq!(Layout::TWITTER.max_worker(), 1023);
        assert_eq!(Layout::SONYFLAKE.max_worker(), 65_535);
        assert_eq!(Layout::INSTAGRAM.max_worker(), 8191);
        assert_eq!(Layout::SONYFLAKE.ids_per_second(), 25_600);
        assert_eq!(Layout::INSTAGRAM.ids_per_second(), 1_024_000);
        assert_eq!(Layout::DISCORD.ids_per_second(), 4_096_000);
        let end_ms = |l: Layout| {
            l.exhausted_at()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64
        };
        assert_eq!(end_ms(Layout::TWITTER), 1_288_834_974_657 + (1 << 41));
        assert_eq!(end_ms(Layout::DISCORD), 1_420_070_400_000 + (1 << 42));
        assert_eq!(
            end_ms(Layout::SONYFLAKE),
            1_409_529_600_000 + (1 << 39) * 10
        );
        assert_eq!(Layout::TWITTER.total_bits(), 63);
        assert_eq!(Layout::DISCORD.total_bits(), 64);
    }

    #[test]
    fn presets_round_trip_their_extreme_fields() {
        for (name, layout) in PRESETS {
            for fields in [
                Fields::default(),
                Fields {
                    timestamp: 1,
                    worker: 1,
                    sequence: 1,
                },
                Fields {
                    timestamp: layout.max_timestamp(),
                    worker: layout.max_worker(),
                    sequence: layout.max_sequence(),
                },
                Fields {
                    timestamp: layout.max_timestamp() / 3,
                    worker: 0,
                    sequence: layout.max_sequence(),
                },
            ] {
                let id = layout.compose(fields).unwrap();
                assert_eq!(layout.decode(id).unwrap(), fields, "{name}");
                assert_eq!(
                    layout.tick_of(fields),
                    (fields.timestamp << layout.sequence_bits) | fields.sequence
                );
                let tick = layout.tick_of(fields);
                assert_eq!(
                    layout.compose_tick(tick, layout.worker_field(fields.worker)),
                    id.as_u64(),
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn compose_rejects_each_part_out_of_range() {
        let l = Layout::TWITTER;
        for (fields, want) in [
            (
                Fields {
                    timestamp: 1 << 41,
                    worker: 0,
                    sequence: 0,
                },
                Field::Timestamp,
            ),
            (
                Fields {
                    timestamp: 0,
                    worker: 1024,
                    sequence: 0,
                },
                Field::Worker,
            ),
            (
                Fields {
                    timestamp: 0,
                    worker: 0,
                    sequence: 4096,
                },
                Field::Sequence,
            ),
        ] {
            match l.compose(fields) {
                Err(IdError::FieldOutOfRange { field, .. }) => assert_eq!(field, want),
                other => panic!("expected {want:?} out of range, got {other:?}"),
            }
        }
    }

    #[test]
    fn decode_rejects_ids_wider_than_the_layout() {
        let err = Layout::TWITTER
            .decode(Snowflake::from_u64(1 << 63))
            .unwrap_err();
        assert!(matches!(err, IdError::OutsideLayout { bits: 63, .. }));
        assert!(
            Layout::DISCORD
                .decode(Snowflake::from_u64(u64::MAX))
                .is_ok()
        );
    }

    #[test]
    fn builder_rejects_every_bad_combination() {
        let b = Layout::builder();
        let cases = [
            (b.timestamp_bits(0), LayoutError::NoTimestampBits),
            (b.timestamp_bits(43), LayoutError::TooManyBits { total: 65 }),
            (
                b.worker_bits(u32::MAX),
                LayoutError::TooManyBits { total: u32::MAX },
            ),
            (
                b.sequence_bits(65),
                LayoutError::TooManyBits {
                    total: 41 + 10 + 65,
                },
            ),
            (
                b.timestamp_bits(40).worker_bits(0).sequence_bits(24),
                LayoutError::NoHeadroom,
            ),
            (b.unit(Duration::ZERO), LayoutError::ZeroUnit),
            (
                b.unit(Duration::from_secs(600 * 365 * 86_400)),
                LayoutError::UnitTooLarge,
            ),
            (b.timestamp_bits(45), LayoutError::TooManyBits { total: 67 }),
            (
                b.timestamp_bits(45).worker_bits(7),
                LayoutError::OutlivesClock,
            ),
            (b.epoch_unix_millis(u64::MAX), LayoutError::OutlivesClock),
        ];
        for (builder, want) in cases {
            match builder.build() {
                Err(got) => assert_eq!(got, want, "{builder:?}"),
                other => panic!("{builder:?}: expected {want:?}, got {other:?}"),
            }
        }
    }

    #[test]
    fn builder_accepts_edge_layouts() {
        let one_per_unit = Layout::builder().sequence_bits(0).build().unwrap();
        assert_eq!(one_per_unit.ids_per_unit(), 1);
        let single_worker = Layout::builder()
            .worker_bits(0)
            .sequence_bits(22)
            .build()
            .unwrap();
        assert_eq!(single_worker.max_worker(), 0);
        let nanos = Layout::builder()
            .timestamp_bits(61)
            .worker_bits(1)
            .sequence_bits(2)
            .unit(Duration::from_nanos(1))
            .epoch_unix_millis(0)
            .build()
            .unwrap();
        assert_eq!(nanos.units_since_epoch(123_456_789), 123_456_789);
    }

    #[test]
    fn first_unit_at_or_after_rounds_up() {
        let l = Layout::SONYFLAKE;
        let start = l.unit_start_nanos(7);
        assert_eq!(l.first_unit_at_or_after(start), 7);
        assert_eq!(l.first_unit_at_or_after(start + 1), 8);
        assert_eq!(l.first_unit_at_or_after(start - 1), 7);
        assert_eq!(l.first_unit_at_or_after(0), 0);
        assert_eq!(l.first_unit_at_or_after(l.unit_start_nanos(0)), 0);
    }

    #[test]
    fn units_round_down_and_clamp_before_the_epoch() {
        let l = Layout::SONYFLAKE;
        let epoch = l.unit_start_nanos(0);
        assert_eq!(l.units_since_epoch(epoch - 1), 0);
        assert_eq!(l.units_since_epoch(epoch + 9_999_999), 0);
        assert_eq!(l.units_since_epoch(epoch + 10_000_000), 1);
        assert_eq!(l.unit_start_nanos(1), epoch + 10_000_000);
        assert_eq!(
            l.unit_start_nanos(u64::MAX),
            l.unit_start_nanos(l.max_timestamp() + 1)
        );
    }
}
