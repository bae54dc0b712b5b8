//! A layout as text, for configuration files and command lines: a preset's
//! name, or a custom layout's fields.

use core::fmt;
use core::str::FromStr;
use core::time::Duration;

use crate::clock::units::Rfc3339;
use crate::layout::{FieldOrder, Layout, LayoutError};

/// The presets, by the names their text form uses.
pub(crate) const PRESETS: [(&str, Layout); 5] = [
    ("twitter", Layout::TWITTER),
    ("discord", Layout::DISCORD),
    ("sonyflake", Layout::SONYFLAKE),
    ("instagram", Layout::INSTAGRAM),
    ("javascript", Layout::JAVASCRIPT),
];

impl Layout {
    /// Every preset, with the name its text form uses.
    ///
    /// ```
    /// use flakegen::Layout;
    ///
    /// assert!(Layout::presets().contains(&("javascript", Layout::JAVASCRIPT)));
    /// ```
    pub fn presets() -> &'static [(&'static str, Layout)] {
        &PRESETS
    }

    /// The preset's name (`"twitter"`, `"discord"`, `"sonyflake"`,
    /// `"instagram"`, `"javascript"`) if this layout is one of them.
    pub fn preset_name(&self) -> Option<&'static str> {
        PRESETS
            .iter()
            .find(|(_, preset)| preset == self)
            .map(|&(name, _)| name)
    }

    /// The instant a timestamp stands for, as RFC 3339 text in UTC to the
    /// millisecond: what a person reads in a log line.
    ///
    /// # Examples
    ///
    /// ```
    /// use flakegen::{Layout, Snowflake};
    ///
    /// let fields = Layout::TWITTER.decode(Snowflake::from_u64(1_050_118_621_198_921_728))?;
    /// let time = Layout::TWITTER.rfc3339_of(fields.timestamp);
    /// assert_eq!(time.to_string(), "2018-10-10T20:19:24.211Z");
    /// # Ok::<(), flakegen::Error>(())
    /// ```
    pub fn rfc3339_of(&self, timestamp: u64) -> impl fmt::Display + fmt::Debug + use<> {
        Rfc3339(self.unix_millis_of(timestamp))
    }
}

impl FieldOrder {
    /// The name the text form uses.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            FieldOrder::WorkerSequence => "worker-sequence",
            FieldOrder::SequenceWorker => "sequence-worker",
        }
    }
}

/// A preset's name, or a custom layout's fields as `key=value` pairs:
///
/// ```text
/// twitter
/// timestamp_bits=40,worker_bits=8,sequence_bits=15,unit=10ms,epoch_unix_millis=1704067200000,field_order=worker-sequence
/// ```
///
/// Parsing is its inverse: a preset's name (any case), or any of those keys,
/// the others taking [`Layout::builder`]'s defaults (Twitter's). A unit is a
/// whole number of `ns`, `us`, `ms` or `s`.
///
/// # Examples
///
/// ```
/// use flakegen::Layout;
///
/// assert_eq!("Sonyflake".parse::<Layout>()?, Layout::SONYFLAKE);
/// assert_eq!(Layout::TWITTER.to_string(), "twitter");
/// let custom: Layout = "worker_bits=8,sequence_bits=14".parse()?;
/// assert_eq!(custom.max_worker(), 255);
/// assert_eq!(custom.to_string().parse::<Layout>()?, custom);
/// # Ok::<(), flakegen::Error>(())
/// ```
impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = self.preset_name() {
            return f.write_str(name);
        }
        write!(
            f,
            "timestamp_bits={},worker_bits={},sequence_bits={},unit={},epoch_unix_millis={},\
             field_order={}",
            self.timestamp_bits(),
            self.worker_bits(),
            self.sequence_bits(),
            UnitText(self.unit()),
            self.epoch_unix_millis(),
            self.field_order().name(),
        )
    }
}

impl FromStr for Layout {
    type Err = ParseLayoutError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if let Some(&(_, preset)) = PRESETS.iter().find(|(n, _)| n.eq_ignore_ascii_case(s)) {
            return Ok(preset);
        }
        if !s.contains('=') {
            return Err(ParseLayoutError::UnknownPreset);
        }
        let mut builder = Layout::builder();
        for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').ok_or(ParseLayoutError::NotAPair)?;
            let (key, value) = (key.trim(), value.trim());
            let bits = |key: &'static str| {
                value
                    .parse::<u32>()
                    .map_err(|_| ParseLayoutError::BadValue { key })
            };
            builder = match key {
                "timestamp_bits" => builder.timestamp_bits(bits("timestamp_bits")?),
                "worker_bits" => builder.worker_bits(bits("worker_bits")?),
                "sequence_bits" => builder.sequence_bits(bits("sequence_bits")?),
                "unit" => builder.unit(parse_unit(value)?),
                "epoch_unix_millis" => builder.epoch_unix_millis(value.parse().map_err(|_| {
                    ParseLayoutError::BadValue {
                        key: "epoch_unix_millis",
                    }
                })?),
                "field_order" => builder.field_order(match value {
                    "worker-sequence" => FieldOrder::WorkerSequence,
                    "sequence-worker" => FieldOrder::SequenceWorker,
                    _ => return Err(ParseLayoutError::BadValue { key: "field_order" }),
                }),
                _ => return Err(ParseLayoutError::UnknownKey),
            };
        }
        builder.build().map_err(ParseLayoutError::Invalid)
    }
}

