//! The ID newtype.

use core::fmt;
use core::str::FromStr;

use crate::error::Error;

/// A 64-bit Snowflake ID.
///
/// A plain number with a type: it orders, hashes and prints as its `u64`, but
/// has no arithmetic, so it cannot be mixed up with other integers. Take it
/// apart with [`Layout::decode`](crate::Layout::decode).
///
/// In text it is decimal. JavaScript's numbers lose precision above 2^53, so
/// send IDs to browsers as strings, as Twitter and Discord do.
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
    /// [`Error::IdAboveI64`] when the ID is above `i64::MAX` (possible with
    /// layouts that use all 64 bits, such as [`Layout::DISCORD`](crate::Layout::DISCORD)).
    pub const fn to_i64(self) -> Result<i64, Error> {
        if self.0 > i64::MAX as u64 {
            Err(Error::IdAboveI64 { id: self.0 })
        } else {
            Ok(self.0 as i64)
        }
    }

    /// The ID read back from an `i64` column.
    ///
    /// # Errors
    ///
    /// [`Error::NegativeId`] when the value is negative.
    pub const fn from_i64(value: i64) -> Result<Snowflake, Error> {
        if value < 0 {
            Err(Error::NegativeId { value })
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
    type Error = Error;

    /// See [`Snowflake::from_i64`].
    fn try_from(value: i64) -> Result<Self, Error> {
        Snowflake::from_i64(value)
    }
}

impl TryFrom<Snowflake> for i64 {
    type Error = Error;

    /// See [`Snowflake::to_i64`].
    fn try_from(id: Snowflake) -> Result<Self, Error> {
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
    type Err = Error;

    /// Parses decimal digits only: no sign, spaces or separators.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidId`] for an empty string, any character other than
    /// `0`–`9`, or a value above `u64::MAX`.
    fn from_str(s: &str) -> Result<Self, Error> {
        let reject = |reason| Error::InvalidId {
            input: s.chars().take(40).collect(),
            reason,
        };
        if s.is_empty() {
            return Err(reject("empty: expected decimal digits"));
        }
        if !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(reject(
                "expected decimal digits only (no sign, spaces or separators)",
            ));
        }
        s.parse::<u64>()
            .map(Snowflake)
            .map_err(|_| reject("too large: ids are at most 18446744073709551615"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert!(matches!(err, Error::InvalidId { .. }), "{bad:?}: {err:?}");
            assert!(err.to_string().starts_with("invalid id"), "{err}");
        }
    }

    #[test]
    fn long_input_is_truncated_in_the_error() {
        let long = "x".repeat(1000);
        match long.parse::<Snowflake>() {
            Err(Error::InvalidId { input, .. }) => assert_eq!(input.len(), 40),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn i64_conversions_stop_at_the_sign_bit() {
        assert_eq!(
            i64::try_from(Snowflake::from_u64(i64::MAX as u64)).unwrap(),
            i64::MAX
        );
        assert!(matches!(
            i64::try_from(Snowflake::from_u64(i64::MAX as u64 + 1)),
            Err(Error::IdAboveI64 { id }) if id == 1 << 63
        ));
        assert_eq!(Snowflake::try_from(0i64).unwrap(), Snowflake::from_u64(0));
        assert!(matches!(
            Snowflake::try_from(-1i64),
            Err(Error::NegativeId { value: -1 })
        ));
        assert!(matches!(
            Snowflake::try_from(i64::MIN),
            Err(Error::NegativeId { .. })
        ));
    }

    #[test]
    fn orders_as_its_integer() {
        assert!(Snowflake::from_u64(1) < Snowflake::from_u64(2));
        assert_eq!(format!("{:?}", Snowflake::from_u64(5)), "Snowflake(5)");
    }
}
