//! [`SqliteSandboxInstanceStore`]: the embedded default, one SQLite file that
//! several processes (Rust, Node, Python) on one machine share.
//!
//! WAL mode lets readers run beside the one writer; the busy timeout makes a
//! writer wait for the lock instead of failing; every multi-statement write
//! starts with `BEGIN IMMEDIATE`, so it takes the write lock up front and can
//! never hit the busy-upgrade deadlock of a deferred transaction.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqlitePool, SqlitePoolOptions};
use sqlx::{ConnectOptions, Connection};

use super::candidate_rows::CandidateRows;
use super::group_commit::{BatchCommit, GroupCommit, Write};
use super::ordered::KeyedOrder;
use super::sql::PruneBatches;
pub use super::sql::ScopedSql;
use super::sql::{
    audit_from_row, backend, due_in_order, held, leak_from_row, ledger_text, prune_in_batches, record_from_row,
    scheduled_from_row, sorted_ids, sql_int, sql_limit, storable_ids, storable_key, storable_name, summaries,
    validate_leak, AuditText, Migration, StoreOpenError, AUDIT_COLUMNS,
};

/// Rows one prune batch deletes: about 3 ms of the write lock at millions of
/// rows, so a writer of another process waits about that long behind one.
pub const PRUNE_BATCH: usize = 1_000;
/// Batches of one table a prune call runs at most (500,000 rows, as on
/// PostgreSQL): the pauses between them make a full call about twice its work.
pub const PRUNE_MAX_BATCHES: usize = 500;
const PRUNING: PruneBatches = PruneBatches { rows: PRUNE_BATCH, most: PRUNE_MAX_BATCHES, pause: true };
use crate::contract::errors::StoreError;
use crate::contract::FleetStore;
use crate::contract::LeakLedger;
use crate::contract::SandboxInstanceStore;
use crate::model::fleet::{AuditEntry, DueLeak, LeakReason, ScheduledLeak, StoreFacts, AUDIT_DESTROYED};
use crate::model::ledger::{Held, LeakEntry, LeakSummary, NewLeak};
use crate::model::SandboxInstanceRecord;
use crate::runtime::clock::now_millis;
use crate::stores::checks::{lease_end, validate_name};

/// Table of instance records.
pub const INSTANCES_TABLE: &str = "sandbox_instances";
/// Table of the leak ledger.
pub const LEAKS_TABLE: &str = "sandbox_leaks";
/// Table of the orphan sweep leases, one row per provider (schema version 2).
pub const SWEEPS_TABLE: &str = "sandbox_sweeps";
/// Table of the fleet passes' audit log (schema version 2).
pub const AUDIT_TABLE: &str = "sandbox_audit";
/// Table of the registry: every sandbox a record named (schema version 3).
pub const REGISTRY_TABLE: &str = "sandbox_registry";
/// Table of the count of record deletions, the scoped sweep's mark (schema version 5).
pub const MARKS_TABLE: &str = "sandbox_marks";
/// Table of applied migration versions.
pub const SCHEMA_VERSION_TABLE: &str = "sandbox_reclaim_schema_version";

/// Every table of ours besides the schema-version table, in creation order.
const DATA_TABLES: [&str; 6] = [INSTANCES_TABLE, LEAKS_TABLE, SWEEPS_TABLE, AUDIT_TABLE, REGISTRY_TABLE, MARKS_TABLE];

const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, sql: include_str!("migrations/sqlite/0001_instances_and_leaks.sql") },
    Migration { version: 2, sql: include_str!("migrations/sqlite/0002_fleet.sql") },
    Migration { version: 3, sql: include_str!("migrations/sqlite/0003_registry.sql") },
    Migration { version: 4, sql: include_str!("migrations/sqlite/0004_claim_generation.sql") },
    Migration { version: 5, sql: include_str!("migrations/sqlite/0005_scoped_reads.sql") },
];

const RECORD_COLUMNS: &str =
    "sandbox_key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at";
/// Epoch milliseconds on SQLite's clock, as the registry's triggers take it.
const SQLITE_NOW_MILLIS: &str = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";
/// A claimed entry's write lands only under its own claim (`?3`: its
/// generation; NULL for an entry that was only listed: unfenced).
const FENCE: &str = "(?3 IS NULL OR (claim = ?3 AND claimed_until IS NOT NULL))";
const LEAK_COLUMNS: &str =
    "id, sandbox_key, provider, provider_sandbox_id, run_id, last_error, failed_at, attempts, claim, claimed_until";
const DUE_COLUMNS: &str = "id, sandbox_key, provider, provider_sandbox_id, run_id, last_error, failed_at, attempts, \
     claim, claimed_until, reason, next_attempt_at";

