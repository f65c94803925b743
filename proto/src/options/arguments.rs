//! The numbers a store method or a store constructor takes from a host
//! (counts, epoch milliseconds, durations, pool sizes): each one's range,
//! and the error text (from [`crate::report::messages`]), in one place.
//!
//! A binding hands over the number as it crossed ([`HostNumber`]: a JS
//! number as napi read it, a Python `int` by sign and magnitude, or the
//! host's type name for anything else) with the argument's name as the host
//! spells it (`leaseMs`, `options.limit`; Python `lease`, `failed_at`). The
//! core answers the value, or an [`ArgumentError`] the binding raises as its
//! own `TypeError` (Node: always; Python: [`Problem::Type`]) or `ValueError`
//! (Python: [`Problem::Range`]), before any side effect.

use std::time::Duration;

use crate::model::MAX_SAFE_INTEGER;
use crate::options::{Dialect, Problem};
use crate::report::messages;

/// A number as it crossed from a host, before any conversion.
#[derive(Debug, Clone, PartialEq)]
pub enum HostNumber {
    /// A JavaScript number, or a Python `float`.
    Float(f64),
    /// A Python `int` (never a `bool`) of at most 128 bits.
    Int { negative: bool, magnitude: u128 },
    /// A Python `int` of more than 128 bits, by its bit length.
    HugeInt { negative: bool, bits: u64 },
    /// Anything else, by the host's type name (Python's `type(value).__name__`).
    Other(String),
}

/// The whole numbers an argument takes, `min..=max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Whole {
    pub min: u64,
    pub max: u64,
}

/// A count the native side holds as a `u32`: a limit, a leak's attempts.
pub const COUNT: Whole = Whole { min: 0, max: u32::MAX as u64 };
/// Connections in a store's pool: at least one, a `u32`.
pub const POOL_SIZE: Whole = Whole { min: 1, max: u32::MAX as u64 };
/// Epoch milliseconds, or a duration in milliseconds: what every binding holds exactly.
pub const MILLIS: Whole = Whole { min: 0, max: MAX_SAFE_INTEGER };
/// A size in bytes, as every binding holds it exactly (a Docker memory limit).
pub const BYTES: Whole = Whole { min: 0, max: MAX_SAFE_INTEGER };
/// SQLite's busy timeout in milliseconds: it waits at most an `int` of them.
pub const BUSY_TIMEOUT_MS: Whole = Whole { min: 0, max: i32::MAX as u64 };

/// A duration in seconds (Python), from 0 to `max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seconds {
    pub max: f64,
}

/// A claim lease in seconds: up to 2^53-1 milliseconds, as in Node.
pub const LEASE_SECONDS: Seconds = Seconds { max: MAX_SAFE_INTEGER as f64 / 1000.0 };
/// SQLite's busy timeout in seconds (about 24.8 days).
pub const BUSY_TIMEOUT_SECONDS: Seconds = Seconds { max: BUSY_TIMEOUT_MS.max as f64 / 1000.0 };

/// An argument refused: Python raises a [`Problem::Type`] as `TypeError`, a
/// [`Problem::Range`] as `ValueError`; Node raises both as `TypeError`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ArgumentError {
    pub problem: Problem,
    pub message: String,
}

/// How an error names `field`: as given in Node, `` `field` `` in Python.
fn named(field: &str, dialect: Dialect) -> String {
    match dialect {
        Dialect::Node => field.to_owned(),
        Dialect::Python => format!("`{field}`"),
    }
}

