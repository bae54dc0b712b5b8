//! [`Error`], one type over every error of the crate, for programs that want
//! a single type behind `?`.
//!
//! Each operation has its own error type beside it: issuing and building
//! ([`IssueError`], [`BuildError`], in `generator/error.rs`), layouts
//! ([`LayoutError`], [`ParseLayoutError`]), IDs ([`IdError`],
//! [`ParseIdError`]), strategies ([`ParseStrategyError`]), worker-id lookup
//! ([`WorkerError`]) and leases ([`LeaseError`](crate::lease::LeaseError)).

use core::fmt;

use crate::generator::{BuildError, IssueError, ParseStrategyError};
use crate::id::{IdError, ParseIdError};
use crate::layout::LayoutError;
use crate::layout_text::ParseLayoutError;
#[cfg(feature = "std")]
use crate::worker::WorkerError;

/// Declares [`Error`] from one list of its variants: the enum, its
/// `Display` and `source` (both the held error's: `Error` is transparent),
/// its `Debug`, and a `From` for each.
macro_rules! umbrella {
    ($(#[$outer:meta])* pub enum Error { $(
        $(#[doc = $doc:literal])* $(#[cfg($cfg:meta)])? $variant:ident($ty:ty),
    )* }) => {
        $(#[$outer])*
        #[non_exhaustive]
        pub enum Error {
            $( $(#[doc = $doc])* $(#[cfg($cfg)])? $variant($ty), )*
        }

        /// The message first, then the structure: `fn main() -> Result<(),
        /// flakegen::Error>` prints an error with `Debug`, and the message is
        /// what says what to do. `{:#?}` is the structure alone.
        impl fmt::Debug for Error {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( $(#[cfg($cfg)])? Error::$variant(e) if f.alternate() => {
                        f.debug_tuple(stringify!($variant)).field(e).finish()
                    } )*
                    $( $(#[cfg($cfg)])? Error::$variant(e) => {
                        write!(f, "{e} [{}({e:?})]", stringify!($variant))
                    } )*
                }
            }
        }

        impl fmt::Display for Error {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( $(#[cfg($cfg)])? Error::$variant(e) => e.fmt(f), )*
                }
            }
        }

        impl core::error::Error for Error {
            fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
                match self {
                    $( $(#[cfg($cfg)])? Error::$variant(e) => e.source(), )*
                }
            }
        }

        $(
            $(#[cfg($cfg)])?
            impl From<$ty> for Error {
                fn from(e: $ty) -> Self {
                    Error::$variant(e)
                }
            }
        )*
    };
}

umbrella! {
    /// Every error of the crate, for programs that want one type behind `?`.
    ///
    /// Each operation returns its own, narrower error type; this one converts
    /// from all of them and displays as the error it holds.
    ///
    /// # Examples
    ///
    /// ```
    /// use flakegen::{Builder, Error, IdGenerator, Snowflake};
    ///
    /// fn newest(stored: &str) -> Result<Snowflake, Error> {
    ///     let last: Snowflake = stored.parse()?; // ParseIdError
    ///     let generator = Builder::new().worker(1).resume_after(last).build_atomic()?; // BuildError
    ///     Ok(generator.next_id()?) // IssueError
    /// }
    /// assert!(matches!(newest("x"), Err(Error::ParseId(_))));
    /// // Debug, which `fn main() -> Result<(), Error>` prints, starts with the message.
    /// let e = newest("x").unwrap_err();
    /// assert!(format!("{e:?}").starts_with(&e.to_string()));
    /// ```
    pub enum Error {
        /// Issuing an ID failed.
        Issue(IssueError),
        /// Building a generator failed.
        Build(BuildError),
        /// A custom layout was rejected.
        Layout(LayoutError),
        /// An ID or one of its fields did not fit.
        Id(IdError),
        /// A string was not an ID.
        ParseId(ParseIdError),
        /// A string was not a strategy's name.
        ParseStrategy(ParseStrategyError),
        /// A string was not a layout.
        ParseLayout(ParseLayoutError),
        /// No worker id could be read from the deployment.
        #[cfg(feature = "std")]
        Worker(WorkerError),
        /// A lease registry failed.
        #[cfg(feature = "std")]
        Lease(crate::lease::LeaseError),
        /// The process's generator (`flakegen::next_id`) could not be set up.
        #[cfg(feature = "std")]
        SetUp(crate::global::error::SetUpError),
    }
}
