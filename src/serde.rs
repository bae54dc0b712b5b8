//! Serde support for [`Snowflake`], [`Layout`] and [`Strategy`] (feature `serde`).
//!
//! A [`Layout`] in a configuration file is a preset's name (`"twitter"`),
//! or, in human-readable formats, a custom layout's fields as a map:
//!
//! ```
//! # #[cfg(feature = "serde")] {
//! use flakegen::{Layout, Strategy};
//!
//! #[derive(serde::Deserialize)]
//! struct Ids { layout: Layout, strategy: Strategy }
//!
//! let preset: Ids = serde_json::from_str(r#"{"layout": "sonyflake", "strategy": "ticker"}"#).unwrap();
//! assert_eq!(preset.layout, Layout::SONYFLAKE);
//! let custom: Ids = serde_json::from_str(
//!     r#"{"layout": {"worker_bits": 8, "sequence_bits": 14, "unit": "1ms"}, "strategy": "atomic"}"#,
//! ).unwrap();
//! assert_eq!(custom.layout.max_worker(), 255);
//! assert_eq!(custom.strategy, Strategy::Atomic);
//! # }
//! ```
//!
//! Binary formats hold a layout as its text form (see
//! [`Layout`'s `Display`](Layout#impl-Display-for-Layout)). Every field left
//! out takes [`Layout::builder`]'s default (Twitter's).
//!
//! By default a `Snowflake` serialises as a **decimal string** in
//! human-readable formats (JSON, YAML, TOML), so that browsers cannot corrupt
//! it ([why](crate#ids-in-json)). In binary formats (bincode, postcard,
//! MessagePack) it is a plain `u64`.
//! Deserialising accepts either a string or a number, so existing data keeps
//! loading.
//!
//! For a field that must be a JSON number, use [`as_safe_number`] where a
//! browser reads it (IDs of [`Layout::JAVASCRIPT`]: an ID a JavaScript
//! `number` would round is refused), or [`as_number`] where no browser
//! does:
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

use crate::generator::Strategy;
use crate::id::Snowflake;
use crate::layout::Layout;
use crate::layout_text::UnitText;

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

impl Serialize for Strategy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Strategy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(FromText::<Strategy>::new(
            "a strategy: atomic, mutex or ticker",
        ))
    }
}

impl Serialize for Layout {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use ::serde::ser::SerializeMap;
        if self.preset_name().is_some() || !serializer.is_human_readable() {
            return serializer.collect_str(self);
        }
        let mut map = serializer.serialize_map(Some(6))?;
        map.serialize_entry("timestamp_bits", &self.timestamp_bits())?;
        map.serialize_entry("worker_bits", &self.worker_bits())?;
        map.serialize_entry("sequence_bits", &self.sequence_bits())?;
        // Spelled as in the text form, which reads them back.
        map.serialize_entry("unit", &UnitText(self.unit()).to_string())?;
        map.serialize_entry("epoch_unix_millis", &self.epoch_unix_millis())?;
        map.serialize_entry("field_order", self.field_order().name())?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for Layout {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            deserializer.deserialize_any(LayoutVisitor)
        } else {
            deserializer.deserialize_str(LayoutVisitor)
        }
    }
}

/// A preset's name or the text form, or (human-readable formats) a map of fields.
struct LayoutVisitor;

impl<'de> Visitor<'de> for LayoutVisitor {
    type Value = Layout;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a layout: a preset's name, or a map of its fields")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Layout, E> {
        v.parse().map_err(E::custom)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Layout, A::Error> {
        // The map is read as the text form's pairs, so both share one parser.
        let mut text = String::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match key.as_str() {
                "unit" | "field_order" => map.next_value::<String>()?,
                _ => map.next_value::<u64>()?.to_string(),
            };
            if !text.is_empty() {
                text.push(',');
            }
            text.push_str(&format!("{key}={value}"));
        }
        if text.is_empty() {
            // No fields at all: every default.
            return Ok(Layout::builder().build_const());
        }
        text.parse().map_err(de::Error::custom)
    }
}

/// Any type read from its text form.
struct FromText<T> {
    expecting: &'static str,
    _type: core::marker::PhantomData<T>,
}

impl<T> FromText<T> {
    fn new(expecting: &'static str) -> Self {
        FromText {
            expecting,
            _type: core::marker::PhantomData,
        }
    }
}

