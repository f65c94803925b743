//! What the SQL stores share: opening errors, migrations, row shapes and
//! the conversions between SQL values and the contract's types.

use std::path::PathBuf;

use crate::contract::errors::StoreError;
use crate::model::fleet::{AuditEntry, DueLeak, LeakReason};
use crate::model::ledger::{LeakEntry, NewLeak};
use crate::model::SandboxInstanceRecord;

/// Why a store could not be opened or connected.
#[derive(Debug, thiserror::Error)]
pub enum StoreOpenError {
    /// An option was refused before anything was touched; `field` is its wire
    /// (camelCase) name so every binding reports the same one.
    #[error("invalid store option `{field}`: {reason}")]
    InvalidOption { field: &'static str, reason: String },
    /// The database could not be reached or opened.
    #[error("could not open the instance store: {0}")]
    Connect(#[source] sqlx::Error),
    /// Applying the embedded migrations failed.
    #[error("instance store migration failed: {0}")]
    Migrate(#[source] sqlx::Error),
    /// The database was migrated by a newer version of this library.
    #[error("instance store schema is at version {found}, newer than the {supported} this library knows")]
    SchemaTooNew { found: i64, supported: i64 },
    /// The SQLite file holds another application's tables and none of ours.
    /// Refused before anything was written: adding our tables (and switching
    /// the file to WAL) would change a database we were never given.
    #[error(
        "refusing to use `{}` as an instance store: it holds another application's tables ({}) and none of \
         sandbox-reclaim's; the file was left unchanged",
        .path.display(),
        .tables.join(", ")
    )]
    ForeignDatabase { path: PathBuf, tables: Vec<String> },
    /// A table with one of our names exists, but no schema version of ours
    /// vouches for it (or the version table itself is malformed). Refused
    /// before anything was written.
    #[error(
        "refusing to use `{}` as an instance store: table `{table}` is not one sandbox-reclaim created ({reason}); \
         the file was left unchanged",
        .path.display()
    )]
    IncompatibleSchema { path: PathBuf, table: &'static str, reason: String },
}

/// Why `maxConnections` was refused: a pool holds 1 to `u32::MAX` connections.
pub(crate) const MAX_CONNECTIONS_RANGE: &str = "must be a whole number between 1 and 4294967295";

/// One embedded migration: its version and its SQL (statements separated by
/// `;` at line ends; no statement contains one elsewhere).
pub(crate) struct Migration {
    pub version: i64,
    pub sql: &'static str,
}

impl Migration {
    /// The migration's statements, with `{name}` placeholders filled in.
    pub(crate) fn statements(&self, names: &[(&str, &str)]) -> Vec<String> {
        let mut sql = self.sql.to_owned();
        for (placeholder, value) in names {
            sql = sql.replace(placeholder, value);
        }
        sql.split(";\n").map(strip_comments).filter(|statement| !statement.is_empty()).collect()
    }
}

fn strip_comments(statement: &str) -> String {
    let lines = statement.lines().filter(|line| !line.trim_start().starts_with("--"));
    lines.collect::<Vec<_>>().join("\n").trim().to_owned()
}

/// Whether `key` could be stored at all; if not, no record has it.
pub(crate) fn storable_key(key: &str) -> bool {
    crate::stores::checks::validate_key(key).is_ok()
}

/// A backend error as the store contract's error.
pub(crate) fn backend(error: sqlx::Error) -> StoreError {
    StoreError::backend(error)
}

/// Text a ledger must keep even though it came from a provider's error or a
/// run record: PostgreSQL cannot store NUL in `TEXT`, and a leak must never be
/// lost over one character, so NUL becomes U+FFFD in both SQL stores.
pub(crate) fn ledger_text(text: &str) -> String {
    text.replace('\0', "\u{FFFD}")
}

