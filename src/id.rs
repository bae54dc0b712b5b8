//! The ID newtype.

use core::fmt;
use core::str::FromStr;

use crate::error::{IdError, ParseIdError};

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
    fn orders_as_its_integer() {
        assert!(Snowflake::from_u64(1) < Snowflake::from_u64(2));
        assert_eq!(format!("{:?}", Snowflake::from_u64(5)), "Snowflake(5)");
    }
}