impl<T: core::str::FromStr<Err: fmt::Display>> Visitor<'_> for FromText<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
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

/// The largest integer a JavaScript `number` holds exactly,
/// `Number.MAX_SAFE_INTEGER`: 2⁵³ − 1.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Serialises a [`Snowflake`] as a number, and refuses one that a
/// JavaScript `number` cannot hold exactly (above [`MAX_SAFE_INTEGER`]):
/// for IDs of [`Layout::JAVASCRIPT`](crate::Layout::JAVASCRIPT), or of any
/// layout of at most 53 bits, that a browser reads as numbers. An ID of a
/// wider layout is an error at the server, never a rounded ID in the
/// browser: send those as strings (the default). Deserialises a number or
/// a string. Use with `#[serde(with = "flakegen::serde::as_safe_number")]`.
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use flakegen::{AtomicGenerator, Builder, IdGenerator, Layout, Snowflake};
///
/// #[derive(serde::Serialize)]
/// struct Order {
///     #[serde(with = "flakegen::serde::as_safe_number")]
///     id: Snowflake,
/// }
///
/// let ids = Builder::new().layout(Layout::JAVASCRIPT).worker(3).build_atomic()?;
/// let order = Order { id: ids.next_id()? };
/// assert!(serde_json::to_string(&order).unwrap().starts_with(r#"{"id":"#));
///
/// // A Twitter-layout ID is above 2^53: refused, not rounded.
/// let wide = Order { id: Snowflake::from_u64(1_050_118_621_198_921_728) };
/// assert!(serde_json::to_string(&wide).is_err());
/// # }
/// # Ok::<(), flakegen::Error>(())
/// ```
pub mod as_safe_number {
    use super::*;

    /// Writes the ID as a `u64`, if JavaScript holds it exactly.
    ///
    /// # Errors
    ///
    /// A serializer error for an ID above [`MAX_SAFE_INTEGER`], and
    /// whatever the serializer reports.
    pub fn serialize<S: Serializer>(id: &Snowflake, serializer: S) -> Result<S::Ok, S::Error> {
        if id.as_u64() > MAX_SAFE_INTEGER {
            return Err(::serde::ser::Error::custom(format_args!(
                "ID {id} is above 2^53 - 1, which a JavaScript number holds exactly: a \
                 browser would read another ID; send it as a string (Snowflake's default \
                 form), or make IDs with a layout of 53 bits (Layout::JAVASCRIPT)"
            )));
        }
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

/// Serialises a [`Snowflake`] as its Crockford base32 text (13
/// characters, sorting as the IDs do: [`Snowflake::to_base32`]), for
/// `#[serde(with = "flakegen::serde::as_base32")]`. Reads that text back,
/// or a decimal string or a number, so that data written before keeps
/// loading: a string of 13 characters is base32, any other decimal.
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use flakegen::Snowflake;
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Link {
///     #[serde(with = "flakegen::serde::as_base32")]
///     id: Snowflake,
/// }
///
/// let link = Link { id: Snowflake::from_u64(1_050_118_621_198_921_728) };
/// let json = serde_json::to_string(&link).unwrap();
/// assert_eq!(json, r#"{"id":"0X4P5A9Y9BC00"}"#);
/// assert_eq!(serde_json::from_str::<Link>(&json).unwrap().id, link.id);
/// # }
/// ```
pub mod as_base32 {
    use super::*;

    /// Writes the ID as its base32 text.
    ///
    /// # Errors
    ///
    /// Whatever the serializer reports.
    pub fn serialize<S: Serializer>(id: &Snowflake, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(id.to_base32().as_str())
    }

    /// Reads the ID from its base32 text, a decimal string, or a number.
    ///
    /// # Errors
    ///
    /// A deserializer error for anything else.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Snowflake, D::Error> {
        struct Text;

        impl Visitor<'_> for Text {
            type Value = Snowflake;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an ID: 13 characters of base32, decimal digits, or a u64")
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Snowflake, E> {
                Ok(Snowflake::from_u64(v))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Snowflake, E> {
                // Base32 is always 13 characters, digits only or not; a
                // decimal ID of 13 digits is below 2^44, nearer an epoch
                // than any running layout issues.
                if v.len() == 13 {
                    Snowflake::from_base32(v).map_err(E::custom)
                } else {
                    v.parse().map_err(E::custom)
                }
            }
        }

        deserializer.deserialize_any(Text)
    }
}