/// The columns of a [`SandboxInstanceRecord`] as SQL reads them back.
#[derive(sqlx::FromRow)]
pub(crate) struct RecordRow {
    #[sqlx(rename = "sandbox_key")]
    pub key: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub latest_snapshot_id: Option<String>,
    pub thread_id: String,
    pub latest_run_id: Option<String>,
    pub updated_at: i64,
}

impl RecordRow {
    pub(crate) fn into_record(self) -> Result<SandboxInstanceRecord, StoreError> {
        Ok(SandboxInstanceRecord {
            key: self.key,
            provider: self.provider,
            provider_sandbox_id: self.provider_sandbox_id,
            latest_snapshot_id: self.latest_snapshot_id,
            thread_id: self.thread_id,
            latest_run_id: self.latest_run_id,
            updated_at: non_negative("updated_at", self.updated_at)?,
        })
    }
}

/// The columns of a [`LeakEntry`] (and its row id) as SQL reads them back.
#[derive(sqlx::FromRow)]
pub(crate) struct LeakRow {
    pub id: i64,
    #[sqlx(rename = "sandbox_key")]
    pub key: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub run_id: String,
    pub last_error: String,
    pub failed_at: i64,
    pub attempts: i64,
    /// The claim generation; it names a claim only while `claimed_until` is set.
    pub claim: i64,
    pub claimed_until: Option<i64>,
}

/// Reads an instance row of either database.
pub(crate) fn record_from_row<'r, R: sqlx::Row>(row: &'r R) -> Result<SandboxInstanceRecord, StoreError>
where
    RecordRow: sqlx::FromRow<'r, R>,
{
    <RecordRow as sqlx::FromRow<R>>::from_row(row).map_err(backend)?.into_record()
}

/// Reads a leak row of either database, with its row id.
pub(crate) fn leak_from_row<'r, R: sqlx::Row>(row: &'r R) -> Result<(i64, LeakEntry), StoreError>
where
    LeakRow: sqlx::FromRow<'r, R>,
{
    let leak = <LeakRow as sqlx::FromRow<R>>::from_row(row).map_err(backend)?;
    Ok((leak.id, leak.into_entry()?))
}

impl LeakRow {
    pub(crate) fn into_entry(self) -> Result<LeakEntry, StoreError> {
        let attempts = non_negative("attempts", self.attempts)?;
        Ok(LeakEntry {
            key: self.key,
            provider: self.provider,
            provider_sandbox_id: self.provider_sandbox_id,
            run_id: self.run_id,
            last_error: self.last_error,
            failed_at: non_negative("failed_at", self.failed_at)?,
            attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
            claim: match self.claimed_until {
                Some(_) => Some(non_negative("claim", self.claim)?),
                None => None,
            },
        })
    }
}

/// A column the schema's CHECK keeps non-negative, unless someone wrote the
/// table by hand.
fn non_negative(column: &'static str, value: i64) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::backend(format!("column `{column}` holds a negative value: {value}")))
}

/// Whether a write about `entry` held its claim, from the rows it changed:
/// an entry that was only listed carries no claim, and its write is not fenced.
pub(crate) fn held(entry: &LeakEntry, rows: u64) -> crate::model::ledger::Held {
    entry.claim.is_none() || rows > 0
}

/// A `u64` the store contract caps at 2^53−1 (validated), as SQL's `BIGINT`.
pub(crate) fn sql_int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A claim's lease in milliseconds, capped (at ~35,000 years) so adding it to
/// a timestamp cannot overflow `BIGINT`.
pub(crate) fn lease_millis(lease: std::time::Duration) -> i64 {
    i64::try_from(lease.as_millis()).unwrap_or(i64::MAX).min(1 << 50)
}

/// Checks what a ledger write needs before anything is written: the key and
/// the sandbox identity must be storable.
pub(crate) fn validate_leak(key: &str, leak: &NewLeak) -> Result<(), StoreError> {
    crate::stores::checks::validate_leak(key, leak)
}

