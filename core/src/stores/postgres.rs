//! [`PostgresSandboxInstanceStore`]: one database that a fleet of hosts
//! shares, through a connection pool per host.
//!
//! Every write is one statement or one transaction, so concurrent writers
//! need no coordination beyond PostgreSQL's own row locks. Leak claims use
//! `FOR UPDATE SKIP LOCKED` plus a lease on the database clock, so two hosts
//! never retry the same sandbox at once, even with skewed host clocks.

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::{
    backend, leak_from_row, ledger_text, record_from_row, sql_int, storable_key, validate_leak, Migration,
    StoreOpenError,
};
use crate::errors::StoreError;
use crate::ledger::{LeakEntry, LeakLedger, NewLeak};
use crate::model::SandboxInstanceRecord;

const MIGRATIONS: &[Migration] =
    &[Migration { version: 1, sql: include_str!("migrations/postgres/0001_instances_and_leaks.sql") }];

const RECORD_COLUMNS: &str =
    "sandbox_key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at";
const LEAK_COLUMNS: &str = "id, sandbox_key, provider, provider_sandbox_id, run_id, last_error, failed_at, attempts";
/// The indexed identity of a key (see the migration for why it is a hash).
const KEY_HASH: &str = "sha256(convert_to($1::text, 'UTF8'))";
/// Epoch milliseconds on the database clock, which every host shares.
const DB_NOW_MILLIS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// The indexed identity of a leaked sandbox, from the `provider` and
/// `provider_sandbox_id` parameters (length-prefixed, so it is unambiguous).
fn sandbox_hash(provider: &str, provider_sandbox_id: &str) -> String {
    format!("sha256(convert_to(length({provider}::text)::text || ':' || {provider}::text || {provider_sandbox_id}::text, 'UTF8'))")
}

/// Where and how [`PostgresSandboxInstanceStore::connect`] keeps its tables.
///
/// Names are plain identifiers (`[A-Za-z_][A-Za-z0-9_]*`, at most 63 bytes),
/// always quoted, so they are case-sensitive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresOptions {
    /// Schema holding the tables; created if missing.
    pub schema: String,
    /// Table of instance records.
    pub instances_table: String,
    /// Table of the leak ledger.
    pub leaks_table: String,
    /// Table of applied migration versions.
    pub schema_version_table: String,
    /// Most connections this handle's pool opens.
    pub max_connections: u32,
    /// How long a call waits for a free pooled connection.
    pub acquire_timeout: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: "public".to_owned(),
            instances_table: "sandbox_instances".to_owned(),
            leaks_table: "sandbox_leaks".to_owned(),
            schema_version_table: "sandbox_reclaim_schema_version".to_owned(),
            max_connections: 10,
            acquire_timeout: Duration::from_secs(30),
        }
    }
}

impl PostgresOptions {
    /// Refuses names that are not plain identifiers, or tables that collide.
    pub fn validate(&self) -> Result<(), StoreOpenError> {
        let names = [
            ("schema", &self.schema),
            ("instancesTable", &self.instances_table),
            ("leaksTable", &self.leaks_table),
            ("schemaVersionTable", &self.schema_version_table),
        ];
        for (field, name) in names {
            validate_identifier(field, name)?;
        }
        let tables = [&self.instances_table, &self.leaks_table, &self.schema_version_table];
        if tables[0] == tables[1] || tables[0] == tables[2] || tables[1] == tables[2] {
            return Err(StoreOpenError::InvalidOption {
                field: "instancesTable",
                reason: "instancesTable, leaksTable and schemaVersionTable must be three different names".to_owned(),
            });
        }
        if self.max_connections == 0 {
            return Err(StoreOpenError::InvalidOption {
                field: "maxConnections",
                reason: super::MAX_CONNECTIONS_RANGE.to_owned(),
            });
        }
        Ok(())
    }
}

fn validate_identifier(field: &'static str, name: &str) -> Result<(), StoreOpenError> {
    let mut chars = name.chars();
    let starts_well = chars.next().is_some_and(|first| first.is_ascii_alphabetic() || first == '_');
    let rest_well = chars.all(|next| next.is_ascii_alphanumeric() || next == '_');
    if !starts_well || !rest_well || name.len() > 63 {
        return Err(StoreOpenError::InvalidOption {
            field,
            reason: format!("must match [A-Za-z_][A-Za-z0-9_]* and be at most 63 bytes, got {name:?}"),
        });
    }
    Ok(())
}

/// SQL text built once per store from the configured names.
#[derive(Debug)]
struct Queries {
    get: String,
    upsert: String,
    delete: String,
    record_leak: String,
    list_leaks: String,
    count_leaks: String,
    claim_leaks: String,
    resolve_leak: String,
    record_retry_failure: String,
}

