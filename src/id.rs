//! The ID newtype.

use core::fmt;
use core::num::NonZeroU32;
use core::str::FromStr;

/// A 64-bit Snowflake ID.
///
/// A plain number with a type: it orders, hashes and prints as its `u64`, but
/// has no arithmetic, so it cannot be mixed up with other integers. Take it
/// apart with [`Layout::decode`](crate::Layout::decode).
///
/// In text it is decimal; send it to browsers as a string
/// ([why](crate#ids-in-json)).
///
/// # Examples
///
/// ```
/// use flakegen::Snowflake;
///
/// let id: Snowflake = "1050118621198921728".parse()?;
/// assert_eq!(id.as_u64(), 1050118621198921728);
/// assert_eq!(id.to_string(), "1050118621198921728");
///
/// // For a signed BIGINT column:
/// let signed = i64::try_from(id)?;
/// assert_eq!(Snowflake::try_from(signed)?, id);
/// # Ok::<(), flakegen::Error>(())
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Snowflake(u64);

impl Snowflake {
    /// The ID with the given bits.
    pub const fn from_u64(id: u64) -> Snowflake {
        Snowflake(id)
    }

    /// The ID's bits.
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// The ID as an `i64`, for signed 64-bit database columns.
    ///
    /// # Errors
    ///
    /// [`IdError::AboveI64`] when the ID is above `i64::MAX` (possible with
    /// layouts that use all 64 bits, such as [`Layout::DISCORD`](crate::Layout::DISCORD)).
    pub const fn to_i64(self) -> Result<i64, IdError> {
        if self.0 > i64::MAX as u64 {
            Err(IdError::AboveI64 { id: self.0 })
        } else {
            Ok(self.0 as i64)
        }
    }

    /// The shard, out of `shards`, that this ID belongs to: the same ID
    /// always gives the same shard, so a row's shard can be found again from
    /// its key alone.
    ///
    /// Every bit of the ID is mixed (MurmurHash3's 64-bit finalizer,
    /// `fmix64`), then mapped onto `0..shards` by multiplying and keeping the
    /// high 64 bits (Lemire's reduction):
    ///
    /// ```text
    /// h = id;  h ^= h >> 33;  h *= 0xff51afd7ed558ccd;  h ^= h >> 33;
    ///          h *= 0xc4ceb9fe1a85ec53;  h ^= h >> 33;        (wrapping u64)
    /// shard = (h as u128 * shards as u128) >> 64
    /// ```
    ///
    /// This function is part of the crate's stable contract: it will not
    /// change in any version, so shards written today are found tomorrow.
    ///
    /// # Why not `id % shards`
    ///
    /// The low bits of a Snowflake are its sequence (or, in Sonyflake's
    /// layout, its worker). At low load nearly every ID has sequence 0, so
    /// with [`Layout::TWITTER`](crate::Layout::TWITTER) every ID is a multiple of
    /// 4096: `id % 2` is always 0, and `id % 16` sends everything to shard 0.
    /// With few workers, `id % 1000` is skewed too. Mixing all 64 bits
    /// spreads IDs evenly whatever the load and the number of workers.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::num::NonZeroU32;
    /// use flakegen::{Fields, Layout};
    ///
    /// const SHARDS: NonZeroU32 = NonZeroU32::new(16).unwrap();
    /// // Low load: one ID per millisecond, so every sequence is 0.
    /// let ids: Vec<_> = (0..1_600)
    ///     .map(|ms| Layout::TWITTER.compose(Fields { timestamp: 500_000_000_000 + ms, worker: 7, sequence: 0 }))
    ///     .collect::<Result<_, _>>()?;
    /// assert!(ids.iter().all(|id| id.as_u64() % 16 == 0)); // `%` puts all of them on shard 0
    /// let mut per_shard = [0; 16];
    /// for id in &ids {
    ///     per_shard[id.shard(SHARDS) as usize] += 1;
    /// }
    /// assert!(per_shard.iter().all(|&n| (60..=140).contains(&n))); // about 100 each
    /// # Ok::<(), flakegen::Error>(())
    /// ```
    pub const fn shard(self, shards: NonZeroU32) -> u32 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^= h >> 33;
        ((h as u128 * shards.get() as u128) >> 64) as u32
    }

    /// The ID read back from an `i64` column.
    ///
    /// # Errors
    ///
    /// [`IdError::Negative`] when the value is negative.
    pub const fn from_i64(value: i64) -> Result<Snowflake, IdError> {
        if value < 0 {
            Err(IdError::Negative { value })
        } else {
            Ok(Snowflake(value as u64))
        }
    }
}

impl From<u64> for Snowflake {
    fn from(id: u64) -> Self {
        Snowflake(id)
    }
}

impl From<Snowflake> for u64 {
    fn from(id: Snowflake) -> Self {
        id.0
    }
}

