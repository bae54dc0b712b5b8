//! IDs as Crockford base32: 13 characters of `0-9A-Z` (without `I`, `L`,
//! `O`, `U`), always 13, so that text sorts as the IDs do.

use core::fmt;
use core::ops::Deref;

use crate::id::{ParseIdError, Snowflake};

/// Crockford's alphabet, in ASCII order: fixed-width text sorts as numbers.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// The characters of an ID: 64 bits in 5-bit groups, the first of 4 bits.
const WIDTH: usize = 13;

/// Not a base32 character.
const INVALID: u8 = 0xff;

/// Each byte's value; lower case and Crockford's aliases (`O` for 0, `I`
/// and `L` for 1) read as the characters they stand for.
const DECODE: [u8; 256] = {
    let mut table = [INVALID; 256];
    let mut i = 0;
    while i < 32 {
        let c = ALPHABET[i];
        table[c as usize] = i as u8;
        table[c.to_ascii_lowercase() as usize] = i as u8;
        i += 1;
    }
    table[b'O' as usize] = 0;
    table[b'o' as usize] = 0;
    table[b'I' as usize] = 1;
    table[b'i' as usize] = 1;
    table[b'L' as usize] = 1;
    table[b'l' as usize] = 1;
    table
};

/// An ID as Crockford base32 text: 13 characters, upper case, kept on the
/// stack. It sorts (as bytes, or as a `str`) in the order of the IDs.
///
/// # Examples
///
/// ```
/// use flakegen::Snowflake;
///
/// let id = Snowflake::from_u64(1_050_118_621_198_921_728);
/// let text = id.to_base32();
/// assert_eq!(text.as_str(), "0X4P5A9Y9BC00");
/// assert_eq!(Snowflake::from_base32(&text)?, id);
/// assert!(Snowflake::from_u64(7).to_base32() < Snowflake::from_u64(40).to_base32());
/// # Ok::<(), flakegen::ParseIdError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Base32([u8; WIDTH]);

// `Base32::as_str` relies on it.
const _: () = assert!(ALPHABET.is_ascii());

impl Base32 {
    /// The text.
    #[inline]
    #[allow(unsafe_code)]
    pub fn as_str(&self) -> &str {
        // SAFETY: a `Base32` is made only by `Snowflake::to_base32`, which
        // writes every byte from `ALPHABET`, asserted ASCII above; ASCII is
        // UTF-8. (Checking it again cost 5 ns, twice the encoding.)
        unsafe { core::str::from_utf8_unchecked(&self.0) }
    }
}

impl Deref for Base32 {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Base32 {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Base32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl fmt::Debug for Base32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Snowflake {
    /// The ID as Crockford base32: 13 characters at every value, so that the
    /// text sorts as the IDs do; 6 fewer than the decimal form's 19 or 20.
    #[inline]
    pub const fn to_base32(self) -> Base32 {
        let id = self.as_u64();
        let mut text = [0u8; WIDTH];
        let mut i = 0;
        while i < WIDTH {
            // The last character holds bits 4..0, the first bits 63..60.
            let shift = 5 * (WIDTH - 1 - i);
            text[i] = ALPHABET[((id >> shift) & 31) as usize];
            i += 1;
        }
        Base32(text)
    }

    /// The ID whose Crockford base32 form is `text`: exactly 13
    /// characters; lower case, and `O`, `I` and `L` for `0`, `1` and `1`,
    /// are read too, as Crockford's spec has it.
    ///
    /// # Errors
    ///
    /// [`ParseIdError`] when `text` is not 13 characters long, holds a
    /// character outside the alphabet (`U`, punctuation, a space), or
    /// names a value past `u64::MAX` (a first character past `F`).
    #[inline]
    pub const fn from_base32(text: &str) -> Result<Snowflake, ParseIdError> {
        let bytes = text.as_bytes();
        if bytes.len() != WIDTH {
            return Err(ParseIdError::base32_length(bytes.len()));
        }
        let mut id: u64 = 0;
        let mut i = 0;
        while i < WIDTH {
            let value = DECODE[bytes[i] as usize];
            if value == INVALID {
                return Err(ParseIdError::base32_character(i));
            }
            id = (id << 5) | value as u64;
            i += 1;
        }
        // 13 characters hold 65 bits: the first may carry only 4.
        if DECODE[bytes[0] as usize] > 15 {
            return Err(ParseIdError::base32_too_large());
        }
        Ok(Snowflake::from_u64(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_at_a_fixed_width_in_order() {
        assert_eq!(Snowflake::from_u64(0).to_base32().as_str(), "0000000000000");
        assert_eq!(
            Snowflake::from_u64(31).to_base32().as_str(),
            "000000000000Z"
        );
        assert_eq!(
            Snowflake::from_u64(32).to_base32().as_str(),
            "0000000000010"
        );
        assert_eq!(
            Snowflake::from_u64(u64::MAX).to_base32().as_str(),
            "FZZZZZZZZZZZZ"
        );
        assert!(
            Snowflake::from_u64(u64::MAX - 1).to_base32()
                < Snowflake::from_u64(u64::MAX).to_base32()
        );
    }

    #[test]
    fn decodes_case_and_aliases_and_refuses_the_rest() {
        let id = Snowflake::from_u64(1_050_118_621_198_921_728);
        assert_eq!(Snowflake::from_base32("0x4p5a9y9bc00"), Ok(id));
        assert_eq!(Snowflake::from_base32("OX4P5A9Y9BCOO"), Ok(id));
        assert_eq!(
            Snowflake::from_base32("0000000000001"),
            Snowflake::from_base32("000000000000L")
        );
        let said = |text: &str| Snowflake::from_base32(text).unwrap_err().to_string();
        assert_eq!(
            said("0X4P5A9Y9BC0"),
            "invalid base32 id: 12 characters; base32 ids are 13 (0-9 and A-Z but I, L, O, U)"
        );
        assert_eq!(
            said("0X4P5A9Y9BCU0"),
            "invalid base32 id: character 11 is not base32 (0-9 and A-Z but I, L, O, U)"
        );
        assert_eq!(
            said("G000000000000"),
            "invalid base32 id: too large; base32 ids are at most FZZZZZZZZZZZZ"
        );
        assert!(Snowflake::from_base32("é00000000000").is_err());
    }
}
