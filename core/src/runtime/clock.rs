//! The one place the runtime reads the wall clock (machines never do: the
//! driver hands them `now`), and the conversion of a `Duration` to the
//! machines' milliseconds.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Saturating: a duration beyond `u64` milliseconds (half a billion years)
/// is as good as forever.
pub(crate) fn duration_millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Wall-clock epoch milliseconds: the drivers' `now`, and leak timestamps.
pub fn now_millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|elapsed| elapsed.as_millis() as u64).unwrap_or(0)
}
