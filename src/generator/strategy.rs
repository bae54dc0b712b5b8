//! Naming a strategy at run time.

use core::fmt;
use core::str::FromStr;

/// One of the three strategies, for programs that choose at run time (from a
/// flag or a configuration file) with [`Builder::build`](crate::Builder::build).
///
/// Parses from and displays as `atomic`, `mutex` and `ticker`.
///
/// # Examples
///
/// ```
/// use flakegen::Strategy;
///
/// assert_eq!("ticker".parse::<Strategy>()?, Strategy::Ticker);
/// assert_eq!(Strategy::ALL.map(|s| s.to_string()), ["atomic", "mutex", "ticker"]);
/// assert!("spin".parse::<Strategy>().is_err());
/// # Ok::<(), flakegen::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// [`AtomicGenerator`](crate::AtomicGenerator).
    Atomic,
    /// [`MutexGenerator`](crate::MutexGenerator).
    Mutex,
    /// [`TickerGenerator`](crate::TickerGenerator).
    Ticker,
}

impl Strategy {
    /// Every strategy, in the order the docs list them.
    pub const ALL: [Strategy; 3] = [Strategy::Atomic, Strategy::Mutex, Strategy::Ticker];

    /// The strategy's name: `atomic`, `mutex` or `ticker`.
    pub const fn name(self) -> &'static str {
        match self {
            Strategy::Atomic => "atomic",
            Strategy::Mutex => "mutex",
            Strategy::Ticker => "ticker",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = ParseStrategyError;

    /// Parses a strategy's [`name`](Strategy::name).
    ///
    /// # Errors
    ///
    /// [`ParseStrategyError`], whose message lists the names, for anything else.
    fn from_str(s: &str) -> Result<Self, ParseStrategyError> {
        Strategy::ALL
            .into_iter()
            .find(|strategy| strategy.name() == s)
            .ok_or(ParseStrategyError(()))
    }
}

/// A string that names no [`Strategy`](crate::Strategy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ParseStrategyError(pub(crate) ());

impl fmt::Display for ParseStrategyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown strategy: expected one of atomic, mutex, ticker")
    }
}

impl core::error::Error for ParseStrategyError {}