/// `value` if it is a whole number in `range`. Node takes a number that is
/// an integer (`Number.isInteger`); Python an `int` that is not a `bool`.
pub fn whole(value: &HostNumber, field: &str, range: Whole, dialect: Dialect) -> Result<u64, ArgumentError> {
    let within = |magnitude: u128| magnitude >= u128::from(range.min) && magnitude <= u128::from(range.max);
    let accepted = match value {
        // NaN and the infinities have no whole part (their fract is NaN); `-0` is 0.
        HostNumber::Float(float) if dialect == Dialect::Node && float.fract() == 0.0 => {
            *float >= range.min as f64 && *float <= range.max as f64
        }
        HostNumber::Int { negative, magnitude } => (!negative || *magnitude == 0) && within(*magnitude),
        _ => false,
    };
    if accepted {
        return Ok(match value {
            HostNumber::Float(float) => *float as u64,
            HostNumber::Int { magnitude, .. } => *magnitude as u64,
            _ => unreachable!("only numbers are accepted"),
        });
    }
    let field = named(field, dialect);
    Err(match (dialect, value) {
        (Dialect::Node, _) => ArgumentError {
            problem: Problem::Type,
            message: messages::node_whole_number_between(&field, range.min, range.max),
        },
        (Dialect::Python, HostNumber::Int { .. } | HostNumber::HugeInt { .. }) => ArgumentError {
            problem: Problem::Range,
            message: messages::python_whole_number_range(&field, range.min, range.max, &python_shown(value)),
        },
        (Dialect::Python, _) => ArgumentError {
            problem: Problem::Type,
            message: messages::python_must_be(&field, "an int", &python_type(value)),
        },
    })
}

/// A Python duration in seconds (an `int` or a `float`, not a `bool`) from 0
/// to `range.max`, compared before any conversion (NaN is refused too).
pub fn seconds(value: &HostNumber, field: &str, range: Seconds) -> Result<Duration, ArgumentError> {
    let seconds = match value {
        HostNumber::Float(float) => Some(*float),
        HostNumber::Int { negative: false, magnitude } => Some(*magnitude as f64),
        HostNumber::Int { negative: true, magnitude } => Some(-(*magnitude as f64)),
        HostNumber::HugeInt { .. } => None,
        HostNumber::Other(got) => {
            let message = messages::python_must_be(&named(field, Dialect::Python), "a number of seconds", got);
            return Err(ArgumentError { problem: Problem::Type, message });
        }
    };
    match seconds.filter(|seconds| (0.0..=range.max).contains(seconds)) {
        Some(seconds) => Ok(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::ZERO)),
        None => Err(ArgumentError {
            problem: Problem::Range,
            message: messages::python_seconds_range(&named(field, Dialect::Python), range.max, &python_shown(value)),
        }),
    }
}

/// A Python record's whole-number field (`owner.field`, `wire` its
/// camelCase name): an `int` (never a `bool` or a `float`) in `range`.
pub fn record_whole(
    value: &HostNumber,
    owner: &str,
    field: &str,
    wire: &str,
    range: Whole,
) -> Result<u64, ArgumentError> {
    let named = || messages::record_field(owner, field, wire);
    match value {
        HostNumber::Int { negative, magnitude }
            if (!negative || *magnitude == 0)
                && *magnitude >= u128::from(range.min)
                && *magnitude <= u128::from(range.max) =>
        {
            Ok(*magnitude as u64)
        }
        HostNumber::Int { .. } | HostNumber::HugeInt { .. } => Err(ArgumentError {
            problem: Problem::Range,
            message: messages::node_whole_number_between(&named(), range.min, range.max),
        }),
        other => Err(ArgumentError {
            problem: Problem::Type,
            message: messages::python_must_be(&named(), "an int", &python_type(other)),
        }),
    }
}

/// Python's `type(value).__name__` of a number that crossed.
fn python_type(value: &HostNumber) -> String {
    match value {
        HostNumber::Float(_) => "float".to_owned(),
        HostNumber::Int { .. } | HostNumber::HugeInt { .. } => "int".to_owned(),
        HostNumber::Other(name) => name.clone(),
    }
}

/// The value as Python's `repr` shows it (an int of more than 128 bits by
/// its size: its digits would be slow to print, and refused beyond 4300).
fn python_shown(value: &HostNumber) -> String {
    match value {
        HostNumber::Float(float) => python_float_repr(*float),
        HostNumber::Int { negative, magnitude } => {
            format!("{}{magnitude}", if *negative && *magnitude != 0 { "-" } else { "" })
        }
        HostNumber::HugeInt { bits, .. } => messages::python_huge_int(*bits),
        HostNumber::Other(name) => name.clone(),
    }
}

