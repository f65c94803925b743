//! Durations (`30s`, `10m`, `24h`, `1h30m`) and points in time (RFC 3339,
//! epoch milliseconds, or a duration ago) as flags and config values take them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sandbox_reclaim::report::messages;

/// The largest time the store contract holds: 2^53 − 1 milliseconds.
pub const MAX_MILLIS: u64 = 9_007_199_254_740_991;

/// `30s`, `10m`, `24h`, `1h30m`, `250ms`, `0s`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(messages::command::EMPTY_DURATION.to_owned());
    }
    humantime::parse_duration(text).map_err(|error| messages::command::not_a_duration(text, &error.to_string()))
}

/// A duration of at least one millisecond.
pub fn parse_positive_duration(text: &str) -> Result<Duration, String> {
    parse_duration_at_least(text, 1)
}

/// A duration of at least `min_ms` milliseconds (a pass option's minimum, as the core states it).
pub fn parse_duration_at_least(text: &str, min_ms: u64) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    let minimum = Duration::from_millis(min_ms);
    if duration < minimum {
        return Err(messages::command::duration_too_short(text, &humantime::format_duration(minimum).to_string()));
    }
    Ok(duration)
}

/// Milliseconds since the epoch, now.
pub fn now_millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(0))
}

/// A point in time as epoch milliseconds: `2024-05-01T12:00:00Z` (or with an
/// offset, `+02:00`), `1714564800000`, or a duration ago (`24h`).
pub fn parse_time(text: &str, now: u64) -> Result<u64, String> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()) {
        return text
            .parse::<u64>()
            .ok()
            .filter(|millis| *millis <= MAX_MILLIS)
            .ok_or_else(|| format!("`{text}` is too large for epoch milliseconds"));
    }
    if let Ok(ago) = humantime::parse_duration(text) {
        return Ok(now.saturating_sub(u64::try_from(ago.as_millis()).unwrap_or(u64::MAX)));
    }
    parse_rfc3339(text).ok_or_else(|| {
        format!("`{text}` is not a time: write RFC 3339 (2024-05-01T12:00:00Z), epoch milliseconds, or a duration ago (24h)")
    })
}

/// RFC 3339 through `jiff`: `Z` or a `±HH:MM` offset; without one, UTC
/// (as `2024-05-01 12:00:00` always read). Before the epoch or past
/// [`MAX_MILLIS`]: not a time the store holds.
fn parse_rfc3339(text: &str) -> Option<u64> {
    let timestamp = match text.parse::<jiff::Timestamp>() {
        Ok(timestamp) => timestamp,
        Err(_) => jiff::tz::Offset::UTC.to_timestamp(text.parse::<jiff::civil::DateTime>().ok()?).ok()?,
    };
    u64::try_from(timestamp.as_millisecond()).ok().filter(|millis| *millis <= MAX_MILLIS)
}

/// Epoch milliseconds as RFC 3339 (UTC, seconds).
pub fn format_time(millis: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(millis)).to_string()
}

/// A duration in milliseconds, readable and short: `3m 12s`, `450ms`.
pub fn format_age(millis: u64) -> String {
    if millis < 1000 {
        return format!("{millis}ms");
    }
    humantime::format_duration(Duration::from_secs(millis / 1000)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("24h").unwrap(), Duration::from_secs(86_400));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("0s").unwrap(), Duration::ZERO);
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_positive_duration("0s").is_err());
        assert!(parse_positive_duration("1ms").is_ok());
    }

    #[test]
    fn times() {
        let now = 1_714_564_800_000;
        assert_eq!(parse_time("1714564800000", now).unwrap(), now);
        assert_eq!(parse_time("2024-05-01T12:00:00Z", 0).unwrap(), now);
        assert_eq!(parse_time("2024-05-01T14:00:00+02:00", 0).unwrap(), now);
        assert_eq!(parse_time("2024-05-01T10:30:00-01:30", 0).unwrap(), now);
        assert_eq!(parse_time("24h", now).unwrap(), now - 86_400_000);
        assert_eq!(parse_time("2024-05-01T12:00:00.250Z", 0).unwrap(), now + 250);
        assert_eq!(parse_time("2024-05-01 12:00:00", 0).unwrap(), now, "no offset: UTC");
        assert_eq!(parse_time("2024-05-01T12:00:00", 0).unwrap(), now, "no offset: UTC");
        assert!(parse_time("yesterday", now).is_err());
        assert!(parse_time("1969-12-31T23:59:59Z", now).is_err(), "before the epoch");
        assert!(parse_time("2024-05-01T12:00:00+02:60", now).is_err());
        assert!(parse_time("9007199254740992", now).unwrap_err().contains("too large"));
        assert_eq!(parse_time("9007199254740991", now).unwrap(), MAX_MILLIS);
        // Non-ASCII where the old hand-written offset arithmetic sliced bytes.
        for text in ["é12345", "2024-05-01T12:00:00+0é:00", "ééééééé", "x+é:0", "2024-05-01T12:00:00é"] {
            let error = parse_time(text, now).unwrap_err();
            assert!(error.contains("is not a time"), "{text}: {error}");
        }
        assert_eq!(format_time(now), "2024-05-01T12:00:00Z");
        assert_eq!(format_age(192_000), "3m 12s");
        assert_eq!(format_age(450), "450ms");
    }
}