impl TryFrom<i64> for Snowflake {
    type Error = IdError;

    /// See [`Snowflake::from_i64`].
    fn try_from(value: i64) -> Result<Self, IdError> {
        Snowflake::from_i64(value)
    }
}

impl TryFrom<Snowflake> for i64 {
    type Error = IdError;

    /// See [`Snowflake::to_i64`].
    fn try_from(id: Snowflake) -> Result<Self, IdError> {
        id.to_i64()
    }
}

impl fmt::Display for Snowflake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for Snowflake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Snowflake({})", self.0)
    }
}

impl FromStr for Snowflake {
    type Err = ParseIdError;

    /// Parses decimal digits only: no sign, spaces or separators.
    ///
    /// # Errors
    ///
    /// A [`ParseIdError`] for an empty string, any byte other than `0`–`9`,
    /// or a value above `u64::MAX`.
    fn from_str(s: &str) -> Result<Self, ParseIdError> {
        if s.is_empty() {
            return Err(ParseIdError::empty());
        }
        let mut id = 0u64;
        for (at, byte) in s.bytes().enumerate() {
            if !byte.is_ascii_digit() {
                return Err(ParseIdError::not_a_digit(at));
            }
            id = id
                .checked_mul(10)
                .and_then(|id| id.checked_add(u64::from(byte - b'0')))
                .ok_or(ParseIdError::too_large())?;
        }
        Ok(Snowflake(id))
    }
}

/// Which field of an ID a value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// Time units since the layout's epoch.
    Timestamp,
    /// The worker (machine, shard) id.
    Worker,
    /// The per-unit sequence number.
    Sequence,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Timestamp => "timestamp",
            Field::Worker => "worker id",
            Field::Sequence => "sequence",
        })
    }
}

/// An ID, or a value meant to become one, that does not fit where it is put:
/// a layout's fields, or a signed 64-bit column.
///
/// # Examples
///
/// ```
/// use flakegen::{Field, Fields, IdError, Layout};
///
/// let err = Layout::TWITTER
///     .compose(Fields { timestamp: 0, worker: 1024, sequence: 0 })
///     .unwrap_err();
/// assert_eq!(err, IdError::FieldOutOfRange { field: Field::Worker, value: 1024, max: 1023 });
/// assert!(err.to_string().contains("at most 1023"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IdError {
    /// A value given to [`Layout::compose`](crate::Layout::compose) does not fit its field.
    FieldOutOfRange {
        /// Which field.
        field: Field,
        /// The value given.
        value: u64,
        /// The largest value the field can hold.
        max: u64,
    },
    /// An ID has bits set above the layout's fields, so it was not made with this layout.
    OutsideLayout {
        /// The ID.
        id: u64,
        /// How many low bits the layout uses.
        bits: u32,
    },
    /// A negative `i64` cannot be an ID.
    Negative {
        /// The value given.
        value: i64,
    },
    /// The ID is above `i64::MAX`, so it does not fit a signed 64-bit column.
    AboveI64 {
        /// The ID.
        id: u64,
    },
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IdError::FieldOutOfRange { field, value, max } => {
                write!(
                    f,
                    "{field} {value} does not fit the layout: it must be at most {max}"
                )
            }
            IdError::OutsideLayout { id, bits } => write!(
                f,
                "id {id} has bits set above the layout's {bits} bits: \
                 it was made with another layout; decode it with that one"
            ),
            IdError::Negative { value } => write!(
                f,
                "negative value {value} is not an id (ids are never negative): \
                 was it read from the wrong column?"
            ),
            IdError::AboveI64 { id } => write!(
                f,
                "id {id} is above i64::MAX and does not fit a signed 64-bit column: \
                 store it as NUMERIC(20) or text, or use a layout that keeps the top bit clear"
            ),
        }
    }
}

impl core::error::Error for IdError {}

/// A string that is not the decimal form of a 64-bit ID, or not its base32
/// form ([`Snowflake::from_base32`]). Holds no copy of the input, so parsing
/// never allocates.
///
/// # Examples
///
/// ```
/// use flakegen::Snowflake;
///
/// let err = "12ab".parse::<Snowflake>().unwrap_err();
/// assert_eq!(err.to_string(), "invalid id: byte 2 is not a decimal digit (ids are digits only: no sign, spaces or separators)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParseIdError {
    kind: ParseIdErrorKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ParseIdErrorKind {
    Empty,
    NotADigit { at: usize },
    TooLarge,
    Base32Length { len: usize },
    Base32Character { at: usize },
    Base32TooLarge,
}

impl ParseIdError {
    pub(crate) const fn empty() -> Self {
        ParseIdError {
            kind: ParseIdErrorKind::Empty,
        }
    }

    pub(crate) const fn not_a_digit(at: usize) -> Self {
        ParseIdError {
            kind: ParseIdErrorKind::NotADigit { at },
        }
    }