/// The scoped reads' SQL, built once (the table names are fixed). A listed
/// id is found on an index of each table: the records' and the audit's
/// (provider, provider_sandbox_id, ...), the ledger's UNIQUE, the registry's key.
static SCOPED: std::sync::LazyLock<ScopedSql> = std::sync::LazyLock::new(|| {
    // A row of `table` (as `alias`) naming the asked id (`asked.value`, from `json_each`).
    let asked = |table: &str, alias: &str, more: &str| {
        format!(
            "EXISTS (SELECT 1 FROM {table} AS {alias} \
             WHERE {alias}.provider = ?1 AND {alias}.provider_sandbox_id = asked.value{more})"
        )
    };
    let named = asked(INSTANCES_TABLE, "i", "");
    let among = |conditions: &str| format!("SELECT asked.value FROM json_each(?2) AS asked WHERE {conditions}");
    // `+lookup_at`: found by key (the asked ids), never by walking the queue's index.
    let queued =
        "provider = ?1 AND provider_sandbox_id IN (SELECT value FROM json_each(?2)) AND +lookup_at IS NOT NULL";
    // By the rowids the candidates read handed out (`?2`), each row checked
    // to still be one of the asked ids (`?3`): see `candidate_rows`.
    let rows = "rowid IN (SELECT value FROM json_each(?2)) AND +provider = ?1 \
         AND +provider_sandbox_id IN (SELECT value FROM json_each(?3)) AND +lookup_at IS NOT NULL";
    ScopedSql {
        // The count of record deletions so far (the triggers keep it).
        sweep_mark: format!("SELECT deletions FROM {MARKS_TABLE} WHERE id = 1"),
        referenced_among: among(&format!(
            "{named} OR {} OR {} OR {}",
            asked(LEAKS_TABLE, "l", ""),
            asked(AUDIT_TABLE, "a", " AND a.at >= ?3 AND a.result = ?5"),
            asked(REGISTRY_TABLE, "r", " AND (r.resolved_at >= ?3 OR r.deleted_seq > ?4)")
        )),
        registered_among: among(&format!("{named} OR {}", asked(REGISTRY_TABLE, "r", " AND r.last_seen >= ?3"))),
        // The queue's index gives the order, so a page reads only its rows
        // (named, never the planner's pick: by `last_seen` it would sort the
        // whole registry). A row a record or leak entry names again is
        // skipped (the triggers keep the queue, this read does not trust it).
        lookup_candidates: format!(
            "SELECT r.rowid, r.provider_sandbox_id FROM {REGISTRY_TABLE} AS r INDEXED BY {REGISTRY_TABLE}_lookup_queue \
             WHERE r.provider = ?1 AND r.lookup_at IS NOT NULL AND r.last_seen >= ?2 \
             AND NOT EXISTS (SELECT 1 FROM {INSTANCES_TABLE} AS i \
             WHERE i.provider = r.provider AND i.provider_sandbox_id = r.provider_sandbox_id) \
             AND NOT EXISTS (SELECT 1 FROM {LEAKS_TABLE} AS l \
             WHERE l.provider = r.provider AND l.provider_sandbox_id = r.provider_sandbox_id) \
             ORDER BY r.lookup_at, r.provider_sandbox_id LIMIT ?3"
        ),
        lookup_gone: format!(
            "UPDATE {REGISTRY_TABLE} SET lookup_at = NULL, resolved_at = {SQLITE_NOW_MILLIS} WHERE {queued}"
        ),
        lookup_checked: format!("UPDATE {REGISTRY_TABLE} SET lookup_at = ?3 WHERE {queued}"),
        lookup_gone_rows: Some(format!(
            "UPDATE {REGISTRY_TABLE} SET lookup_at = NULL, resolved_at = {SQLITE_NOW_MILLIS} WHERE {rows}"
        )),
        lookup_checked_rows: Some(format!("UPDATE {REGISTRY_TABLE} SET lookup_at = ?4 WHERE {rows}")),
        unqueue_destroyed: format!(
            "UPDATE {REGISTRY_TABLE} SET lookup_at = NULL \
             WHERE provider = ?1 AND provider_sandbox_id = ?2 AND lookup_at IS NOT NULL"
        ),
        // A row's `resolved_at` counts like an audit row of its destroy (the
        // sweep spares both): kept as long as the audit keeps those.
        prune_registry: format!(
            "DELETE FROM {REGISTRY_TABLE} WHERE rowid IN (SELECT rowid FROM {REGISTRY_TABLE} \
             WHERE provider = ?1 AND last_seen < ?2 AND (resolved_at IS NULL OR resolved_at < ?3) LIMIT ?4)"
        ),
        prune_audit: format!(
            "DELETE FROM {AUDIT_TABLE} WHERE rowid IN (SELECT rowid FROM {AUDIT_TABLE} \
             WHERE provider = ?1 AND at < ?2 LIMIT ?3)"
        ),
    }
});

/// The longest busy timeout SQLite can wait: `i32::MAX` milliseconds.
pub const MAX_BUSY_TIMEOUT: Duration = Duration::from_millis(crate::options::arguments::BUSY_TIMEOUT_MS.max);

/// How [`SqliteSandboxInstanceStore::open_with`] opens the file.
#[derive(Debug, Clone, Copy)]
pub struct SqliteOptions {
    /// How long a write waits for another process's write lock before
    /// failing; at most [`MAX_BUSY_TIMEOUT`].
    pub busy_timeout: Duration,
    /// Connections in this handle's pool (readers run in parallel in WAL mode).
    pub max_connections: u32,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        // The defaults are the hosts' declared ones (`options::stores`).
        use crate::options::stores::sqlite::{BUSY_TIMEOUT, MAX_CONNECTIONS};
        Self {
            busy_timeout: Duration::from_millis(BUSY_TIMEOUT.default_millis()),
            max_connections: MAX_CONNECTIONS.default_count(),
        }
    }
}

/// An instance store with a [`LeakLedger`] in one SQLite file (WAL mode).
///
/// Open the same file from as many processes as needed; each handle keeps
/// its own small connection pool.
#[derive(Debug, Clone)]
pub struct SqliteSandboxInstanceStore {
    pool: SqlitePool,
    path: PathBuf,
    /// Reclaim-path writes share transactions under load (see [`GroupCommit`]).
    writes: std::sync::Arc<GroupCommit>,
    /// Writes to one key commit in the order they were issued ([`KeyedOrder`]).
    order: std::sync::Arc<KeyedOrder>,
    /// The lookup candidates' rowids, for their write-back ([`CandidateRows`]).
    candidates: std::sync::Arc<CandidateRows>,
}