/// Whether a provider name (or sandbox id) could be stored at all; if not, no
/// row has it, so a lookup by it finds nothing.
pub(crate) fn storable_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('\0')
}

/// A `usize` limit as SQL's `LIMIT`.
pub(crate) fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// The columns of a [`DueLeak`] as SQL reads them back: a leak row plus its
/// fleet bookkeeping.
#[derive(sqlx::FromRow)]
pub(crate) struct DueRow {
    #[sqlx(flatten)]
    pub leak: LeakRow,
    pub reason: String,
    pub next_attempt_at: i64,
}

/// Reads a due-leak row of either database, with its row id.
pub(crate) fn due_from_row<'r, R: sqlx::Row>(row: &'r R) -> Result<(i64, DueLeak), StoreError>
where
    DueRow: sqlx::FromRow<'r, R>,
{
    let due = <DueRow as sqlx::FromRow<R>>::from_row(row).map_err(backend)?;
    let id = due.leak.id;
    let entry = due.leak.into_entry()?;
    let reason = LeakReason::parse(&due.reason);
    Ok((id, DueLeak { entry, reason, next_attempt_at: non_negative("next_attempt_at", due.next_attempt_at)? }))
}

/// A leak row with its claim, for [`FleetStore::scheduled_leaks`].
pub(crate) fn scheduled_from_row<'r, R: sqlx::Row>(row: &'r R) -> Result<crate::model::fleet::ScheduledLeak, StoreError>
where
    DueRow: sqlx::FromRow<'r, R>,
    Option<i64>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    &'r str: sqlx::ColumnIndex<R>,
{
    let (_, mut due) = due_from_row(row)?;
    let claimed_until: Option<i64> = row.try_get("claimed_until").map_err(backend)?;
    let claimed_until = claimed_until.map(|until| non_negative("claimed_until", until)).transpose()?;
    // A listing hands out no claim to write under.
    due.entry.claim = None;
    Ok(crate::model::fleet::ScheduledLeak { due, claimed_until })
}

/// Due leaks in claim order (row id), whatever order `RETURNING` gave them.
pub(crate) fn due_in_order<R: sqlx::Row>(rows: &[R]) -> Result<Vec<DueLeak>, StoreError>
where
    for<'r> DueRow: sqlx::FromRow<'r, R>,
{
    let mut due = rows.iter().map(due_from_row).collect::<Result<Vec<_>, _>>()?;
    due.sort_by_key(|(id, _)| *id);
    Ok(due.into_iter().map(|(_, leak)| leak).collect())
}

/// The columns of an [`AuditEntry`] as SQL reads them back.
#[derive(sqlx::FromRow)]
pub(crate) struct AuditRow {
    pub at: i64,
    pub host: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    #[sqlx(rename = "sandbox_key")]
    pub key: Option<String>,
    pub reason: String,
    pub result: String,
    pub error: Option<String>,
}

/// The audit table's columns, in [`AuditRow`]'s order.
pub(crate) const AUDIT_COLUMNS: &str = "at, host, provider, provider_sandbox_id, sandbox_key, reason, result, error";

/// Reads an audit row of either database.
pub(crate) fn audit_from_row<'r, R: sqlx::Row>(row: &'r R) -> Result<AuditEntry, StoreError>
where
    AuditRow: sqlx::FromRow<'r, R>,
{
    let audit = <AuditRow as sqlx::FromRow<R>>::from_row(row).map_err(backend)?;
    Ok(AuditEntry {
        at: non_negative("at", audit.at)?,
        host: audit.host,
        provider: audit.provider,
        provider_sandbox_id: audit.provider_sandbox_id,
        key: audit.key,
        reason: audit.reason,
        result: audit.result,
        error: audit.error,
    })
}

/// An audit entry's text as the SQL stores keep it (no NUL; see [`ledger_text`]).
pub(crate) struct AuditText {
    pub host: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub key: Option<String>,
    pub reason: String,
    pub result: String,
    pub error: Option<String>,
}

