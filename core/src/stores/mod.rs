//! Every instance store this crate ships: [`memory`] (tests, demos, one
//! process) always, and durable ones with a [leak ledger](crate::model::ledger),
//! behind cargo features so the core stays lean:
//!
//! - `sqlite`: `SqliteSandboxInstanceStore`, the embedded default — one
//!   file in WAL mode, shared safely by several processes on one machine;
//! - `postgres`: `PostgresSandboxInstanceStore`, for fleets of hosts — a
//!   connection pool, configurable schema and table names.
//!
//! Both run on sqlx (tokio runtime) with plain bound queries, apply their
//! versioned migrations (`stores/migrations/`) when opened, and honour the
//! exact contract of [`SandboxInstanceStore`](crate::SandboxInstanceStore)
//! and of [`FleetStore`](crate::FleetStore) (schema version 2: leak reasons
//! and backoff, sweep leases, the audit log; a version-1 database upgrades in
//! place when opened).
//! Keys that no store can hold (empty, or containing NUL) are never stored, so
//! `get` of one is `None` and `delete` of one a no-op, as in memory.
//!
//! Layer: may import the proto crate's model and contracts and
//! [`crate::runtime::clock`]; never the driver or a provider.

pub mod checks;
pub mod memory;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use sql::StoreOpenError;

#[cfg(feature = "sqlite")]
mod candidate_rows;
#[cfg(feature = "postgres")]
mod coalesce;
#[cfg(feature = "sqlite")]
mod group_commit;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod ordered;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
pub mod sqlite;

#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresSandboxInstanceStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteOptions, SqliteSandboxInstanceStore};