impl SqliteSandboxInstanceStore {
    /// Opens (creating if missing) the store file at `path` with default
    /// options, switches it to WAL mode and applies pending migrations.
    ///
    /// An existing file must be empty or already ours: one holding another
    /// application's tables ([`StoreOpenError::ForeignDatabase`]), a table with
    /// one of our names that we did not create
    /// ([`StoreOpenError::IncompatibleSchema`]) or a newer schema
    /// ([`StoreOpenError::SchemaTooNew`]) is refused before a byte changes.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreOpenError> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// [`open`](Self::open) with explicit options.
    pub async fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, StoreOpenError> {
        let path = path.as_ref();
        if path.as_os_str().is_empty() {
            return Err(invalid("path", "must be a non-empty file path"));
        }
        if path.as_os_str() == ":memory:" {
            return Err(invalid("path", "must be a file: an in-memory SQLite database is not shared"));
        }
        if options.max_connections == 0 {
            return Err(invalid("maxConnections", super::sql::MAX_CONNECTIONS_RANGE));
        }
        // SQLite takes the busy timeout as an `int` of milliseconds (sqlx panics beyond it).
        if options.busy_timeout > MAX_BUSY_TIMEOUT {
            return Err(invalid("busyTimeout", "must be at most 2147483647 milliseconds (about 24.8 days)"));
        }
        // Read-only first: a file that is not (and cannot become) ours is
        // refused before the WAL switch or a migration changes a byte of it.
        if path.exists() {
            inspect(path, options.busy_timeout).await?;
        }
        let connect =
            SqliteConnectOptions::new().filename(path).create_if_missing(true).busy_timeout(options.busy_timeout);

        // One bootstrap connection switches to WAL and migrates before the
        // pool opens, so pool connections always find a ready schema.
        let mut bootstrap = connect.connect().await.map_err(StoreOpenError::Connect)?;
        enable_wal(&mut bootstrap, options.busy_timeout).await?;
        migrate(&mut bootstrap).await?;
        bootstrap.close().await.map_err(StoreOpenError::Connect)?;

        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.busy_timeout.max(Duration::from_secs(30)))
            .connect_with(connect)
            .await
            .map_err(StoreOpenError::Connect)?;
        let (writes, order, candidates) = Default::default();
        Ok(Self { pool, path: path.to_owned(), writes, order, candidates })
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes every pooled connection; later calls fail.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

impl SqliteSandboxInstanceStore {
    /// The scoped reads' and bounded writes' SQL, as the store issues it.
    #[doc(hidden)]
    pub fn scoped_sql() -> &'static ScopedSql {
        &SCOPED
    }
}

/// Runs one write in a transaction of its own (`BEGIN IMMEDIATE`: it takes
/// the write lock up front), answering how many rows it changed.
async fn own_transaction<'q>(
    pool: &SqlitePool,
    query: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments<'q>>,
) -> Result<u64, StoreError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(backend)?;
    let done = query.execute(&mut *tx).await.map_err(backend)?;
    tx.commit().await.map_err(backend)?;
    Ok(done.rows_affected())
}

fn invalid(field: &'static str, reason: &str) -> StoreOpenError {
    StoreOpenError::InvalidOption { field, reason: reason.to_owned() }
}

/// Checks, on a read-only connection, that the existing file at `path` is
/// empty, or already ours (a schema-version table with valid versions), or
/// holds nothing of ours and nothing else: anything else is refused.
async fn inspect(path: &Path, timeout: Duration) -> Result<(), StoreOpenError> {
    let mut connection = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .busy_timeout(timeout)
        .connect()
        .await
        .map_err(StoreOpenError::Connect)?;
    let verdict = inspect_schema(&mut connection, path).await;
    connection.close().await.map_err(StoreOpenError::Connect)?;
    verdict
}

async fn inspect_schema(connection: &mut SqliteConnection, path: &Path) -> Result<(), StoreOpenError> {
    // Indexes and triggers come with a table; SQLite's own tables
    // (`sqlite_sequence`, `sqlite_stat1`) belong to no application.
    let sql = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') \
               AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY name";
    let names: Vec<String> =
        sqlx::query_scalar(sql).fetch_all(&mut *connection).await.map_err(StoreOpenError::Connect)?;
    let has = |table: &str| names.iter().any(|name| name == table);
    if has(SCHEMA_VERSION_TABLE) && check_versions(connection, path).await? > 0 {
        return Ok(());
    }
    for table in DATA_TABLES {
        if has(table) {
            let columns: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info(?1)")
                .bind(table)
                .fetch_all(&mut *connection)
                .await
                .map_err(StoreOpenError::Connect)?;
            let reason = format!("no schema version is recorded for it; its columns are ({})", columns.join(", "));
            return Err(StoreOpenError::IncompatibleSchema { path: path.to_owned(), table, reason });
        }
    }
    let ours = |name: &str| name == SCHEMA_VERSION_TABLE || DATA_TABLES.contains(&name);
    let foreign: Vec<String> = names.into_iter().filter(|name| !ours(name)).collect();
    if foreign.is_empty() {
        return Ok(());
    }
    Err(StoreOpenError::ForeignDatabase { path: path.to_owned(), tables: foreign })
}

/// The highest schema version recorded (0 for none), refusing versions this
/// library cannot have written and ones newer than it knows.
async fn check_versions(connection: &mut SqliteConnection, path: &Path) -> Result<i64, StoreOpenError> {
    let malformed = |reason: String| StoreOpenError::IncompatibleSchema {
        path: path.to_owned(),
        table: SCHEMA_VERSION_TABLE,
        reason,
    };
    let sql = format!("SELECT version FROM {SCHEMA_VERSION_TABLE}");
    let versions: Vec<i64> = sqlx::query_scalar(&sql)
        .fetch_all(&mut *connection)
        .await
        .map_err(|error| malformed(format!("its versions cannot be read: {error}")))?;
    if let Some(bad) = versions.iter().find(|version| **version < 1) {
        return Err(malformed(format!("it records version {bad}, and versions start at 1")));
    }
    let found = versions.iter().copied().max().unwrap_or(0);
    let supported = supported_version();
    if found > supported {
        return Err(StoreOpenError::SchemaTooNew { found, supported });
    }
    Ok(found)
}