impl AuditText {
    pub(crate) fn of(entry: &AuditEntry) -> Self {
        Self {
            host: ledger_text(&entry.host),
            provider: ledger_text(&entry.provider),
            provider_sandbox_id: ledger_text(&entry.provider_sandbox_id),
            key: entry.key.as_deref().map(ledger_text),
            reason: ledger_text(&entry.reason),
            result: ledger_text(&entry.result),
            error: entry.error.as_deref().map(ledger_text),
        }
    }
}

/// `(provider, count, oldest failure)` rows of a grouping query as summaries.
pub(crate) fn summaries(rows: Vec<(String, i64, i64)>) -> Vec<crate::model::ledger::LeakSummary> {
    rows.into_iter()
        .map(|(provider, count, oldest)| crate::model::ledger::LeakSummary {
            provider,
            count: u64::try_from(count).unwrap_or(0),
            oldest_failed_at: u64::try_from(oldest).unwrap_or(0),
        })
        .collect()
}

/// How a store prunes one table: rows a batch (each batch its own short
/// transaction), batches a call (so a pass's prune stays bounded however far
/// behind the store is; the next pass's prune takes the rest), and whether
/// it pauses between batches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PruneBatches {
    pub rows: usize,
    pub most: usize,
    /// Pause after each batch as long as it took, so the prune holds the
    /// write lock at most half the time (SQLite: a writer of another process
    /// waiting in its busy handler, which retries after 1, 2, 5, 10... ms,
    /// finds the lock free within about a batch; without the pause the prune
    /// took it back first every time and upserts waited seconds).
    pub pause: bool,
}

/// The SQL of a store's scoped reads and bounded writes, exactly as it issues
/// them (for plan checks). Parameters, in order: `referenced_among`
/// (provider, ids, destroyed_since, mark, the audit's destroyed result),
/// `registered_among` (provider, ids, since), `lookup_candidates` (provider,
/// since, limit), `lookup_gone` (provider, ids), `lookup_checked` (provider,
/// ids, now), `unqueue_destroyed` (provider, id), `prune_registry`
/// (provider, registry_before, audit_before, batch), `prune_audit`
/// (provider, audit_before, batch). `ids` is a JSON array on SQLite, a
/// `text[]` on PostgreSQL. SQLite's write-back also goes by rowid, for the
/// ids its candidates read handed out: `lookup_gone_rows` (provider, rowids,
/// ids), `lookup_checked_rows` (provider, rowids, ids, now); `None` elsewhere.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct ScopedSql {
    pub sweep_mark: String,
    pub referenced_among: String,
    pub registered_among: String,
    pub lookup_candidates: String,
    pub lookup_gone: String,
    pub lookup_checked: String,
    pub lookup_gone_rows: Option<String>,
    pub lookup_checked_rows: Option<String>,
    pub unqueue_destroyed: String,
    pub prune_registry: String,
    pub prune_audit: String,
}

/// The asked ids a store could hold (no NUL, not empty): no row has any
/// other, and PostgreSQL cannot even bind one with NUL.
pub(crate) fn storable_ids(ids: &[String]) -> Vec<&str> {
    ids.iter().map(String::as_str).filter(|id| storable_name(id)).collect()
}

/// Sorted (byte order, as every store answers), each once.
pub(crate) fn sorted_ids(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids.dedup();
    ids
}

/// Runs `batch` (which deletes at most `how.rows` rows and says how many it
/// did) until one deletes fewer, or `how.most` ran.
pub(crate) async fn prune_in_batches<F, Fut>(how: PruneBatches, mut batch: F) -> Result<(), StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<u64, StoreError>>,
{
    for _ in 0..how.most {
        let started = std::time::Instant::now();
        if batch().await? < how.rows as u64 {
            break;
        }
        if how.pause {
            tokio::time::sleep(started.elapsed().max(std::time::Duration::from_millis(1))).await;
        }
    }
    Ok(())
}