/// `repr(float)`: the shortest round-tripping digits, in positional notation
/// for a decimal exponent from -4 to 15, else as `1.5e+16` / `1e-05`.
fn python_float_repr(float: f64) -> String {
    if float.is_nan() {
        return "nan".to_owned();
    }
    if float.is_infinite() {
        return if float > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let scientific = format!("{float:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if float == 0.0 || (-4..16).contains(&exponent) {
        let positional = format!("{float}");
        return if positional.contains('.') { positional } else { format!("{positional}.0") };
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(value: i128) -> HostNumber {
        HostNumber::Int { negative: value < 0, magnitude: value.unsigned_abs() }
    }

    #[test]
    fn node_takes_integers_in_range_and_names_the_range_otherwise() {
        let node = |value: f64| whole(&HostNumber::Float(value), "limit", COUNT, Dialect::Node);
        assert_eq!(node(0.0), Ok(0));
        assert_eq!(node(-0.0), Ok(0));
        assert_eq!(node(4_294_967_295.0), Ok(u64::from(u32::MAX)));
        for refused in [-1.0, 1.5, 4_294_967_296.0, 2f64.powi(70), f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let error = node(refused).unwrap_err();
            assert_eq!(error.problem, Problem::Type, "{refused}");
            assert_eq!(error.message, "limit must be a whole number between 0 and 4294967295");
        }
        let undefined = whole(&HostNumber::Other("undefined".into()), "since", MILLIS, Dialect::Node).unwrap_err();
        assert_eq!(undefined.message, "since must be a whole number between 0 and 9007199254740991");
        let millis = |value: f64| whole(&HostNumber::Float(value), "now", MILLIS, Dialect::Node);
        assert_eq!(millis(9_007_199_254_740_991.0), Ok(MAX_SAFE_INTEGER));
        assert!(millis(9_007_199_254_740_992.0).is_err());
        let pool = whole(&HostNumber::Float(0.0), "options.maxConnections", POOL_SIZE, Dialect::Node).unwrap_err();
        assert_eq!(pool.message, "options.maxConnections must be a whole number between 1 and 4294967295");
        let busy = whole(&HostNumber::Float(2_147_483_648.0), "options.busyTimeoutMs", BUSY_TIMEOUT_MS, Dialect::Node);
        assert_eq!(busy.unwrap_err().message, "options.busyTimeoutMs must be a whole number between 0 and 2147483647");
    }

    #[test]
    fn python_takes_ints_refusing_other_types_by_type_and_ranges_by_value() {
        let python = |value: &HostNumber| whole(value, "limit", COUNT, Dialect::Python);
        assert_eq!(python(&int(0)), Ok(0));
        assert_eq!(python(&int(4_294_967_295)), Ok(4_294_967_295));
        let cases = [
            (int(-1), "`limit` must be a whole number between 0 and 4294967295, got -1"),
            (int(1 << 32), "`limit` must be a whole number between 0 and 4294967295, got 4294967296"),
            (int(1 << 70), "`limit` must be a whole number between 0 and 4294967295, got 1180591620717411303424"),
            (
                HostNumber::Int { negative: false, magnitude: u128::MAX },
                "`limit` must be a whole number between 0 and 4294967295, got 340282366920938463463374607431768211455",
            ),
            (
                HostNumber::HugeInt { negative: false, bits: 1329 },
                "`limit` must be a whole number between 0 and 4294967295, got an int of 1329 bits",
            ),
        ];
        for (value, message) in cases {
            let error = python(&value).unwrap_err();
            assert_eq!((error.problem, error.message.as_str()), (Problem::Range, message));
        }
        for (value, message) in [
            (HostNumber::Float(1.0), "`limit` must be an int, got float"),
            (HostNumber::Other("bool".into()), "`limit` must be an int, got bool"),
            (HostNumber::Other("NoneType".into()), "`limit` must be an int, got NoneType"),
        ] {
            let error = python(&value).unwrap_err();
            assert_eq!((error.problem, error.message.as_str()), (Problem::Type, message));
        }
        let pool = whole(&int(0), "max_connections", POOL_SIZE, Dialect::Python).unwrap_err();
        assert_eq!(pool.message, "`max_connections` must be a whole number between 1 and 4294967295, got 0");
        let millis = whole(&int(1 << 53), "failed_at", MILLIS, Dialect::Python).unwrap_err();
        assert_eq!(
            millis.message,
            "`failed_at` must be a whole number between 0 and 9007199254740991, got 9007199254740992"
        );
    }

    #[test]
    fn python_seconds_are_compared_before_conversion() {
        assert_eq!(seconds(&HostNumber::Float(1.5), "lease", LEASE_SECONDS), Ok(Duration::from_millis(1500)));
        assert_eq!(seconds(&int(30), "busy_timeout", BUSY_TIMEOUT_SECONDS), Ok(Duration::from_secs(30)));
        assert_eq!(seconds(&HostNumber::Float(-0.0), "lease", LEASE_SECONDS), Ok(Duration::ZERO));
        let range = |value: HostNumber, shown: &str| {
            let error = seconds(&value, "busy_timeout", BUSY_TIMEOUT_SECONDS).unwrap_err();
            assert_eq!(error.problem, Problem::Range);
            assert_eq!(
                error.message,
                format!("`busy_timeout` must be a number of seconds between 0 and 2147483.647, got {shown}")
            );
        };
        range(int(-1), "-1");
        range(HostNumber::Float(-0.5), "-0.5");
        range(HostNumber::Float(2_147_484.0), "2147484.0");
        range(int(1 << 70), "1180591620717411303424");
        range(HostNumber::HugeInt { negative: false, bits: 1329 }, "an int of 1329 bits");
        range(HostNumber::Float(f64::INFINITY), "inf");
        range(HostNumber::Float(f64::NAN), "nan");
        range(HostNumber::Float(1e300), "1e+300");
        let lease = seconds(&HostNumber::Float(-1e-5), "lease", LEASE_SECONDS).unwrap_err();
        assert_eq!(lease.message, "`lease` must be a number of seconds between 0 and 9007199254740.99, got -1e-05");
        let wrong = seconds(&HostNumber::Other("str".into()), "lease", LEASE_SECONDS).unwrap_err();
        assert_eq!(
            (wrong.problem, wrong.message.as_str()),
            (Problem::Type, "`lease` must be a number of seconds, got str")
        );
    }

    #[test]
    fn python_float_repr_matches_python() {
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456789012345.6, "123456789012345.6"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e300, "1.5e+300"),
            (2f64.powi(70), "1.1805916207174113e+21"),
        ];
        for (float, repr) in cases {
            assert_eq!(python_float_repr(float), repr, "{float}");
        }
    }

    #[test]
    fn a_records_whole_number_field_is_an_int_in_range_with_the_records_own_texts() {
        let check = |value: HostNumber| record_whole(&value, "LeakEntry", "attempts", "attempts", COUNT);
        assert_eq!(check(int(7)), Ok(7));
        assert_eq!(check(HostNumber::Int { negative: true, magnitude: 0 }), Ok(0));
        let range = check(HostNumber::Int { negative: false, magnitude: 1 << 32 }).unwrap_err();
        assert_eq!(range.problem, Problem::Range);
        assert_eq!(
            range.message,
            "LeakEntry.attempts (wire `attempts`) must be a whole number between 0 and 4294967295"
        );
        let negative = check(HostNumber::Int { negative: true, magnitude: 1 }).unwrap_err();
        assert_eq!(negative.problem, Problem::Range);
        for (value, got) in [(HostNumber::Float(1.0), "float"), (HostNumber::Other("bool".into()), "bool")] {
            let error = check(value).unwrap_err();
            assert_eq!(error.problem, Problem::Type);
            assert_eq!(error.message, format!("LeakEntry.attempts (wire `attempts`) must be an int, got {got}"));
        }
        let huge = record_whole(&HostNumber::HugeInt { negative: false, bits: 200 }, "R", "at", "at", MILLIS);
        assert_eq!(huge.unwrap_err().message, "R.at (wire `at`) must be a whole number between 0 and 9007199254740991");
    }
}
