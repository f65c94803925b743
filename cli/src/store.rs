//! Opening the store named by `--store`, and the few read-only questions the
//! store API has no call for (schema version, record count, newest audit row),
//! answered with plain SQL on a connection of our own.

use std::time::Duration;

use sandbox_reclaim::stores::sqlite::{AUDIT_TABLE, INSTANCES_TABLE, SCHEMA_VERSION_TABLE};
use sandbox_reclaim::{
    FleetStore, LeakLedger, PostgresOptions, PostgresSandboxInstanceStore, SqliteSandboxInstanceStore, StoreOpenError,
};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{ConnectOptions, Connection};

use crate::config::{redact, StoreSpec};
use crate::error::Failure;

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
        let within = |what: &str| {
            format!("{what} {described} within {} (--connect-timeout)", humantime::format_duration(timeout))
        };
        match spec {
            StoreSpec::Sqlite(path) => {
                if create_dir {
                    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
                        std::fs::create_dir_all(parent).map_err(|error| {
                            Failure::unavailable("store", format!("cannot create {}: {error}", parent.display()))
                        })?;
                    }
                }
                let opened =
                    tokio::time::timeout(timeout, SqliteSandboxInstanceStore::open(path)).await.map_err(|_| {
                        Failure::unavailable("store", format!("could not open {}", within("the SQLite store")))
                    })?;
                opened.map(Self::Sqlite).map_err(|error| open_error(error, &described))
            }
            StoreSpec::Postgres { url, schema } => {
                let options = PostgresOptions { schema: schema.clone(), ..PostgresOptions::default() };
                options.validate().map_err(|error| open_error(error, &described))?;
                let connect = url
                    .parse::<PgConnectOptions>()
                    .map_err(|error| Failure::usage("--store", format!("{}: {error}", redact(url))))?;
                // One plain connection first: the pool would retry a refused
                // connection until its acquire timeout and then say only that
                // it timed out; this says why.
                let probe = tokio::time::timeout(timeout, PgConnection::connect_with(&connect))
                    .await
                    .map_err(|_| {
                        Failure::unavailable("store", format!("could not connect to {}", within("PostgreSQL")))
                    })?
                    .map_err(|error| {
                        Failure::unavailable(
                            "store",
                            format!("could not connect to PostgreSQL at {described}: {error}"),
                        )
                    })?;
                let _ = probe.close().await;
                let connected =
                    tokio::time::timeout(timeout, PostgresSandboxInstanceStore::connect(url, options.clone()))
                        .await
                        .map_err(|_| {
                            Failure::unavailable("store", format!("could not open {}", within("the PostgreSQL store")))
                        })?;
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
            Self::Sqlite(store) => format!("sqlite:{}", store.path().display()),
            Self::Postgres { url, options, .. } if options.schema != "public" => {
                format!("{} (schema {})", redact(url), options.schema)
            }
            Self::Postgres { url, .. } => redact(url),
        }
    }

    pub async fn close(&self) {
        match self {
            Self::Sqlite(store) => store.close().await,
            Self::Postgres { store, .. } => store.close().await,
        }
    }

    /// What the store can tell that its API does not: the newest applied
    /// migration, how many instance records there are, the newest audit row.
    pub async fn facts(&self) -> Result<StoreFacts, Failure> {
        let unavailable = |error: sqlx::Error| Failure::unavailable("store", format!("{}: {error}", self.describe()));
        match self {
            Self::Sqlite(store) => {
                let mut connection = SqliteConnectOptions::new()
                    .filename(store.path())
                    .read_only(true)
                    .busy_timeout(Duration::from_secs(30))
                    .connect()
                    .await
                    .map_err(unavailable)?;
                let facts = sqlite_facts(&mut connection).await.map_err(unavailable);
                let _ = connection.close().await;
                facts
            }
            Self::Postgres { url, options, .. } => {
                let mut connection = PgConnection::connect(url).await.map_err(unavailable)?;
                let facts = postgres_facts(&mut connection, options).await.map_err(unavailable);
                let _ = connection.close().await;
                facts
            }
        }
    }
}

/// See [`Store::facts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreFacts {
    pub schema_version: i64,
    pub records: u64,
    /// Epoch milliseconds of the newest audit row (the last destroy a pass attempted).
    pub last_audit_at: Option<u64>,
}

async fn sqlite_facts(connection: &mut SqliteConnection) -> Result<StoreFacts, sqlx::Error> {
    let schema_version: i64 =
        sqlx::query_scalar(&format!("SELECT COALESCE(MAX(version), 0) FROM {SCHEMA_VERSION_TABLE}"))
            .fetch_one(&mut *connection)
            .await?;
    let records: i64 =
        sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {INSTANCES_TABLE}")).fetch_one(&mut *connection).await?;
    let last: Option<i64> =
        sqlx::query_scalar(&format!("SELECT MAX(at) FROM {AUDIT_TABLE}")).fetch_one(&mut *connection).await?;
    Ok(StoreFacts {
        schema_version,
        records: u64::try_from(records).unwrap_or(0),
        last_audit_at: last.and_then(|at| u64::try_from(at).ok()),
    })
}

async fn postgres_facts(connection: &mut PgConnection, options: &PostgresOptions) -> Result<StoreFacts, sqlx::Error> {
    // Names were validated as plain identifiers when the store opened.
    let table = |name: &str| format!("\"{}\".\"{name}\"", options.schema);
    let schema_version: i64 = sqlx::query_scalar(&format!(
        "SELECT COALESCE(MAX(version), 0)::bigint FROM {}",
        table(&options.schema_version_table)
    ))
    .fetch_one(&mut *connection)
    .await?;
    let records: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*)::bigint FROM {}", table(&options.instances_table)))
        .fetch_one(&mut *connection)
        .await?;
    let last: Option<i64> =
        sqlx::query_scalar(&format!("SELECT MAX(at)::bigint FROM {}", table(&options.audit_table_name())))
            .fetch_one(&mut *connection)
            .await?;
    Ok(StoreFacts {
        schema_version,
        records: u64::try_from(records).unwrap_or(0),
        last_audit_at: last.and_then(|at| u64::try_from(at).ok()),
    })
}

fn describe(spec: &StoreSpec) -> String {
    match spec {
        StoreSpec::Sqlite(path) => format!("sqlite:{}", path.display()),
        StoreSpec::Postgres { url, .. } => redact(url),
    }
}

fn open_error(error: StoreOpenError, described: &str) -> Failure {
    match error {
        StoreOpenError::InvalidOption { field: "schema", reason } => Failure::usage("--pg-schema", reason),
        StoreOpenError::InvalidOption { field, reason } => {
            Failure::usage("--store", format!("{described}: invalid `{field}`: {reason}"))
        }
        other => Failure::unavailable("store", format!("{described}: {other}")),
    }
}