/// A unit in the largest of ns, us, ms, s that divides it.
pub(crate) struct UnitText(pub(crate) Duration);

impl fmt::Display for UnitText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.0.as_nanos();
        for (per, suffix) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
            if nanos % per == 0 {
                return write!(f, "{}{suffix}", nanos / per);
            }
        }
        write!(f, "{nanos}ns")
    }
}

fn parse_unit(value: &str) -> Result<Duration, ParseLayoutError> {
    let bad = ParseLayoutError::BadValue { key: "unit" };
    let digits = value.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let count: u64 = digits.parse().map_err(|_| bad)?;
    let per: u64 = match &value[digits.len()..] {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(bad),
    };
    count.checked_mul(per).map(Duration::from_nanos).ok_or(bad)
}

/// Text that names no [`Layout`](crate::Layout): see its
/// [`FromStr`](crate::Layout#impl-FromStr-for-Layout) for the forms it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParseLayoutError {
    /// A single word that is no preset's name.
    UnknownPreset,
    /// A part of a custom layout that is not `key=value`.
    NotAPair,
    /// A key that is no field of a layout.
    UnknownKey,
    /// A value that does not fit its key.
    BadValue {
        /// The key.
        key: &'static str,
    },
    /// The fields do not make a valid layout.
    Invalid(LayoutError),
}

impl fmt::Display for ParseLayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const FORM: &str = "a preset (twitter, discord, sonyflake, instagram, javascript) or fields such as \
             \"timestamp_bits=41,worker_bits=10,sequence_bits=12,unit=1ms,\
             epoch_unix_millis=1288834974657,field_order=worker-sequence\"";
        match self {
            ParseLayoutError::UnknownPreset => write!(f, "unknown layout: expected {FORM}"),
            ParseLayoutError::NotAPair => {
                write!(f, "a layout's fields are key=value pairs: expected {FORM}")
            }
            ParseLayoutError::UnknownKey => write!(f, "unknown layout field: expected {FORM}"),
            ParseLayoutError::BadValue { key } => {
                let expected = match *key {
                    "unit" => "a whole number of ns, us, ms or s, such as 10ms",
                    "field_order" => "worker-sequence or sequence-worker",
                    _ => "a whole number",
                };
                write!(f, "bad value for layout field {key}: expected {expected}")
            }
            ParseLayoutError::Invalid(e) => e.fmt(f),
        }
    }
}

impl core::error::Error for ParseLayoutError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            ParseLayoutError::Invalid(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_agrees_with_the_calendar() {
        for (ms, text) in [
            (0, "1970-01-01T00:00:00.000Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"),
            (1_539_202_764_211, "2018-10-10T20:19:24.211Z"),
            (4_107_542_399_999, "2100-02-28T23:59:59.999Z"),
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
        ] {
            assert_eq!(Rfc3339(ms).to_string(), text, "{ms}");
        }
    }

    #[test]
    fn every_preset_and_custom_layout_reads_back_as_itself() {
        let custom = Layout::builder()
            .timestamp_bits(40)
            .worker_bits(8)
            .sequence_bits(15)
            .unit(Duration::from_micros(2500))
            .epoch_unix_millis(1_704_067_200_000)
            .field_order(FieldOrder::SequenceWorker)
            .build()
            .unwrap();
        for (_, layout) in PRESETS.into_iter().chain([("custom", custom)]) {
            assert_eq!(layout.to_string().parse::<Layout>(), Ok(layout), "{layout}");
        }
        assert!(custom.to_string().contains("unit=2500us"), "{custom}");
    }

    #[test]
    fn bad_text_says_what_is_wrong() {
        for (text, expected) in [
            ("snowflake", ParseLayoutError::UnknownPreset),
            ("worker_bits", ParseLayoutError::UnknownPreset),
            ("worker_bits=8,bits", ParseLayoutError::NotAPair),
            ("workers=8", ParseLayoutError::UnknownKey),
            (
                "worker_bits=x",
                ParseLayoutError::BadValue { key: "worker_bits" },
            ),
            ("unit=5m", ParseLayoutError::BadValue { key: "unit" }),
            ("unit=ms", ParseLayoutError::BadValue { key: "unit" }),
            (
                "field_order=up",
                ParseLayoutError::BadValue { key: "field_order" },
            ),
            (
                "timestamp_bits=50",
                ParseLayoutError::Invalid(crate::LayoutError::TooManyBits { total: 72 }),
            ),
        ] {
            assert_eq!(text.parse::<Layout>(), Err(expected), "{text}");
        }
    }
}