/// The newest schema version this library knows.
fn supported_version() -> i64 {
    MIGRATIONS.last().map_or(0, |migration| migration.version)
}

/// Whether SQLite answered "busy" (any extended form of `SQLITE_BUSY`).
fn is_busy(error: &sqlx::Error) -> bool {
    let code = error.as_database_error().and_then(|database| database.code());
    code.and_then(|code| code.parse::<i32>().ok()).is_some_and(|code| code & 0xff == 5)
}

/// Switching to WAL needs an exclusive lock that SQLite's busy handler does
/// not wait for, so two processes creating the file at once retry here.
async fn enable_wal(connection: &mut SqliteConnection, timeout: Duration) -> Result<(), StoreOpenError> {
    let deadline = Instant::now() + timeout;
    loop {
        match sqlx::query_scalar::<_, String>("PRAGMA journal_mode = WAL").fetch_one(&mut *connection).await {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => {
                return Err(StoreOpenError::InvalidOption {
                    field: "path",
                    reason: format!("SQLite cannot use WAL mode for this file (journal mode `{mode}`)"),
                })
            }
            Err(error) if is_busy(&error) && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(error) => return Err(StoreOpenError::Connect(error)),
        }
    }
}

/// Applies pending migrations under `BEGIN IMMEDIATE`: a second process
/// opening at the same moment waits, then finds nothing left to do.
async fn migrate(connection: &mut SqliteConnection) -> Result<(), StoreOpenError> {
    let names = [
        ("{instances}", INSTANCES_TABLE),
        ("{leaks}", LEAKS_TABLE),
        ("{sweeps}", SWEEPS_TABLE),
        ("{audit}", AUDIT_TABLE),
        ("{registry}", REGISTRY_TABLE),
        ("{marks}", MARKS_TABLE),
    ];
    let mut tx = connection.begin_with("BEGIN IMMEDIATE").await.map_err(StoreOpenError::Migrate)?;
    let create_versions = format!(
        "CREATE TABLE IF NOT EXISTS {SCHEMA_VERSION_TABLE} \
         (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT"
    );
    sqlx::query(&create_versions).execute(&mut *tx).await.map_err(StoreOpenError::Migrate)?;
    let current: i64 = sqlx::query_scalar(&format!("SELECT COALESCE(MAX(version), 0) FROM {SCHEMA_VERSION_TABLE}"))
        .fetch_one(&mut *tx)
        .await
        .map_err(StoreOpenError::Migrate)?;
    let supported = supported_version();
    if current > supported {
        return Err(StoreOpenError::SchemaTooNew { found: current, supported });
    }
    for migration in MIGRATIONS.iter().filter(|migration| migration.version > current) {
        for statement in migration.statements(&names) {
            sqlx::query(&statement).execute(&mut *tx).await.map_err(StoreOpenError::Migrate)?;
        }
        sqlx::query(&format!("INSERT INTO {SCHEMA_VERSION_TABLE} (version, applied_at) VALUES (?1, ?2)"))
            .bind(migration.version)
            .bind(sql_int(now_millis()))
            .execute(&mut *tx)
            .await
            .map_err(StoreOpenError::Migrate)?;
    }
    tx.commit().await.map_err(StoreOpenError::Migrate)
}

#[async_trait]
impl SandboxInstanceStore for SqliteSandboxInstanceStore {
    async fn get(&self, key: &str) -> Result<Option<SandboxInstanceRecord>, StoreError> {
        if !storable_key(key) {
            return Ok(None);
        }
        let sql = format!("SELECT {RECORD_COLUMNS} FROM {INSTANCES_TABLE} WHERE sandbox_key = ?1");
        let row = sqlx::query(&sql).bind(key).fetch_optional(&self.pool).await.map_err(backend)?;
        row.as_ref().map(record_from_row).transpose()
    }

    async fn upsert(&self, record: &SandboxInstanceRecord) -> Result<(), StoreError> {
        record.validate()?;
        // Every column is set, so omitted optionals overwrite with NULL: a
        // full replace, as the contract demands.
        let sql = format!(
            "INSERT INTO {INSTANCES_TABLE} ({RECORD_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
             ON CONFLICT (sandbox_key) DO UPDATE SET provider = excluded.provider, \
             provider_sandbox_id = excluded.provider_sandbox_id, latest_snapshot_id = excluded.latest_snapshot_id, \
             thread_id = excluded.thread_id, latest_run_id = excluded.latest_run_id, updated_at = excluded.updated_at"
        );
        let (pool, record) = (self.pool.clone(), record.clone());
        self.order
            .run(&record.key.clone(), async move {
                sqlx::query(&sql)
                    .bind(&record.key)
                    .bind(&record.provider)
                    .bind(&record.provider_sandbox_id)
                    .bind(&record.latest_snapshot_id)
                    .bind(&record.thread_id)
                    .bind(&record.latest_run_id)
                    .bind(sql_int(record.updated_at))
                    .execute(&pool)
                    .await
                    .map_err(backend)?;
                Ok(())
            })
            .await
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        if !storable_key(key) {
            return Ok(());
        }
        self.write(key, Write::Delete { key: key.to_owned() }).await
    }

    fn leak_ledger(&self) -> Option<&dyn LeakLedger> {
        Some(self)
    }
}

/// Records `leak` (attempt 1) with its fleet bookkeeping, or bumps the
/// attempts of the entry for the same sandbox, keeping its place and any
/// claim on it.
impl SqliteSandboxInstanceStore {
    /// Issues a reclaim-path write for `key` (in order, see [`KeyedOrder`])
    /// and queues it for the next group commit.
    async fn write(&self, key: &str, write: Write) -> Result<(), StoreError> {
        let (pool, writes) = (self.pool.clone(), std::sync::Arc::clone(&self.writes));
        self.order
            .run(key, async move {
                writes.submit(write, move |batch| commit_batch(pool, batch)).await.map_err(StoreError::backend)
            })
            .await
    }
}

