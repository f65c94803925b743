//! Just enough of `/proc` to find, identify and kill a sandbox's processes.
//!
//! A pid alone is not an identity (pids are recycled), so processes are
//! recorded as [`ProcessId`]: pid plus start time, checked before every kill.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// A process identity that survives pid reuse: its pid and its start time
/// (clock ticks after boot, field 22 of `/proc/<pid>/stat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessId {
    /// The pid, as seen from the provider's PID namespace.
    pub pid: i32,
    /// Start time in clock ticks after boot.
    pub start_time: u64,
}

impl ProcessId {
    /// The identity of the live process `pid`, if it exists.
    pub fn of(pid: i32) -> Option<Self> {
        stat(pid).map(|stat| Self { pid, start_time: stat.start_time })
    }

    /// Whether this very process still runs (exists, same start time, and is
    /// not a zombie waiting for its parent).
    pub fn is_running(self) -> bool {
        stat(self.pid).is_some_and(|stat| stat.start_time == self.start_time && stat.is_running())
    }
}

/// The fields of `/proc/<pid>/stat` the providers need.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    /// One-letter state (`R`, `S`, `Z`, ...).
    pub state: char,
    /// Start time in clock ticks after boot.
    pub start_time: u64,
}

impl Stat {
    /// Not a zombie (`Z`) or dead (`X`) entry.
    pub fn is_running(self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parses `/proc/<pid>/stat`; `None` when the process does not exist.
pub fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: split after the last `)`.
    let after_name = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // fields[0] is field 3 of stat(5).
    Some(Stat { state: fields.first()?.chars().next()?, start_time: fields.get(19)?.parse().ok()? })
}

/// The direct children of `pid` (needs `CONFIG_PROC_CHILDREN`; falls back to
/// scanning every process's parent).
pub fn children(pid: i32) -> Vec<i32> {
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
        return text.split_whitespace().filter_map(|child| child.parse().ok()).collect();
    }
    all_pids().into_iter().filter(|&candidate| parent_of(candidate) == Some(pid)).collect()
}

fn parent_of(pid: i32) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    text[text.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()
}

/// Every pid in `/proc`.
pub fn all_pids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok()).collect()
}

/// Whether process `pid` has exactly `entry` (`NAME=value`) in its environment.
pub fn has_env_entry(pid: i32, entry: &[u8]) -> bool {
    std::fs::read(Path::new("/proc").join(pid.to_string()).join("environ"))
        .is_ok_and(|environ| environ.split(|&byte| byte == 0).any(|candidate| candidate == entry))
}

/// Sends SIGKILL to `pid` (or, negative, to a process group); errors such as
/// "no such process" are expected in races and ignored.
pub fn kill(pid: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}