    pub(crate) const fn too_large() -> Self {
        ParseIdError {
            kind: ParseIdErrorKind::TooLarge,
        }
    }

    pub(crate) const fn base32_length(len: usize) -> Self {
        ParseIdError {
            kind: ParseIdErrorKind::Base32Length { len },
        }
    }

    pub(crate) const fn base32_character(at: usize) -> Self {
        ParseIdError {
            kind: ParseIdErrorKind::Base32Character { at },
        }
    }

    pub(crate) const fn base32_too_large() -> Self {
        ParseIdError {
            kind: ParseIdErrorKind::Base32TooLarge,
        }
    }
}

impl fmt::Display for ParseIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ParseIdErrorKind::Empty => f.write_str("invalid id: empty; expected decimal digits"),
            ParseIdErrorKind::NotADigit { at } => write!(
                f,
                "invalid id: byte {at} is not a decimal digit \
                 (ids are digits only: no sign, spaces or separators)"
            ),
            ParseIdErrorKind::TooLarge => {
                f.write_str("invalid id: too large; ids are at most 18446744073709551615")
            }
            ParseIdErrorKind::Base32Length { len } => write!(
                f,
                "invalid base32 id: {len} characters; base32 ids are 13 \
                 (0-9 and A-Z but I, L, O, U)"
            ),
            ParseIdErrorKind::Base32Character { at } => write!(
                f,
                "invalid base32 id: character {at} is not base32 (0-9 and A-Z but I, L, O, U)"
            ),
            ParseIdErrorKind::Base32TooLarge => {
                f.write_str("invalid base32 id: too large; base32 ids are at most FZZZZZZZZZZZZ")
            }
        }
    }
}

impl core::error::Error for ParseIdError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_id_errors_are_small_and_copy() {
        fn copy<T: Copy>() {}
        copy::<ParseIdError>();
        copy::<IdError>();
        assert!(size_of::<Result<Snowflake, ParseIdError>>() <= 24);
    }

    #[test]
    fn parses_and_prints_decimal() {
        for n in [0, 1, 1_050_118_621_198_921_728, u64::MAX] {
            let id = Snowflake::from_u64(n);
            assert_eq!(id.to_string().parse::<Snowflake>().unwrap(), id);
        }
        assert_eq!("007".parse::<Snowflake>().unwrap().as_u64(), 7);
    }

    #[test]
    fn rejects_what_is_not_a_decimal_u64() {
        for bad in [
            "",
            " 1",
            "1 ",
            "+1",
            "-1",
            "0x10",
            "1_000",
            "1.0",
            "١٢",
            "18446744073709551616",
        ] {
            let err = bad.parse::<Snowflake>().unwrap_err();
            assert!(err.to_string().starts_with("invalid id"), "{err}");
        }
        assert_eq!(
            "12x4".parse::<Snowflake>(),
            Err(ParseIdError::not_a_digit(2))
        );
        assert_eq!("".parse::<Snowflake>(), Err(ParseIdError::empty()));
        assert_eq!(
            "18446744073709551616".parse::<Snowflake>(),
            Err(ParseIdError::too_large())
        );
    }

    #[test]
    fn i64_conversions_stop_at_the_sign_bit() {
        assert_eq!(
            i64::try_from(Snowflake::from_u64(i64::MAX as u64)).unwrap(),
            i64::MAX
        );
        assert!(matches!(
            i64::try_from(Snowflake::from_u64(i64::MAX as u64 + 1)),
            Err(IdError::AboveI64 { id }) if id == 1 << 63
        ));
        assert_eq!(Snowflake::try_from(0i64).unwrap(), Snowflake::from_u64(0));
        assert!(matches!(
            Snowflake::try_from(-1i64),
            Err(IdError::Negative { value: -1 })
        ));
        assert!(matches!(
            Snowflake::try_from(i64::MIN),
            Err(IdError::Negative { .. })
        ));
    }

    #[test]
    fn shards_are_pinned() {
        // The shard function is a stable contract: these must never change.
        // (Computed apart from this code, from the formula in the docs.)
        let n = |k| NonZeroU32::new(k).unwrap();
        let id = Snowflake::from_u64(1_050_118_621_198_921_728);
        assert_eq!(
            [
                id.shard(n(1)),
                id.shard(n(2)),
                id.shard(n(16)),
                id.shard(n(1000))
            ],
            [0, 0, 4, 310]
        );
        assert_eq!(Snowflake::from_u64(0).shard(n(1000)), 0);
        assert_eq!(
            Snowflake::from_u64(u64::MAX).shard(n(u32::MAX)),
            1_689_612_810
        );
    }

    #[test]
    fn orders_as_its_integer() {
        assert!(Snowflake::from_u64(1) < Snowflake::from_u64(2));
        assert_eq!(format!("{:?}", Snowflake::from_u64(5)), "Snowflake(5)");
    }
}