/// Commits `batch` in one transaction, each write in its own savepoint.
/// Boxed as one named `Send + 'static` future: it runs as its own task, so a
/// waiter that goes away never cuts a transaction (or the others' answers) short.
fn commit_batch(pool: SqlitePool, batch: Vec<Write>) -> BatchCommit {
    Box::pin(async move {
        let count = batch.len();
        let failed = |error: sqlx::Error| vec![Err(error.to_string()); count];
        let mut connection = match pool.acquire().await {
            Ok(connection) => connection,
            Err(error) => return failed(error),
        };
        let connection: &mut SqliteConnection = &mut connection;
        if let Err(error) = sqlx::query("BEGIN IMMEDIATE").execute(&mut *connection).await {
            return failed(error);
        }
        let mut results = Vec::with_capacity(count);
        for write in batch {
            let outcome = apply(connection, write).await;
            results.push(outcome);
        }
        match sqlx::query("COMMIT").execute(&mut *connection).await {
            Ok(_) => results,
            Err(error) => {
                let _ = sqlx::query("ROLLBACK").execute(&mut *connection).await;
                failed(error)
            }
        }
    })
}

/// One write of a batch, in its own savepoint: a failing write fails alone.
async fn apply(connection: &mut SqliteConnection, write: Write) -> Result<(), String> {
    sqlx::query("SAVEPOINT reclaim_write").execute(&mut *connection).await.map_err(|error| error.to_string())?;
    let delete = format!("DELETE FROM {INSTANCES_TABLE} WHERE sandbox_key = ?1");
    let applied = match &write {
        Write::Delete { key } => {
            sqlx::query(&delete).bind(key).execute(&mut *connection).await.map(|_| ()).map_err(backend)
        }
        Write::DeleteRecordingLeak { key, leak } => {
            match sqlx::query(&delete).bind(key).execute(&mut *connection).await.map_err(backend) {
                Ok(_) => upsert_leak(&mut *connection, leak, LeakReason::DestroyFailed, leak.failed_at).await,
                Err(error) => Err(error),
            }
        }
    };
    if applied.is_err() {
        sqlx::query("ROLLBACK TO reclaim_write").execute(&mut *connection).await.map_err(|error| error.to_string())?;
    }
    sqlx::query("RELEASE reclaim_write").execute(&mut *connection).await.map_err(|error| error.to_string())?;
    applied.map_err(|error| error.to_string())
}

async fn upsert_leak<'e>(
    executor: impl sqlx::SqliteExecutor<'e>,
    leak: &NewLeak,
    reason: LeakReason,
    next_attempt_at: u64,
) -> Result<(), StoreError> {
    let sql = format!(
        "INSERT INTO {LEAKS_TABLE} \
         (provider, provider_sandbox_id, sandbox_key, run_id, last_error, failed_at, attempts, reason, next_attempt_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8) \
         ON CONFLICT (provider, provider_sandbox_id) DO UPDATE SET attempts = attempts + 1, \
         sandbox_key = excluded.sandbox_key, run_id = excluded.run_id, last_error = excluded.last_error, \
         failed_at = excluded.failed_at, reason = excluded.reason, next_attempt_at = excluded.next_attempt_at"
    );
    sqlx::query(&sql)
        .bind(&leak.provider)
        .bind(&leak.provider_sandbox_id)
        .bind(&leak.key)
        .bind(ledger_text(&leak.run_id))
        .bind(ledger_text(&leak.error_message))
        .bind(sql_int(leak.failed_at))
        .bind(reason.as_str())
        .bind(sql_int(next_attempt_at))
        .execute(executor)
        .await
        .map_err(backend)?;
    Ok(())
}

#[async_trait]
impl LeakLedger for SqliteSandboxInstanceStore {
    async fn delete_recording_leak(&self, key: &str, leak: NewLeak) -> Result<(), StoreError> {
        validate_leak(key, &leak)?;
        self.write(key, Write::DeleteRecordingLeak { key: key.to_owned(), leak }).await
    }

    async fn list_leaks(&self, provider: Option<&str>) -> Result<Vec<LeakEntry>, StoreError> {
        let sql = format!("SELECT {LEAK_COLUMNS} FROM {LEAKS_TABLE} WHERE ?1 IS NULL OR provider = ?1 ORDER BY id");
        let rows = sqlx::query(&sql).bind(provider).fetch_all(&self.pool).await.map_err(backend)?;
        // A listing hands out no claim to write under.
        rows.iter().map(|row| leak_from_row(row).map(|(_, entry)| LeakEntry { claim: None, ..entry })).collect()
    }

    async fn count_leaks(&self, provider: Option<&str>) -> Result<u64, StoreError> {
        let sql = format!("SELECT COUNT(*) FROM {LEAKS_TABLE} WHERE ?1 IS NULL OR provider = ?1");
        let count: i64 = sqlx::query_scalar(&sql).bind(provider).fetch_one(&self.pool).await.map_err(backend)?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn summarize_leaks(&self) -> Result<Vec<LeakSummary>, StoreError> {
        let sql =
            format!("SELECT provider, COUNT(*), MIN(failed_at) FROM {LEAKS_TABLE} GROUP BY provider ORDER BY provider");
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(&sql).fetch_all(&self.pool).await.map_err(backend)?;
        Ok(summaries(rows))
    }

    async fn claim_leaks(&self, provider: &str, limit: usize, lease: Duration) -> Result<Vec<LeakEntry>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let now = sql_int(now_millis());
        let until = now.saturating_add(super::sql::lease_millis(lease));
        // One statement, so one write transaction: two processes claiming at
        // once are serialised by SQLite's write lock.
        let sql = format!(
            "UPDATE {LEAKS_TABLE} SET claimed_until = ?1, claim = claim + 1 WHERE id IN (SELECT id FROM {LEAKS_TABLE} \
             WHERE provider = ?2 AND (claimed_until IS NULL OR claimed_until <= ?3) ORDER BY id LIMIT ?4) \
             RETURNING {LEAK_COLUMNS}"
        );
        let rows = sqlx::query(&sql)
            .bind(until)
            .bind(provider)
            .bind(now)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        let mut claimed = rows.iter().map(leak_from_row).collect::<Result<Vec<_>, _>>()?;
        claimed.sort_by_key(|(id, _)| *id);
        Ok(claimed.into_iter().map(|(_, entry)| entry).collect())
    }