impl Queries {
    fn new(instances: &str, leaks: &str) -> Self {
        let leak_hash = sandbox_hash("$1", "$2");
        Self {
            get: format!("SELECT {RECORD_COLUMNS} FROM {instances} WHERE key_hash = {KEY_HASH} AND sandbox_key = $1"),
            // Every column is set, so omitted optionals overwrite with NULL:
            // a full replace, as the contract demands.
            upsert: format!(
                "INSERT INTO {instances} (key_hash, {RECORD_COLUMNS}) VALUES ({KEY_HASH}, $1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (key_hash) DO UPDATE SET sandbox_key = EXCLUDED.sandbox_key, \
                 provider = EXCLUDED.provider, provider_sandbox_id = EXCLUDED.provider_sandbox_id, \
                 latest_snapshot_id = EXCLUDED.latest_snapshot_id, thread_id = EXCLUDED.thread_id, \
                 latest_run_id = EXCLUDED.latest_run_id, updated_at = EXCLUDED.updated_at"
            ),
            delete: format!("DELETE FROM {instances} WHERE key_hash = {KEY_HASH}"),
            record_leak: format!(
                "INSERT INTO {leaks} AS leak \
                 (sandbox_hash, provider, provider_sandbox_id, sandbox_key, run_id, last_error, failed_at, attempts) \
                 VALUES ({leak_hash}, $1, $2, $3, $4, $5, $6, 1) \
                 ON CONFLICT (sandbox_hash) DO UPDATE SET attempts = leak.attempts + 1, \
                 sandbox_key = EXCLUDED.sandbox_key, run_id = EXCLUDED.run_id, last_error = EXCLUDED.last_error, \
                 failed_at = EXCLUDED.failed_at"
            ),
            list_leaks: format!(
                "SELECT {LEAK_COLUMNS} FROM {leaks} WHERE $1::text IS NULL OR provider = $1::text ORDER BY id"
            ),
            count_leaks: format!("SELECT COUNT(*) FROM {leaks} WHERE $1::text IS NULL OR provider = $1::text"),
            // SKIP LOCKED passes over rows another host is claiming right now;
            // the lease keeps them from being claimed again once it commits.
            claim_leaks: format!(
                "WITH picked AS (SELECT id FROM {leaks} WHERE provider = $1::text \
                 AND (claimed_until IS NULL OR claimed_until <= {DB_NOW_MILLIS}) \
                 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED) \
                 UPDATE {leaks} AS leak SET claimed_until = {DB_NOW_MILLIS} + $3 FROM picked \
                 WHERE leak.id = picked.id RETURNING {}",
                LEAK_COLUMNS.split(", ").map(|column| format!("leak.{column}")).collect::<Vec<_>>().join(", ")
            ),
            resolve_leak: format!("DELETE FROM {leaks} WHERE sandbox_hash = {leak_hash}"),
            record_retry_failure: format!(
                "UPDATE {leaks} SET attempts = attempts + 1, last_error = $3, failed_at = $4, claimed_until = NULL \
                 WHERE sandbox_hash = {leak_hash}"
            ),
        }
    }
}

/// An instance store with a [`LeakLedger`] in PostgreSQL, for many hosts.
///
/// Point every host at the same URL and options; migrations run on connect
/// under an advisory lock, so hosts may start together.
#[derive(Debug, Clone)]
pub struct PostgresSandboxInstanceStore {
    pool: PgPool,
    queries: std::sync::Arc<Queries>,
}

impl PostgresSandboxInstanceStore {
    /// Connects a pool to `url` (`postgres://user@host:port/db`), creates the
    /// schema if missing and applies pending migrations.
    pub async fn connect(url: &str, options: PostgresOptions) -> Result<Self, StoreOpenError> {
        options.validate()?;
        let connect = PgConnectOptions::from_str(url)
            .map_err(|error| StoreOpenError::InvalidOption { field: "url", reason: error.to_string() })?;
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            .connect_with(connect)
            .await
            .map_err(StoreOpenError::Connect)?;
        let schema = quote(&options.schema);
        let qualified = |table: &str| format!("{schema}.{}", quote(table));
        migrate(
            &pool,
            &options,
            &qualified(&options.schema_version_table),
            &qualified(&options.instances_table),
            &qualified(&options.leaks_table),
        )
        .await?;
        let queries = Queries::new(&qualified(&options.instances_table), &qualified(&options.leaks_table));
        Ok(Self { pool, queries: std::sync::Arc::new(queries) })
    }

