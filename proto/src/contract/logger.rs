//! Where reclaim lines go: TanStack's `InternalLogger` methods.

use std::error::Error as StdError;

/// A meta value handed to a [`ReclaimLogger`].
#[derive(Debug, Clone, Copy)]
pub enum LogValue<'a> {
    Text(&'a str),
    /// The very error the provider's destroy failed with (or its timeout).
    Error(&'a (dyn StdError + Send + Sync + 'static)),
}

/// Ordered `(key, value)` meta of a log line.
pub type LogMeta<'a> = [(&'static str, LogValue<'a>)];

/// Where reclaim lines go; the method names are TanStack's `InternalLogger`'s.
///
/// Synchronous on purpose: the reference never awaits its logger, so a slow
/// logger cannot reorder or delay the reclaim.
pub trait ReclaimLogger: Send + Sync {
    fn warn(&self, message: &str, meta: &LogMeta<'_>);
    fn errors(&self, message: &str, meta: &LogMeta<'_>);
    fn sandbox(&self, message: &str, meta: &LogMeta<'_>);
}