    async fn resolve_leak(&self, entry: &LeakEntry) -> Result<Held, StoreError> {
        let delete = format!(
            "DELETE FROM {LEAKS_TABLE} WHERE provider = ?1 AND provider_sandbox_id = ?2 AND {FENCE} RETURNING sandbox_key"
        );
        // The entry goes, and the registry notes the sandbox resolved now,
        // in one transaction: a sweep spares what was resolved within its
        // grace, so a lagging listing cannot get a sandbox this resolve just
        // confirmed destroyed destroyed again (retryLeaks writes no audit
        // row), and it leaves the lookup queue (known gone). A row it creates
        // counts as seen at 0: never within a registry retention.
        let register = format!(
            "INSERT INTO {REGISTRY_TABLE} (provider, provider_sandbox_id, sandbox_key, first_seen, last_seen, resolved_at) \
             VALUES (?1, ?2, ?3, 0, 0, {SQLITE_NOW_MILLIS}) ON CONFLICT (provider, provider_sandbox_id) \
             DO UPDATE SET resolved_at = excluded.resolved_at, lookup_at = NULL"
        );
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(backend)?;
        let gone: Vec<String> = sqlx::query_scalar(&delete)
            .bind(&entry.provider)
            .bind(&entry.provider_sandbox_id)
            .bind(entry.claim.map(sql_int))
            .fetch_all(&mut *tx)
            .await
            .map_err(backend)?;
        for key in &gone {
            let query = sqlx::query(&register).bind(&entry.provider).bind(&entry.provider_sandbox_id).bind(key);
            query.execute(&mut *tx).await.map_err(backend)?;
        }
        tx.commit().await.map_err(backend)?;
        Ok(held(entry, gone.len() as u64))
    }

    async fn record_retry_failure(&self, entry: &LeakEntry, message: &str, failed_at: u64) -> Result<Held, StoreError> {
        let sql = format!(
            "UPDATE {LEAKS_TABLE} SET attempts = attempts + 1, last_error = ?4, failed_at = ?5, claimed_until = NULL \
             WHERE provider = ?1 AND provider_sandbox_id = ?2 AND {FENCE}"
        );
        let done = sqlx::query(&sql)
            .bind(&entry.provider)
            .bind(&entry.provider_sandbox_id)
            .bind(entry.claim.map(sql_int))
            .bind(ledger_text(message))
            .bind(sql_int(failed_at))
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(held(entry, done.rows_affected()))
    }
}