    /// Closes every pooled connection; later calls fail.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Quotes a validated identifier (validation already refused `"`).
fn quote(identifier: &str) -> String {
    format!("\"{identifier}\"")
}

/// Applies pending migrations in one transaction holding an advisory lock on
/// the schema: a second host connecting at once waits, then finds nothing to do.
async fn migrate(
    pool: &PgPool,
    options: &PostgresOptions,
    versions: &str,
    instances: &str,
    leaks: &str,
) -> Result<(), StoreOpenError> {
    let fail = StoreOpenError::Migrate;
    let mut tx = pool.begin().await.map_err(fail)?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(format!("sandbox-reclaim migrate {}", options.schema))
        .execute(&mut *tx)
        .await
        .map_err(fail)?;
    // CREATE SCHEMA IF NOT EXISTS checks the CREATE privilege even when the
    // schema exists, so only a missing schema is created.
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
        .bind(&options.schema)
        .fetch_one(&mut *tx)
        .await
        .map_err(fail)?;
    if !exists {
        sqlx::query(&format!("CREATE SCHEMA {}", quote(&options.schema))).execute(&mut *tx).await.map_err(fail)?;
    }
    let create_versions = format!(
        "CREATE TABLE IF NOT EXISTS {versions} \
         (version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    );
    sqlx::query(&create_versions).execute(&mut *tx).await.map_err(fail)?;
    let current: i64 = sqlx::query_scalar(&format!("SELECT COALESCE(MAX(version), 0)::bigint FROM {versions}"))
        .fetch_one(&mut *tx)
        .await
        .map_err(fail)?;
    let supported = MIGRATIONS.last().map_or(0, |migration| migration.version);
    if current > supported {
        return Err(StoreOpenError::SchemaTooNew { found: current, supported });
    }
    let names = [("{instances}", instances), ("{leaks}", leaks)];
    for migration in MIGRATIONS.iter().filter(|migration| migration.version > current) {
        for statement in migration.statements(&names) {
            sqlx::query(&statement).execute(&mut *tx).await.map_err(fail)?;
        }
        sqlx::query(&format!("INSERT INTO {versions} (version) VALUES ($1)"))
            .bind(migration.version)
            .execute(&mut *tx)
            .await
            .map_err(fail)?;
    }
    tx.commit().await.map_err(fail)
}

#[async_trait]
impl crate::driver::SandboxInstanceStore for PostgresSandboxInstanceStore {
    async fn get(&self, key: &str) -> Result<Option<SandboxInstanceRecord>, StoreError> {
        if !storable_key(key) {
            return Ok(None);
        }
        let row = sqlx::query(&self.queries.get).bind(key).fetch_optional(&self.pool).await.map_err(backend)?;
        row.as_ref().map(record_from_row).transpose()
    }

    async fn upsert(&self, record: &SandboxInstanceRecord) -> Result<(), StoreError> {
        record.validate()?;
        sqlx::query(&self.queries.upsert)
            .bind(&record.key)
            .bind(&record.provider)
            .bind(&record.provider_sandbox_id)
            .bind(&record.latest_snapshot_id)
            .bind(&record.thread_id)
            .bind(&record.latest_run_id)
            .bind(sql_int(record.updated_at))
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        if !storable_key(key) {
            return Ok(());
        }
        sqlx::query(&self.queries.delete).bind(key).execute(&self.pool).await.map_err(backend)?;
        Ok(())
    }

    fn leak_ledger(&self) -> Option<&dyn LeakLedger> {
        Some(self)
    }
}

#[async_trait]
impl LeakLedger for PostgresSandboxInstanceStore {
    async fn delete_recording_leak(&self, key: &str, leak: NewLeak) -> Result<(), StoreError> {
        validate_leak(key, &leak)?;
        let mut tx = self.pool.begin().await.map_err(backend)?;
        sqlx::query(&self.queries.delete).bind(key).execute(&mut *tx).await.map_err(backend)?;
        sqlx::query(&self.queries.record_leak)
            .bind(&leak.provider)
            .bind(&leak.provider_sandbox_id)
            .bind(&leak.key)
            .bind(ledger_text(&leak.run_id))
            .bind(ledger_text(&leak.error_message))
            .bind(sql_int(leak.failed_at))
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)
    }

    async fn list_leaks(&self, provider: Option<&str>) -> Result<Vec<LeakEntry>, StoreError> {
        let rows = sqlx::query(&self.queries.list_leaks).bind(provider).fetch_all(&self.pool).await.map_err(backend)?;
        rows.iter().map(|row| leak_from_row(row).map(|(_, entry)| entry)).collect()
    }

    async fn count_leaks(&self, provider: Option<&str>) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar(&self.queries.count_leaks)
            .bind(provider)
            .fetch_one(&self.pool)
            .await
            .map_err(backend)?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn claim_leaks(&self, provider: &str, limit: usize, lease: Duration) -> Result<Vec<LeakEntry>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(&self.queries.claim_leaks)
            .bind(provider)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .bind(super::lease_millis(lease))
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        let mut claimed = rows.iter().map(leak_from_row).collect::<Result<Vec<_>, _>>()?;
        claimed.sort_by_key(|(id, _)| *id);
        Ok(claimed.into_iter().map(|(_, entry)| entry).collect())
    }

    async fn resolve_leak(&self, entry: &LeakEntry) -> Result<(), StoreError> {
        sqlx::query(&self.queries.resolve_leak)
            .bind(&entry.provider)
            .bind(&entry.provider_sandbox_id)
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn record_retry_failure(&self, entry: &LeakEntry, message: &str, failed_at: u64) -> Result<(), StoreError> {
        sqlx::query(&self.queries.record_retry_failure)
            .bind(&entry.provider)
            .bind(&entry.provider_sandbox_id)
            .bind(ledger_text(message))
            .bind(sql_int(failed_at))
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(())
    }
}
