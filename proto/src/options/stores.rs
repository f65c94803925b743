//! The durable stores' open options as data: each option's name in both
//! hosts, its range, its default and its doc.
//!
//! This is the one place a store option's default is written: the runtime's
//! `SqliteOptions` / `PostgresOptions` default from these constants, the
//! bindings check a value against `range` (`arguments.rs`), and
//! `scripts/gen_declarations.py` writes Node's `SqliteStoreOptions` /
//! `PostgresStoreOptions` (`index.d.ts`) and the options lists of Python's
//! `SqliteSandboxInstanceStore.open` / `PostgresSandboxInstanceStore.connect`
//! (`_stores.py`) from them. A doc says what the option does, in no unit:
//! each host adds the unit, the range and the default in its spelling.
//!
//! One option per constructor call, its default a literal and its doc a
//! plain string literal: the generator reads them with a pattern.

use super::arguments::{Whole, BUSY_TIMEOUT_MS, POOL_SIZE};

/// How a store option's value is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// A duration in whole milliseconds (Python: seconds) within `range`.
    Millis { range: Whole, default: u64 },
    /// A whole number within `range`.
    Count { range: Whole, default: u32 },
    /// An identifier (a schema or table name), crossing exactly.
    Text { default: &'static str },
}

/// One option of a store's `open` / `connect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOption {
    /// Node's name (camelCase, `...Ms` for a duration).
    pub node: &'static str,
    /// Python's keyword (snake_case, seconds for a duration).
    pub python: &'static str,
    pub value: Value,
    /// What it does, in no unit: each host's declaration adds its unit, range and default.
    pub doc: &'static str,
}

const fn millis(
    node: &'static str,
    python: &'static str,
    range: Whole,
    default: u64,
    doc: &'static str,
) -> StoreOption {
    StoreOption { node, python, value: Value::Millis { range, default }, doc }
}

const fn count(node: &'static str, python: &'static str, range: Whole, default: u32, doc: &'static str) -> StoreOption {
    StoreOption { node, python, value: Value::Count { range, default }, doc }
}

const fn text(node: &'static str, python: &'static str, default: &'static str, doc: &'static str) -> StoreOption {
    StoreOption { node, python, value: Value::Text { default }, doc }
}

impl StoreOption {
    /// A duration option's default, in milliseconds (0 for another kind).
    pub const fn default_millis(self) -> u64 {
        match self.value {
            Value::Millis { default, .. } => default,
            _ => 0,
        }
    }

    /// A count option's default (0 for another kind).
    pub const fn default_count(self) -> u32 {
        match self.value {
            Value::Count { default, .. } => default,
            _ => 0,
        }
    }

    /// A text option's default (`""` for another kind).
    pub const fn default_text(self) -> &'static str {
        match self.value {
            Value::Text { default } => default,
            _ => "",
        }
    }
}

/// `SqliteSandboxInstanceStore.open`'s options.
pub mod sqlite {
    use super::*;

    pub const BUSY_TIMEOUT: StoreOption = millis(
        "busyTimeoutMs",
        "busy_timeout",
        BUSY_TIMEOUT_MS,
        30_000,
        "How long a write waits for another process's lock before failing.",
    );
    pub const MAX_CONNECTIONS: StoreOption = count(
        "maxConnections",
        "max_connections",
        POOL_SIZE,
        4,
        "Connections in this handle's pool (readers run in parallel in WAL mode).",
    );
    /// In the order the declarations list them.
    pub const ALL: [StoreOption; 2] = [BUSY_TIMEOUT, MAX_CONNECTIONS];
}

/// `PostgresSandboxInstanceStore.connect`'s options.
pub mod postgres {
    use super::*;

    pub const SCHEMA: StoreOption =
        text("schema", "schema", "public", "Schema holding the tables, created if missing.");
    pub const INSTANCES_TABLE: StoreOption =
        text("instancesTable", "instances_table", "sandbox_instances", "Table of instance records.");
    pub const LEAKS_TABLE: StoreOption = text(
        "leaksTable",
        "leaks_table",
        "sandbox_leaks",
        "Table of the leak ledger; the sweep-lease, audit and registry tables are named after it.",
    );
    pub const SCHEMA_VERSION_TABLE: StoreOption = text(
        "schemaVersionTable",
        "schema_version_table",
        "sandbox_reclaim_schema_version",
        "Table of applied migration versions.",
    );
    pub const MAX_CONNECTIONS: StoreOption =
        count("maxConnections", "max_connections", POOL_SIZE, 10, "Most connections this handle's pool opens.");
    /// In the order the declarations list them.
    pub const ALL: [StoreOption; 5] = [SCHEMA, INSTANCES_TABLE, LEAKS_TABLE, SCHEMA_VERSION_TABLE, MAX_CONNECTIONS];
}