#[async_trait]
impl FleetStore for SqliteSandboxInstanceStore {
    async fn list_stale(&self, older_than: u64, limit: usize) -> Result<Vec<SandboxInstanceRecord>, StoreError> {
        let sql = format!(
            "SELECT {RECORD_COLUMNS} FROM {INSTANCES_TABLE} WHERE updated_at < ?1 \
             ORDER BY updated_at, sandbox_key LIMIT ?2"
        );
        let rows = sqlx::query(&sql)
            .bind(sql_int(older_than))
            .bind(sql_limit(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        rows.iter().map(record_from_row).collect()
    }

    async fn expire_idle(&self, key: &str, seen_updated_at: u64, leak: NewLeak) -> Result<bool, StoreError> {
        validate_leak(key, &leak)?;
        let (pool, owned_key) = (self.pool.clone(), key.to_owned());
        self.order
            .run(key, async move {
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(backend)?;
                let delete = format!("DELETE FROM {INSTANCES_TABLE} WHERE sandbox_key = ?1 AND updated_at = ?2");
                let deleted = sqlx::query(&delete)
                    .bind(&owned_key)
                    .bind(sql_int(seen_updated_at))
                    .execute(&mut *tx)
                    .await
                    .map_err(backend)?;
                if deleted.rows_affected() == 0 {
                    // Touched or gone: nothing was written, so there is nothing to keep.
                    tx.rollback().await.map_err(backend)?;
                    return Ok(false);
                }
                let due = leak.failed_at;
                upsert_leak(&mut *tx, &leak, LeakReason::Idle, due).await?;
                tx.commit().await.map_err(backend)?;
                Ok(true)
            })
            .await
    }

    async fn sandbox_references(&self, provider: &str, destroyed_since: u64) -> Result<Vec<String>, StoreError> {
        if !storable_name(provider) {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT provider_sandbox_id FROM {INSTANCES_TABLE} WHERE provider = ?1 \
             UNION SELECT provider_sandbox_id FROM {LEAKS_TABLE} WHERE provider = ?1 \
             UNION SELECT provider_sandbox_id FROM {AUDIT_TABLE} WHERE at >= ?2 AND provider = ?1 AND result = ?3 \
             UNION SELECT provider_sandbox_id FROM {REGISTRY_TABLE} WHERE provider = ?1 AND resolved_at >= ?2 \
             ORDER BY 1"
        );
        sqlx::query_scalar(&sql)
            .bind(provider)
            .bind(sql_int(destroyed_since))
            .bind(AUDIT_DESTROYED)
            .fetch_all(&self.pool)
            .await
            .map_err(backend)
    }

    async fn registered_sandboxes(&self, provider: &str, since: u64) -> Result<Vec<String>, StoreError> {
        if !storable_name(provider) {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT provider_sandbox_id FROM {REGISTRY_TABLE} WHERE provider = ?1 AND last_seen >= ?2 \
             UNION SELECT provider_sandbox_id FROM {INSTANCES_TABLE} WHERE provider = ?1 ORDER BY 1"
        );
        sqlx::query_scalar(&sql).bind(provider).bind(sql_int(since)).fetch_all(&self.pool).await.map_err(backend)
    }

    fn scoped_reads(&self) -> bool {
        true
    }

    async fn sweep_mark(&self, _provider: &str) -> Result<u64, StoreError> {
        let mark: i64 = sqlx::query_scalar(&SCOPED.sweep_mark).fetch_one(&self.pool).await.map_err(backend)?;
        Ok(u64::try_from(mark).unwrap_or(0))
    }

    async fn referenced_among(
        &self,
        provider: &str,
        ids: &[String],
        destroyed_since: u64,
        mark: u64,
    ) -> Result<Vec<String>, StoreError> {
        let asked = storable_ids(ids);
        if !storable_name(provider) || asked.is_empty() {
            return Ok(Vec::new());
        }
        let found = sqlx::query_scalar(&SCOPED.referenced_among)
            .bind(provider)
            .bind(serde_json::json!(asked).to_string())
            .bind(sql_int(destroyed_since))
            .bind(sql_int(mark))
            .bind(AUDIT_DESTROYED)
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        Ok(sorted_ids(found))
    }

    async fn registered_among(&self, provider: &str, ids: &[String], since: u64) -> Result<Vec<String>, StoreError> {
        let asked = storable_ids(ids);
        if !storable_name(provider) || asked.is_empty() {
            return Ok(Vec::new());
        }
        let found = sqlx::query_scalar(&SCOPED.registered_among)
            .bind(provider)
            .bind(serde_json::json!(asked).to_string())
            .bind(sql_int(since))
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        Ok(sorted_ids(found))
    }

    async fn lookup_candidates(&self, provider: &str, since: u64, limit: usize) -> Result<Vec<String>, StoreError> {
        if limit == 0 || !storable_name(provider) {
            return Ok(Vec::new());
        }
        let rows: Vec<(i64, String)> = sqlx::query_as(&SCOPED.lookup_candidates)
            .bind(provider)
            .bind(sql_int(since))
            .bind(sql_limit(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        self.candidates.remember(provider, &rows);
        Ok(rows.into_iter().map(|(_, id)| id).collect())
    }

    async fn lookup_checked(
        &self,
        provider: &str,
        gone: &[String],
        checked: &[String],
        now: u64,
    ) -> Result<(), StoreError> {
        let (gone, checked) = (storable_ids(gone), storable_ids(checked));
        if !storable_name(provider) || (gone.is_empty() && checked.is_empty()) {
            return Ok(());
        }
        let (gone, checked) = (self.candidates.take(provider, &gone), self.candidates.take(provider, &checked));
        let by_row = |sql: &'static Option<String>| sql.as_deref().expect("SQLite's write-back by rowid");
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(backend)?;
        if !gone.by_row.is_empty() {
            let query = sqlx::query(by_row(&SCOPED.lookup_gone_rows)).bind(provider);
            query
                .bind(serde_json::json!(gone.rowids).to_string())
                .bind(serde_json::json!(gone.by_row).to_string())
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
        }
        if !gone.by_id.is_empty() {
            let query = sqlx::query(&SCOPED.lookup_gone).bind(provider).bind(serde_json::json!(gone.by_id).to_string());
            query.execute(&mut *tx).await.map_err(backend)?;
        }
        if !checked.by_row.is_empty() {
            let query = sqlx::query(by_row(&SCOPED.lookup_checked_rows)).bind(provider);
            let query = query
                .bind(serde_json::json!(checked.rowids).to_string())
                .bind(serde_json::json!(checked.by_row).to_string());
            query.bind(sql_int(now)).execute(&mut *tx).await.map_err(backend)?;
        }
        if !checked.by_id.is_empty() {
            let query =
                sqlx::query(&SCOPED.lookup_checked).bind(provider).bind(serde_json::json!(checked.by_id).to_string());
            query.bind(sql_int(now)).execute(&mut *tx).await.map_err(backend)?;
        }
        tx.commit().await.map_err(backend)
    }

    async fn record_leak(&self, leak: NewLeak, reason: LeakReason, next_attempt_at: u64) -> Result<(), StoreError> {
        validate_leak(&leak.key, &leak)?;
        upsert_leak(&self.pool, &leak, reason, next_attempt_at).await
    }

    async fn due_leaks(
        &self,
        provider: &str,
        limit: usize,
        lease_ms: Option<u64>,
        now: u64,
    ) -> Result<Vec<DueLeak>, StoreError> {
        if limit == 0 || !storable_name(provider) {
            return Ok(Vec::new());
        }
        let due = format!(
            "FROM {LEAKS_TABLE} WHERE provider = ?1 AND next_attempt_at <= ?2 \
             AND (claimed_until IS NULL OR claimed_until <= ?2) ORDER BY id LIMIT ?3"
        );
        let rows = match lease_ms {
            // One statement, so one write transaction: two processes claiming
            // at once are serialised by SQLite's write lock.
            Some(lease_ms) => {
                let sql = format!(
                    "UPDATE {LEAKS_TABLE} SET claimed_until = ?4, claim = claim + 1 WHERE id IN (SELECT id {due}) \
                     RETURNING {DUE_COLUMNS}"
                );
                sqlx::query(&sql)
                    .bind(provider)
                    .bind(sql_int(now))
                    .bind(sql_limit(limit))
                    .bind(sql_int(lease_end(now, lease_ms)))
                    .fetch_all(&self.pool)
                    .await
            }
            None => {
                let sql = format!("SELECT {DUE_COLUMNS} {due}");
                sqlx::query(&sql).bind(provider).bind(sql_int(now)).bind(sql_limit(limit)).fetch_all(&self.pool).await
            }
        }
        .map_err(backend)?;
        due_in_order(&rows)
    }

    async fn defer_leak(
        &self,
        entry: &LeakEntry,
        message: &str,
        failed_at: u64,
        next_attempt_at: u64,
    ) -> Result<Held, StoreError> {
        let sql = format!(
            "UPDATE {LEAKS_TABLE} SET attempts = attempts + 1, last_error = ?4, failed_at = ?5, \
             next_attempt_at = ?6, claimed_until = NULL WHERE provider = ?1 AND provider_sandbox_id = ?2 AND {FENCE}"
        );
        let done = sqlx::query(&sql)
            .bind(&entry.provider)
            .bind(&entry.provider_sandbox_id)
            .bind(entry.claim.map(sql_int))
            .bind(ledger_text(message))
            .bind(sql_int(failed_at))
            .bind(sql_int(next_attempt_at))
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(held(entry, done.rows_affected()))
    }

    async fn claim_sweep(&self, provider: &str, holder: &str, lease_ms: u64, now: u64) -> Result<bool, StoreError> {
        validate_name("provider", provider)?;
        validate_name("holder", holder)?;
        // An upsert whose update only runs for the same holder or an expired
        // lease: one statement, so one write transaction.
        let sql = format!(
            "INSERT INTO {SWEEPS_TABLE} (provider, holder, until) VALUES (?1, ?2, ?3) \
             ON CONFLICT (provider) DO UPDATE SET holder = excluded.holder, until = excluded.until \
             WHERE {SWEEPS_TABLE}.holder = excluded.holder OR {SWEEPS_TABLE}.until <= ?4"
        );
        let done = sqlx::query(&sql)
            .bind(provider)
            .bind(holder)
            .bind(sql_int(lease_end(now, lease_ms)))
            .bind(sql_int(now))
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(done.rows_affected() == 1)
    }

    async fn release_sweep(&self, provider: &str, holder: &str) -> Result<(), StoreError> {
        if !storable_name(provider) || holder.contains('\0') {
            return Ok(());
        }
        let sql = format!("DELETE FROM {SWEEPS_TABLE} WHERE provider = ?1 AND holder = ?2");
        sqlx::query(&sql).bind(provider).bind(holder).execute(&self.pool).await.map_err(backend)?;
        Ok(())
    }

    async fn prune(&self, provider: &str, registry_before: u64, audit_before: u64) -> Result<(), StoreError> {
        if !storable_name(provider) {
            return Ok(());
        }
        // In batches, each its own transaction, so no write waits behind a
        // long prune; served by the registry's (provider, last_seen) index
        // and the audit's (provider, at) index.
        let batch = sql_limit(PRUNE_BATCH);
        let (registry, audit) = (&SCOPED.prune_registry, &SCOPED.prune_audit);
        prune_in_batches(PRUNING, || {
            let query = sqlx::query(registry).bind(provider).bind(sql_int(registry_before));
            own_transaction(&self.pool, query.bind(sql_int(audit_before)).bind(batch))
        })
        .await?;
        prune_in_batches(PRUNING, || {
            own_transaction(&self.pool, sqlx::query(audit).bind(provider).bind(sql_int(audit_before)).bind(batch))
        })
        .await
    }

    async fn append_audit(&self, entries: &[AuditEntry]) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let sql = format!("INSERT INTO {AUDIT_TABLE} ({AUDIT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(backend)?;
        for entry in entries {
            let text = AuditText::of(entry);
            sqlx::query(&sql)
                .bind(sql_int(entry.at))
                .bind(text.host)
                .bind(text.provider)
                .bind(text.provider_sandbox_id)
                .bind(text.key)
                .bind(text.reason)
                .bind(text.result)
                .bind(text.error)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
            if entry.result == AUDIT_DESTROYED && storable_name(&entry.provider) {
                // A confirmed destroy: known gone, off the lookup queue.
                let query = sqlx::query(&SCOPED.unqueue_destroyed).bind(&entry.provider);
                query.bind(&entry.provider_sandbox_id).execute(&mut *tx).await.map_err(backend)?;
            }
        }
        tx.commit().await.map_err(backend)
    }

    async fn list_audit(&self, since: Option<u64>, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        let sql = format!("SELECT {AUDIT_COLUMNS} FROM {AUDIT_TABLE} WHERE at >= ?1 ORDER BY id LIMIT ?2");
        let rows = sqlx::query(&sql)
            .bind(sql_int(since.unwrap_or(0)))
            .bind(sql_limit(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        rows.iter().map(audit_from_row).collect()
    }

    async fn scheduled_leaks(&self) -> Result<Vec<ScheduledLeak>, StoreError> {
        let sql = format!("SELECT {DUE_COLUMNS} FROM {LEAKS_TABLE} ORDER BY id");
        let rows = sqlx::query(&sql).fetch_all(&self.pool).await.map_err(backend)?;
        rows.iter().map(scheduled_from_row).collect()
    }

    async fn facts(&self) -> Result<StoreFacts, StoreError> {
        let sql = format!(
            "SELECT (SELECT COALESCE(MAX(version), 0) FROM {SCHEMA_VERSION_TABLE}), \
             (SELECT COUNT(*) FROM {INSTANCES_TABLE}), (SELECT MAX(at) FROM {AUDIT_TABLE})"
        );
        let (schema_version, records, last): (i64, i64, Option<i64>) =
            sqlx::query_as(&sql).fetch_one(&self.pool).await.map_err(backend)?;
        Ok(StoreFacts {
            schema_version,
            records: u64::try_from(records).unwrap_or(0),
            last_audit_at: last.and_then(|at| u64::try_from(at).ok()),
        })
    }
}
