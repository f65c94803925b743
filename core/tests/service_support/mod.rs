//! The one rule for a test that needs a service, tool or privilege (shared by
//! the core's and the CLI's tests; the Node and Python suites have its twins,
//! `tests/node/services.mjs` and `tests/python/services.py`):
//!
//! - CI is on when `CI` is any non-empty string (`true`, `1`, even `false`);
//! - a need that is missing FAILS the test under CI, the panic naming it;
//! - locally it is a skip: `needs` answers `false` (the test returns), says
//!   so on stderr and, when `SANDBOX_RECLAIM_SKIP_LOG` names a file, appends
//!   one line to it, which `scripts/test-rust.sh` counts (and fails CI on).
#![allow(dead_code)]

use std::io::Write;

/// The file each local skip appends a line to (set by scripts/test-rust.sh).
pub const SKIP_LOG_VAR: &str = "SANDBOX_RECLAIM_SKIP_LOG";

/// The rule itself, given `CI`'s value: `Ok(())` when `available`;
/// otherwise, under CI, a panic naming `what` is missing; locally
/// `Err(reason)`, the skip's reason.
pub fn needs_under(ci: Option<&str>, what: &str, available: bool, purpose: &str) -> Result<(), String> {
    if available {
        return Ok(());
    }
    let reason = format!("missing {what}: {purpose}");
    match ci.filter(|value| !value.is_empty()) {
        Some(ci) => panic!("{reason} (CI={ci:?}: a missing service fails in CI)"),
        None => Err(reason),
    }
}

/// `true` when the need is met: run the test. Under CI a missing need
/// panics; locally it is a skip, reported, and `false`: return from the test.
pub fn needs(what: &str, available: bool, purpose: &str) -> bool {
    let ci = std::env::var("CI").ok();
    match needs_under(ci.as_deref(), what, available, purpose) {
        Ok(()) => true,
        Err(reason) => {
            eprintln!("SKIPPED: {reason}");
            if let Some(log) = std::env::var_os(SKIP_LOG_VAR).filter(|log| !log.is_empty()) {
                let appended = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                    .and_then(|mut file| writeln!(file, "{reason}"));
                appended.unwrap_or_else(|error| panic!("{SKIP_LOG_VAR}={log:?}: cannot record the skip: {error}"));
            }
            false
        }
    }
}

/// Env `name`'s value when set and not empty; `None` (skipped, or a panic
/// under CI) otherwise.
pub fn needs_env(name: &str, purpose: &str) -> Option<String> {
    let value = std::env::var(name).ok().filter(|value| !value.is_empty());
    if needs(&format!("{name} (not set)"), value.is_some(), purpose) {
        value
    } else {
        None
    }
}

/// Whether this process runs as root (from /proc, so no unsafe code).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| status.lines().find(|line| line.starts_with("Uid:")).map(str::to_string))
        .is_some_and(|line| line.split_whitespace().nth(2) == Some("0"))
}
