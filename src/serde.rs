//! Serde support for [`Snowflake`] (feature `serde`).
//!
//! By default a `Snowflake` serialises as a **decimal string** in
//! human-readable formats (JSON, YAML, TOML), so that browsers cannot corrupt
//! it ([why](crate#ids-in-json)). In binary formats (bincode, postcard,
//! MessagePack) it is a plain `u64`.
//! Deserialising accepts either a string or a number, so existing data keeps
//! loading.
//!
//! For a field that must be a JSON number (a consumer that is not a
//! browser), use [`as_number`]:
//!
//! ```
//! # #[cfg(feature = "serde")] {
//! use flakegen::Snowflake;
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Event {
//!     id: Snowflake,
//!     #[serde(with = "flakegen::serde::as_number")]
//!     parent: Snowflake,
//! }
//!
//! let event = Event { id: Snowflake::from_u64(7), parent: Snowflake::from_u64(5) };
//! assert_eq!(serde_json::to_string(&event).unwrap(), r#"{"id":"7","parent":5}"#);
//! # }
//! ```

use core::fmt;

use ::serde::de::{self, Deserializer, Visitor};
use ::serde::ser::Serializer;
use ::serde::{Deserialize, Serialize};

use crate::id::Snowflake;

impl Serialize for Snowflake {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.collect_str(self)
        } else {
            serializer.serialize_u64(self.as_u64())
        }
    }
}

impl<'de> Deserialize<'de> for Snowflake {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            deserializer.deserialize_any(SnowflakeVisitor)
        } else {
            deserializer.deserialize_u64(SnowflakeVisitor)
        }
    }
}

/// Accepts a decimal string or a non-negative integer.
struct SnowflakeVisitor;

impl Visitor<'_> for SnowflakeVisitor {
    type Value = Snowflake;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a snowflake id: a decimal string or a non-negative integer")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Snowflake, E> {
        Ok(Snowflake::from_u64(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Snowflake, E> {
        Snowflake::from_i64(v).map_err(E::custom)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Snowflake, E> {
        v.parse().map_err(E::custom)
    }
}

/// Serialises a [`Snowflake`] as a number in every format; deserialises a
/// number or a string. Use with `#[serde(with = "flakegen::serde::as_number")]`.
pub mod as_number {
    use super::*;

    /// Writes the ID as a `u64`.
    ///
    /// # Errors
    ///
    /// Whatever the serializer reports.
    pub fn serialize<S: Serializer>(id: &Snowflake, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(id.as_u64())
    }

    /// Reads the ID from a number, or from a decimal string in human-readable formats.
    ///
    /// # Errors
    ///
    /// A deserializer error for anything else, including negative numbers.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Snowflake, D::Error> {
        Snowflake::deserialize(deserializer)
    }
}
