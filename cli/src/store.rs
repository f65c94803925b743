//! Opening the store named by `--store`; what `status` and `migrate` show of
//! it comes from the store contract (`FleetStore::facts`).

use std::time::Duration;

use sandbox_reclaim::{
    FleetStore, LeakLedger, PostgresOptions, PostgresSandboxInstanceStore, SqliteSandboxInstanceStore, StoreFacts,
    StoreOpenError,
};

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::Connection;

use sandbox_reclaim::report::messages;

use crate::config::StoreSpec;
use crate::error::Failure;
use crate::redact::{redact, redact_text};

/// An open store.
pub enum Store {
    Sqlite(SqliteSandboxInstanceStore),
    Postgres { store: PostgresSandboxInstanceStore, url: String, options: PostgresOptions },
}

impl Store {
    /// Opens (creating and migrating as needed) the store. Refused options
    /// are usage errors naming `--store`/`--pg-schema`; a store that cannot be
    /// reached within `timeout`, or refuses us, is unavailable.
    pub async fn open(spec: &StoreSpec, create_dir: bool, timeout: Duration) -> Result<Self, Failure> {
        let described = describe(spec);
        let timeout_text = humantime::format_duration(timeout).to_string();
        let within = |verb: &str, what: &str| messages::command::not_within(verb, what, &described, &timeout_text);
        match spec {
            StoreSpec::Sqlite(path) => {
                if create_dir {
                    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
                        std::fs::create_dir_all(parent).map_err(|error| {
                            Failure::unavailable(
                                "store",
                                messages::command::cannot_create(&parent.display().to_string(), &error.to_string()),
                            )
                        })?;
                    }
                }
                let opened = tokio::time::timeout(timeout, SqliteSandboxInstanceStore::open(path))
                    .await
                    .map_err(|_| Failure::unavailable("store", within("open", "the SQLite store")))?;
                opened.map(Self::Sqlite).map_err(|error| open_error(error, &described))
            }
            StoreSpec::Postgres { url, schema } => {
                let options = PostgresOptions { schema: schema.clone(), ..PostgresOptions::default() };
                options.validate().map_err(|error| open_error(error, &described))?;
                let connect = url.parse::<PgConnectOptions>().map_err(|error| {
                    Failure::usage("--store", format!("{}: {}", redact(url), redact_text(&error.to_string())))
                })?;
                // One plain connection first: the pool would retry a refused
                // connection until its acquire timeout and then say only that
                // it timed out; this says why.
                let probe = tokio::time::timeout(timeout, PgConnection::connect_with(&connect))
                    .await
                    .map_err(|_| Failure::unavailable("store", within("connect to", "PostgreSQL")))?
                    .map_err(|error| {
                        Failure::unavailable(
                            "store",
                            messages::command::postgres_refused(&described, &redact_text(&error.to_string())),
                        )
                    })?;
                let _ = probe.close().await;
                let connected =
                    tokio::time::timeout(timeout, PostgresSandboxInstanceStore::connect(url, options.clone()))
                        .await
                        .map_err(|_| Failure::unavailable("store", within("open", "the PostgreSQL store")))?;
                let store = connected.map_err(|error| open_error(error, &described))?;
                Ok(Self::Postgres { store, url: url.clone(), options })
            }
        }
    }

    pub fn fleet(&self) -> &dyn FleetStore {
        match self {
            Self::Sqlite(store) => store,
            Self::Postgres { store, .. } => store,
        }
    }

    pub fn ledger(&self) -> &dyn LeakLedger {
        match self {
            Self::Sqlite(store) => store,
            Self::Postgres { store, .. } => store,
        }
    }

    /// `sqlite:/path` or the PostgreSQL URL without its password.
    pub fn describe(&self) -> String {
        match self {
            Self::Sqlite(store) => describe_sqlite(store.path()),
            Self::Postgres { url, options, .. } => describe_postgres(url, &options.schema),
        }
    }

    pub async fn close(&self) {
        match self {
            Self::Sqlite(store) => store.close().await,
            Self::Postgres { store, .. } => store.close().await,
        }
    }

    /// The store's schema version, record count and newest audit row (the
    /// store contract's `facts`).
    pub async fn facts(&self) -> Result<StoreFacts, Failure> {
        self.fleet()
            .facts()
            .await
            .map_err(|error| Failure::unavailable("store", format!("{}: {error}", self.describe())))
    }
}

/// What messages and outputs name a store by: `sqlite:PATH`, or the
/// PostgreSQL URL with every credential hidden ([`redact`]) and a schema
/// other than `public`.
pub fn describe(spec: &StoreSpec) -> String {
    match spec {
        StoreSpec::Sqlite(path) => describe_sqlite(path),
        StoreSpec::Postgres { url, schema } => describe_postgres(url, schema),
    }
}

fn describe_sqlite(path: &std::path::Path) -> String {
    format!("sqlite:{}", path.display())
}

fn describe_postgres(url: &str, schema: &str) -> String {
    if schema == "public" {
        redact(url)
    } else {
        format!("{} (schema {schema})", redact(url))
    }
}

fn open_error(error: StoreOpenError, described: &str) -> Failure {
    match error {
        StoreOpenError::InvalidOption { field: "schema", reason } => Failure::usage("--pg-schema", reason),
        StoreOpenError::InvalidOption { field, reason } => {
            Failure::usage("--store", messages::command::invalid_store_field(described, field, &reason))
        }
        other => Failure::unavailable("store", format!("{described}: {}", redact_text(&other.to_string()))),
    }
}
