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

use super::coalesce::Coalesce;
use super::ordered::KeyedOrder;
use super::sql::PruneBatches;
pub use super::sql::ScopedSql;
use super::sql::{
    audit_from_row, backend, due_in_order, held, leak_from_row, ledger_text, prune_in_batches, record_from_row,
    scheduled_from_row, sorted_ids, sql_int, sql_limit, storable_ids, storable_key, storable_name, summaries,
    validate_leak, AuditText, Migration, StoreOpenError, AUDIT_COLUMNS,
};

/// Rows one prune batch deletes: a few milliseconds of row locks (a
/// PostgreSQL delete blocks no other row's writer).
pub const PRUNE_BATCH: usize = 5_000;
/// Batches of one table a prune call runs at most (500,000 rows).
pub const PRUNE_MAX_BATCHES: usize = 100;
const PRUNING: PruneBatches = PruneBatches { rows: PRUNE_BATCH, most: PRUNE_MAX_BATCHES, pause: false };
use crate::contract::errors::StoreError;
use crate::contract::FleetStore;
use crate::contract::LeakLedger;
use crate::model::fleet::{AuditEntry, DueLeak, LeakReason, ScheduledLeak, StoreFacts, AUDIT_DESTROYED};
use crate::model::ledger::{Held, LeakEntry, LeakSummary, NewLeak};
use crate::model::SandboxInstanceRecord;
use crate::stores::checks::{lease_end, validate_name};

const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, sql: include_str!("migrations/postgres/0001_instances_and_leaks.sql") },
    Migration { version: 2, sql: include_str!("migrations/postgres/0002_fleet.sql") },
    Migration { version: 3, sql: include_str!("migrations/postgres/0003_registry.sql") },
    Migration { version: 4, sql: include_str!("migrations/postgres/0004_claim_generation.sql") },
    Migration { version: 5, sql: include_str!("migrations/postgres/0005_scoped_reads.sql") },
];

const RECORD_COLUMNS: &str =
    "sandbox_key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at";
const LEAK_COLUMNS: &str =
    "id, sandbox_key, provider, provider_sandbox_id, run_id, last_error, failed_at, attempts, claim, claimed_until";
const DUE_COLUMNS: &str = "id, sandbox_key, provider, provider_sandbox_id, run_id, last_error, failed_at, attempts, \
     claim, claimed_until, reason, next_attempt_at";
/// A claimed entry's write lands only under its own claim (`param`: its
/// generation; NULL for an entry that was only listed: unfenced).
fn fence(param: &str) -> String {
    format!("({param}::bigint IS NULL OR (claim = {param}::bigint AND claimed_until IS NOT NULL))")
}

/// The indexed identity of a sweep's provider, from parameter `$1`.
const PROVIDER_HASH: &str = "sha256(convert_to($1::text, 'UTF8'))";
/// The indexed identity of a key (see the migration for why it is a hash).
const KEY_HASH: &str = "sha256(convert_to($1::text, 'UTF8'))";
/// Epoch milliseconds on the database clock, which every host shares.
const DB_NOW_MILLIS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/// The indexed identity of a leaked sandbox, from the `provider` and
/// `provider_sandbox_id` parameters (length-prefixed, so it is unambiguous).
fn sandbox_hash(provider: &str, provider_sandbox_id: &str) -> String {
    format!("sha256(convert_to(length({provider}::text)::text || ':' || {provider}::text || {provider_sandbox_id}::text, 'UTF8'))")
}

/// The same identity computed from the columns of row `alias` of the
/// records or the audit by the schema's hash function (`hash_fn`): exactly
/// the expression their version-5 indexes hold, so a lookup by it is an
/// index lookup.
fn row_hash(hash_fn: &str, alias: &str) -> String {
    format!("{hash_fn}({alias}.provider, {alias}.provider_sandbox_id)")
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
    /// Table of the orphan sweep leases (schema version 2). `None`: named
    /// after `leaks_table` (see [`PostgresOptions::sweeps_table_name`]).
    pub sweeps_table: Option<String>,
    /// Table of the fleet passes' audit log (schema version 2). `None`: named
    /// after `leaks_table` (see [`PostgresOptions::audit_table_name`]).
    pub audit_table: Option<String>,
    /// Most connections this handle's pool opens.
    pub max_connections: u32,
    /// How long a call waits for a free pooled connection.
    pub acquire_timeout: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        // The defaults are the hosts' declared ones (`options::stores`).
        use crate::options::stores::postgres::{
            INSTANCES_TABLE, LEAKS_TABLE, MAX_CONNECTIONS, SCHEMA, SCHEMA_VERSION_TABLE,
        };
        Self {
            schema: SCHEMA.default_text().to_owned(),
            instances_table: INSTANCES_TABLE.default_text().to_owned(),
            leaks_table: LEAKS_TABLE.default_text().to_owned(),
            schema_version_table: SCHEMA_VERSION_TABLE.default_text().to_owned(),
            sweeps_table: None,
            audit_table: None,
            max_connections: MAX_CONNECTIONS.default_count(),
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
        let (sweeps, audit, registry) = (self.sweeps_table_name(), self.audit_table_name(), self.registry_table_name());
        for (field, name) in [("sweepsTable", &sweeps), ("auditTable", &audit)] {
            validate_identifier(field, name)?;
        }
        let others = [&self.instances_table, &self.leaks_table, &self.schema_version_table];
        for (field, name) in [("sweepsTable", &sweeps), ("auditTable", &audit), ("leaksTable", &registry)] {
            let clash = match field {
                "auditTable" => *name == sweeps,
                "leaksTable" => *name == sweeps || *name == audit,
                _ => false,
            };
            if others.contains(&name) || clash {
                return Err(StoreOpenError::InvalidOption {
                    field,
                    reason: format!(
                        "the {field} `{name}` (named after leaksTable unless set) collides with another table; \
                         every table of the store needs its own name"
                    ),
                });
            }
        }
        if self.max_connections == 0 {
            return Err(StoreOpenError::InvalidOption {
                field: "maxConnections",
                reason: super::sql::MAX_CONNECTIONS_RANGE.to_owned(),
            });
        }
        Ok(())
    }
}

impl PostgresOptions {
    /// The sweeps table: `sweeps_table`, or else `leaks_table` with its
    /// `_leaks` suffix replaced by `_sweeps` (`sandbox_leaks` →
    /// `sandbox_sweeps`), or `_sweeps` appended when it has none (`ledger` →
    /// `ledger_sweeps`), the stem shortened so the name fits 63 bytes.
    pub fn sweeps_table_name(&self) -> String {
        self.sweeps_table.clone().unwrap_or_else(|| self.named_after_leaks("sweeps"))
    }

    /// The registry table (schema version 3), named after `leaks_table` as
    /// the sweeps table is (`sandbox_registry`).
    pub fn registry_table_name(&self) -> String {
        self.named_after_leaks("registry")
    }

    /// The audit table: `audit_table`, or else named after `leaks_table` as
    /// [`sweeps_table_name`](Self::sweeps_table_name) is (`sandbox_audit`).
    pub fn audit_table_name(&self) -> String {
        self.audit_table.clone().unwrap_or_else(|| self.named_after_leaks("audit"))
    }

    fn named_after_leaks(&self, what: &str) -> String {
        let leaks = self.leaks_table.as_str();
        let stem = leaks.strip_suffix("leaks").filter(|stem| stem.ends_with('_')).map(str::to_owned);
        let mut stem = stem.unwrap_or_else(|| format!("{leaks}_"));
        // Validated names are ASCII, so any byte length is a char boundary;
        // an invalid one is refused by `validate` whatever this returns.
        if stem.is_ascii() && stem.len() + what.len() > 63 {
            stem.truncate(63 - what.len());
        }
        stem + what
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
    /// `get` of many keys (`$1`: their `key_hash`es) in one statement.
    get_many: String,
    upsert: String,
    delete: String,
    /// `delete` of many keys (`$1`: their `key_hash`es) in one statement.
    delete_many: String,
    list_leaks: String,
    count_leaks: String,
    summarize_leaks: String,
    claim_leaks: String,
    resolve_leak: String,
    record_retry_failure: String,
    list_stale: String,
    expire_delete: String,
    upsert_leak: String,
    sandbox_references: String,
    registered_sandboxes: String,
    list_due: String,
    claim_due: String,
    defer_leak: String,
    claim_sweep: String,
    release_sweep: String,
    append_audit: String,
    list_audit: String,
    facts: String,
    scheduled: String,
    /// The scoped reads, the queue's writes and prune's batches.
    scoped: ScopedSql,
}

impl Queries {
    fn new(tables: &Tables) -> Self {
        let Tables { versions, instances, leaks, sweeps, audit, registry, .. } = tables;
        let leak_hash = sandbox_hash("$1", "$2");
        // Due by the caller's clock (`next_attempt_at` is its schedule);
        // claimed or not by the database's, the one clock of every lease here.
        let due = format!(
            "SELECT {DUE_COLUMNS} FROM {leaks} WHERE provider = $1::text AND next_attempt_at <= $2 \
             AND (claimed_until IS NULL OR claimed_until <= {DB_NOW_MILLIS}) ORDER BY id LIMIT $3"
        );
        let qualified = |columns: &str| columns.split(", ").map(|column| format!("leak.{column}")).collect::<Vec<_>>();
        Self {
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
            // `$1`: the keys' SHA-256 digests, hashed here ([`key_hashes`]).
            get_many: format!("SELECT {RECORD_COLUMNS} FROM {instances} WHERE key_hash = ANY($1::bytea[])"),
            delete_many: format!("DELETE FROM {instances} WHERE key_hash = ANY($1::bytea[])"),
            list_leaks: format!(
                "SELECT {LEAK_COLUMNS} FROM {leaks} WHERE $1::text IS NULL OR provider = $1::text ORDER BY id"
            ),
            count_leaks: format!("SELECT COUNT(*) FROM {leaks} WHERE $1::text IS NULL OR provider = $1::text"),
            // Ties in byte order (`COLLATE "C"`), as the other stores order them.
            summarize_leaks: format!(
                "SELECT provider, COUNT(*)::bigint, MIN(failed_at)::bigint FROM {leaks} \
                 GROUP BY provider ORDER BY provider COLLATE \"C\""
            ),
            // SKIP LOCKED passes over rows another host is claiming right now;
            // the lease keeps them from being claimed again once it commits.
            claim_leaks: format!(
                "WITH picked AS (SELECT id FROM {leaks} WHERE provider = $1::text \
                 AND (claimed_until IS NULL OR claimed_until <= {DB_NOW_MILLIS}) \
                 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED) \
                 UPDATE {leaks} AS leak SET claimed_until = {DB_NOW_MILLIS} + $3, claim = leak.claim + 1 FROM picked \
                 WHERE leak.id = picked.id RETURNING {}",
                qualified(LEAK_COLUMNS).join(", ")
            ),
            // The entry goes, and the registry notes the sandbox resolved
            // now, in one statement: a sweep spares what was resolved within
            // its grace, so a lagging listing cannot get a sandbox this
            // resolve just confirmed destroyed destroyed again (retryLeaks
            // writes no audit row), and it leaves the lookup queue (known
            // gone). A row it creates counts as seen at 0: never within a
            // registry retention.
            resolve_leak: format!(
                "WITH gone AS (DELETE FROM {leaks} WHERE sandbox_hash = {leak_hash} AND {} \
                 RETURNING sandbox_hash, provider, provider_sandbox_id, sandbox_key) \
                 INSERT INTO {registry} AS r \
                 (sandbox_hash, provider, provider_sandbox_id, sandbox_key, first_seen, last_seen, resolved_at) \
                 SELECT sandbox_hash, provider, provider_sandbox_id, sandbox_key, 0, 0, {DB_NOW_MILLIS} FROM gone \
                 ON CONFLICT (sandbox_hash) DO UPDATE SET resolved_at = excluded.resolved_at, lookup_at = NULL",
                fence("$3")
            ),
            record_retry_failure: format!(
                "UPDATE {leaks} SET attempts = attempts + 1, last_error = $3, failed_at = $4, claimed_until = NULL \
                 WHERE sandbox_hash = {leak_hash} AND {}",
                fence("$5")
            ),
            // Ties in byte order (`COLLATE "C"`), as the other stores order them.
            list_stale: format!(
                "SELECT {RECORD_COLUMNS} FROM {instances} WHERE updated_at < $1 \
                 ORDER BY updated_at, sandbox_key COLLATE \"C\" LIMIT $2"
            ),
            expire_delete: format!("DELETE FROM {instances} WHERE key_hash = {KEY_HASH} AND updated_at = $2"),
            // Records a leak (attempt 1) or bumps the entry for the same
            // sandbox, keeping its place and any claim on it.
            upsert_leak: format!(
                "INSERT INTO {leaks} AS leak \
                 (sandbox_hash, provider, provider_sandbox_id, sandbox_key, run_id, last_error, failed_at, attempts, \
                 reason, next_attempt_at) VALUES ({leak_hash}, $1, $2, $3, $4, $5, $6, 1, $7, $8) \
                 ON CONFLICT (sandbox_hash) DO UPDATE SET attempts = leak.attempts + 1, \
                 sandbox_key = EXCLUDED.sandbox_key, run_id = EXCLUDED.run_id, last_error = EXCLUDED.last_error, \
                 failed_at = EXCLUDED.failed_at, reason = EXCLUDED.reason, next_attempt_at = EXCLUDED.next_attempt_at"
            ),
            sandbox_references: format!(
                "SELECT provider_sandbox_id FROM {instances} WHERE provider = $1::text \
                 UNION SELECT provider_sandbox_id FROM {leaks} WHERE provider = $1::text \
                 UNION SELECT provider_sandbox_id FROM {audit} WHERE at >= $2 AND provider = $1::text AND result = $3 \
                 UNION SELECT provider_sandbox_id FROM {registry} WHERE provider = $1::text AND resolved_at >= $2 \
                 ORDER BY 1"
            ),
            registered_sandboxes: format!(
                "SELECT provider_sandbox_id FROM {registry} WHERE provider = $1::text AND last_seen >= $2 \
                 UNION SELECT provider_sandbox_id FROM {instances} WHERE provider = $1::text ORDER BY 1"
            ),
            list_due: due.clone(),
            // The due rows are locked as they are picked (SKIP LOCKED passes
            // over rows another pass is claiming right now), then claimed in
            // the same statement, so in one transaction.
            // The lease ends on the database's clock ($4 is its length): a
            // host whose clock runs ahead can neither take a live claim for
            // expired nor hand out one that outlives its holder's view of it.
            claim_due: format!(
                "WITH picked AS ({due} FOR UPDATE SKIP LOCKED) \
                 UPDATE {leaks} AS leak SET claimed_until = {DB_NOW_MILLIS} + $4, claim = leak.claim + 1 FROM picked \
                 WHERE leak.id = picked.id RETURNING {}",
                qualified(DUE_COLUMNS).join(", ")
            ),
            defer_leak: format!(
                "UPDATE {leaks} SET attempts = attempts + 1, last_error = $3, failed_at = $4, next_attempt_at = $5, \
                 claimed_until = NULL WHERE sandbox_hash = {leak_hash} AND {}",
                fence("$6")
            ),
            // The update only runs for the same holder or an expired lease;
            // a concurrent insert of the same provider waits for the first.
            // On the database's clock, like every lease here ($3 is its length).
            claim_sweep: format!(
                "INSERT INTO {sweeps} AS sweep (provider_hash, provider, holder, until) \
                 VALUES ({PROVIDER_HASH}, $1, $2, {DB_NOW_MILLIS} + $3) \
                 ON CONFLICT (provider_hash) DO UPDATE SET holder = EXCLUDED.holder, until = EXCLUDED.until \
                 WHERE sweep.holder = EXCLUDED.holder OR sweep.until <= {DB_NOW_MILLIS}"
            ),
            release_sweep: format!(
                "DELETE FROM {sweeps} WHERE provider_hash = {PROVIDER_HASH} AND provider = $1 AND holder = $2"
            ),
            append_audit: format!("INSERT INTO {audit} ({AUDIT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"),
            list_audit: format!("SELECT {AUDIT_COLUMNS} FROM {audit} WHERE at >= $1 ORDER BY id LIMIT $2"),
            scheduled: format!("SELECT {DUE_COLUMNS} FROM {leaks} ORDER BY id"),
            facts: format!(
                "SELECT (SELECT COALESCE(MAX(version), 0)::bigint FROM {versions}), \
                 (SELECT COUNT(*)::bigint FROM {instances}), (SELECT MAX(at)::bigint FROM {audit})"
            ),
            scoped: scoped_sql(tables),
        }
    }
}

/// The scoped reads' SQL. A listed id (`asked.id`) is found on an index of
/// each table: its hash, computed here with the indexes' own expression,
/// then its exact text (a digest alone is never trusted).
fn scoped_sql(tables: &Tables) -> ScopedSql {
    let Tables { instances, leaks, audit, registry, hash_fn, .. } = tables;
    let row_hash = |alias: &str| row_hash(hash_fn, alias);
    let asked = sandbox_hash("$1", "asked.id");
    let exact = |alias: &str| format!("{alias}.provider = $1::text AND {alias}.provider_sandbox_id = asked.id");
    let named = probe(instances, "i", &format!("{} = {asked} AND {}", row_hash("i"), exact("i")));
    let among = |conditions: String| format!("SELECT asked.id FROM unnest($2::text[]) AS asked(id) WHERE {conditions}");
    let queued = format!(
        "FROM unnest($2::text[]) AS asked(id) WHERE r.sandbox_hash = {asked} AND {} AND r.lookup_at IS NOT NULL",
        exact("r")
    );
    let in_ledger = probe(leaks, "l", &format!("l.sandbox_hash = {asked} AND {}", exact("l")));
    let audited = format!("{} = {asked} AND a.at >= $3 AND a.result = $5 AND {}", row_hash("a"), exact("a"));
    let marked =
        format!("r.sandbox_hash = {asked} AND {} AND (r.resolved_at >= $3 OR r.deleted_xid >= $4)", exact("r"));
    let seen = format!("r.sandbox_hash = {asked} AND {} AND r.last_seen >= $3", exact("r"));
    let renamed = format!(
        "{} = r.sandbox_hash AND i.provider = r.provider AND i.provider_sandbox_id = r.provider_sandbox_id",
        row_hash("i")
    );
    ScopedSql {
        // The oldest transaction still running (see migration 5).
        sweep_mark: "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint".to_owned(),
        referenced_among: among(format!(
            "{named} OR {in_ledger} OR {} OR {}",
            probe(audit, "a", &audited),
            probe(registry, "r", &marked)
        )),
        registered_among: among(format!("{named} OR {}", probe(registry, "r", &seen))),
        // The queue's index gives the order; a row a record or leak entry
        // names again is skipped (the triggers keep the queue, this read
        // does not trust it). Ties in byte order, as the other stores.
        lookup_candidates: format!(
            "SELECT r.provider_sandbox_id FROM {registry} AS r \
             WHERE r.provider = $1::text AND r.lookup_at IS NOT NULL AND r.last_seen >= $2 \
             AND NOT {} AND NOT {} ORDER BY r.lookup_at, r.provider_sandbox_id COLLATE \"C\" LIMIT $3",
            probe(instances, "i", &renamed),
            probe(leaks, "l", "l.sandbox_hash = r.sandbox_hash")
        ),
        lookup_gone: format!("UPDATE {registry} AS r SET lookup_at = NULL, resolved_at = {DB_NOW_MILLIS} {queued}"),
        lookup_checked: format!("UPDATE {registry} AS r SET lookup_at = $3 {queued}"),
        lookup_gone_rows: None,
        lookup_checked_rows: None,
        unqueue_destroyed: format!(
            "UPDATE {registry} SET lookup_at = NULL WHERE sandbox_hash = {} AND lookup_at IS NOT NULL",
            sandbox_hash("$1", "$2")
        ),
        // By primary key, a batch at a time: served by the registry's
        // (provider, last_seen) index and the audit's (provider, at) index.
        // A row's `resolved_at` counts like an audit row of its destroy (the
        // sweep spares both): kept as long as the audit keeps those.
        prune_registry: format!(
            "DELETE FROM {registry} WHERE sandbox_hash IN (SELECT sandbox_hash FROM {registry} \
             WHERE provider = $1::text AND last_seen < $2 AND (resolved_at IS NULL OR resolved_at < $3) LIMIT $4)"
        ),
        prune_audit: format!(
            "DELETE FROM {audit} WHERE id IN (SELECT id FROM {audit} WHERE provider = $1::text AND at < $2 LIMIT $3)"
        ),
    }
}

/// `EXISTS` of a row of `table` (as `alias`) meeting `condition`: one index
/// probe per outer row. `OFFSET 0` keeps PostgreSQL from turning it into a
/// hashed subplan or a hash (anti) join, which read the whole table (cheap
/// while it is small, but a cost that grows with the store, not the ids).
fn probe(table: &str, alias: &str, condition: &str) -> String {
    format!("EXISTS (SELECT 1 FROM {table} AS {alias} WHERE {condition} OFFSET 0)")
}

/// An instance store with a [`LeakLedger`] in PostgreSQL, for many hosts.
///
/// Point every host at the same URL and options; migrations run on connect
/// under an advisory lock, so hosts may start together.
#[derive(Debug, Clone)]
pub struct PostgresSandboxInstanceStore {
    pool: PgPool,
    queries: std::sync::Arc<Queries>,
    /// Writes to one key commit in the order they were issued ([`KeyedOrder`]).
    order: std::sync::Arc<KeyedOrder>,
    /// Reads and deletes of the reclaim path share statements under load ([`Coalesce`]).
    gets: std::sync::Arc<Coalesce<String, Result<Option<SandboxInstanceRecord>, StoreError>>>,
    deletes: std::sync::Arc<Coalesce<String, ()>>,
}

/// Statements of each kind (reads, deletes) a store runs at once before calls
/// start to share them. Two, measured: one more statement in flight costs the
/// database more than the batch it saves (make bench's PostgreSQL pass used
/// 2.5x less database CPU at two than with a statement per call, and ran
/// slower at four); never more than the pool, whose other connections serve
/// every other call.
fn batch_limit(max_connections: u32) -> usize {
    usize::try_from(max_connections).unwrap_or(2).clamp(1, 2)
}

/// How long a pooled connection may sit idle before it is checked (pinged)
/// again before use.
const PING_AFTER_IDLE: Duration = Duration::from_secs(1);

/// Most keys one shared statement carries.
const MAX_BATCH: usize = 256;

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
            // sqlx pings every connection it hands out: a round trip before
            // each statement, half of a busy pass's latency. A connection idle
            // long enough to have gone stale (a restarted server) is still
            // pinged first, and replaced if the ping fails.
            .test_before_acquire(false)
            .before_acquire(|connection, meta| {
                Box::pin(async move {
                    if meta.idle_for >= PING_AFTER_IDLE {
                        sqlx::Connection::ping(connection).await?;
                    }
                    Ok(true)
                })
            })
            .connect_with(connect)
            .await
            .map_err(StoreOpenError::Connect)?;
        let schema = quote(&options.schema);
        let qualified = |table: &str| format!("{schema}.{}", quote(table));
        let tables = Tables {
            versions: qualified(&options.schema_version_table),
            instances: qualified(&options.instances_table),
            leaks: qualified(&options.leaks_table),
            sweeps: qualified(&options.sweeps_table_name()),
            audit: qualified(&options.audit_table_name()),
            registry: qualified(&options.registry_table_name()),
            register_fn: qualified(&format!("{}_register", options.registry_table_name())),
            register_trigger: quote(&format!("{}_register", options.registry_table_name())),
            leak_fn: qualified(&format!("{}_on_leak", options.registry_table_name())),
            leak_trigger: quote(&format!("{}_on_leak", options.registry_table_name())),
            hash_fn: qualified(&format!("{}_hash", options.registry_table_name())),
        };
        migrate(&pool, &options, &tables).await?;
        let queries = std::sync::Arc::new(Queries::new(&tables));
        let limit = batch_limit(options.max_connections);
        let (read, sql) = (pool.clone(), queries.clone());
        let gets = Coalesce::new(
            limit,
            MAX_BATCH,
            std::sync::Arc::new(move |keys: Vec<String>| {
                let (pool, sql) = (read.clone(), sql.clone());
                Box::pin(async move { get_many(&pool, &sql.get_many, keys).await })
            }),
        );
        let (write, sql) = (pool.clone(), queries.clone());
        let deletes = Coalesce::new(
            limit,
            MAX_BATCH,
            std::sync::Arc::new(move |keys: Vec<String>| {
                let (pool, sql) = (write.clone(), sql.clone());
                Box::pin(async move {
                    let count = keys.len();
                    sqlx::query(&sql.delete_many)
                        .bind(key_hashes(&keys))
                        .execute(&pool)
                        .await
                        .map_err(|error| error.to_string())?;
                    Ok(vec![(); count])
                })
            }),
        );
        Ok(Self { pool, queries, order: Default::default(), gets, deletes })
    }

    /// Closes every pooled connection; later calls fail.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// The scoped reads' and bounded writes' SQL, as the store issues it.
    #[doc(hidden)]
    pub fn scoped_sql(&self) -> &ScopedSql {
        &self.queries.scoped
    }
}

/// Quotes a validated identifier (validation already refused `"`).
fn quote(identifier: &str) -> String {
    format!("\"{identifier}\"")
}

/// The store's tables, schema-qualified and quoted.
struct Tables {
    versions: String,
    instances: String,
    leaks: String,
    sweeps: String,
    audit: String,
    registry: String,
    /// The registry's trigger function (schema-qualified) and trigger name.
    register_fn: String,
    register_trigger: String,
    /// The ledger's trigger that takes a sandbox off the lookup queue
    /// (schema version 5): function (schema-qualified) and trigger name.
    leak_fn: String,
    leak_trigger: String,
    /// The sandbox hash as an immutable function (schema version 5), which
    /// the records' and the audit's expression indexes hold.
    hash_fn: String,
}

/// Applies pending migrations in one transaction holding an advisory lock on
/// the schema: a second host connecting at once waits, then finds nothing to do.
async fn migrate(pool: &PgPool, options: &PostgresOptions, tables: &Tables) -> Result<(), StoreOpenError> {
    let versions = &tables.versions;
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
    let names = [
        ("{instances}", tables.instances.as_str()),
        ("{leaks}", tables.leaks.as_str()),
        ("{sweeps}", tables.sweeps.as_str()),
        ("{audit}", tables.audit.as_str()),
        ("{registry}", tables.registry.as_str()),
        ("{register_fn}", tables.register_fn.as_str()),
        ("{register_trigger}", tables.register_trigger.as_str()),
        ("{leak_fn}", tables.leak_fn.as_str()),
        ("{leak_trigger}", tables.leak_trigger.as_str()),
        ("{hash_fn}", tables.hash_fn.as_str()),
    ];
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

/// `key_hash` of each key: the SHA-256 of its UTF-8 bytes, as the table's
/// CHECK computes it.
fn key_hashes(keys: &[String]) -> Vec<Vec<u8>> {
    use sha2::Digest;
    keys.iter().map(|key| sha2::Sha256::digest(key.as_bytes()).to_vec()).collect()
}

/// The records of `keys`, in their order, read in one statement (a row that
/// does not read as a record fails its own key only).
async fn get_many(
    pool: &PgPool,
    sql: &str,
    keys: Vec<String>,
) -> Result<Vec<Result<Option<SandboxInstanceRecord>, StoreError>>, String> {
    let rows = sqlx::query(sql).bind(key_hashes(&keys)).fetch_all(pool).await.map_err(|error| error.to_string())?;
    let mut found = std::collections::HashMap::with_capacity(rows.len());
    for row in &rows {
        // The column is read alone first, so even an unreadable row answers its own key.
        let key: String = sqlx::Row::try_get(row, "sandbox_key").map_err(|error| error.to_string())?;
        found.insert(key, record_from_row(row));
    }
    // A key matches only a row holding exactly that key (a digest is not the
    // key); two calls for one key in a batch both get its answer.
    Ok(keys
        .iter()
        .map(|key| match found.get(key) {
            None => Ok(None),
            Some(Ok(record)) => Ok(Some(record.clone())),
            Some(Err(StoreError::InvalidRecord(invalid))) => Err(StoreError::InvalidRecord(invalid.clone())),
            Some(Err(StoreError::InvalidKey(reason))) => Err(StoreError::InvalidKey(reason)),
            Some(Err(StoreError::Backend(error))) => Err(StoreError::backend(error.to_string())),
        })
        .collect())
}

/// The instance writes themselves; the trait methods issue them in order
/// through [`KeyedOrder`].
impl PostgresSandboxInstanceStore {
    async fn upsert_now(&self, record: &SandboxInstanceRecord) -> Result<(), StoreError> {
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

    async fn delete_now(&self, key: &str) -> Result<(), StoreError> {
        self.deletes.submit(key.to_owned()).await.map_err(StoreError::backend)
    }

    async fn delete_recording_leak_now(&self, key: &str, leak: NewLeak) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await.map_err(backend)?;
        sqlx::query(&self.queries.delete).bind(key).execute(&mut *tx).await.map_err(backend)?;
        let due = leak.failed_at;
        self.upsert_leak(&mut *tx, &leak, LeakReason::DestroyFailed, due).await?;
        tx.commit().await.map_err(backend)
    }

    async fn expire_idle_now(&self, key: &str, seen_updated_at: u64, leak: NewLeak) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await.map_err(backend)?;
        let deleted = sqlx::query(&self.queries.expire_delete)
            .bind(key)
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
        self.upsert_leak(&mut *tx, &leak, LeakReason::Idle, due).await?;
        tx.commit().await.map_err(backend)?;
        Ok(true)
    }
}

#[async_trait]
impl crate::contract::SandboxInstanceStore for PostgresSandboxInstanceStore {
    async fn get(&self, key: &str) -> Result<Option<SandboxInstanceRecord>, StoreError> {
        if !storable_key(key) {
            return Ok(None);
        }
        self.gets.submit(key.to_owned()).await.map_err(StoreError::backend)?
    }

    async fn upsert(&self, record: &SandboxInstanceRecord) -> Result<(), StoreError> {
        record.validate()?;
        let (this, record) = (self.clone(), record.clone());
        self.order.run(&record.key.clone(), async move { this.upsert_now(&record).await }).await
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        if !storable_key(key) {
            return Ok(());
        }
        let (this, owned) = (self.clone(), key.to_owned());
        self.order.run(key, async move { this.delete_now(&owned).await }).await
    }

    fn leak_ledger(&self) -> Option<&dyn LeakLedger> {
        Some(self)
    }
}

#[async_trait]
impl LeakLedger for PostgresSandboxInstanceStore {
    async fn delete_recording_leak(&self, key: &str, leak: NewLeak) -> Result<(), StoreError> {
        validate_leak(key, &leak)?;
        let (this, owned) = (self.clone(), key.to_owned());
        self.order.run(key, async move { this.delete_recording_leak_now(&owned, leak).await }).await
    }

    async fn list_leaks(&self, provider: Option<&str>) -> Result<Vec<LeakEntry>, StoreError> {
        let rows = sqlx::query(&self.queries.list_leaks).bind(provider).fetch_all(&self.pool).await.map_err(backend)?;
        // A listing hands out no claim to write under.
        rows.iter().map(|row| leak_from_row(row).map(|(_, entry)| LeakEntry { claim: None, ..entry })).collect()
    }

    async fn summarize_leaks(&self) -> Result<Vec<LeakSummary>, StoreError> {
        let rows: Vec<(String, i64, i64)> =
            sqlx::query_as(&self.queries.summarize_leaks).fetch_all(&self.pool).await.map_err(backend)?;
        Ok(summaries(rows))
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
            .bind(super::sql::lease_millis(lease))
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        let mut claimed = rows.iter().map(leak_from_row).collect::<Result<Vec<_>, _>>()?;
        claimed.sort_by_key(|(id, _)| *id);
        Ok(claimed.into_iter().map(|(_, entry)| entry).collect())
    }

    async fn resolve_leak(&self, entry: &LeakEntry) -> Result<Held, StoreError> {
        let done = sqlx::query(&self.queries.resolve_leak)
            .bind(&entry.provider)
            .bind(&entry.provider_sandbox_id)
            .bind(entry.claim.map(sql_int))
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(held(entry, done.rows_affected()))
    }

    async fn record_retry_failure(&self, entry: &LeakEntry, message: &str, failed_at: u64) -> Result<Held, StoreError> {
        let done = sqlx::query(&self.queries.record_retry_failure)
            .bind(&entry.provider)
            .bind(&entry.provider_sandbox_id)
            .bind(ledger_text(message))
            .bind(sql_int(failed_at))
            .bind(entry.claim.map(sql_int))
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(held(entry, done.rows_affected()))
    }
}

impl PostgresSandboxInstanceStore {
    /// Records `leak` with its fleet bookkeeping (see `Queries::upsert_leak`).
    async fn upsert_leak<'e>(
        &self,
        executor: impl sqlx::PgExecutor<'e>,
        leak: &NewLeak,
        reason: LeakReason,
        next_attempt_at: u64,
    ) -> Result<(), StoreError> {
        sqlx::query(&self.queries.upsert_leak)
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
}

#[async_trait]
impl FleetStore for PostgresSandboxInstanceStore {
    async fn list_stale(&self, older_than: u64, limit: usize) -> Result<Vec<SandboxInstanceRecord>, StoreError> {
        let rows = sqlx::query(&self.queries.list_stale)
            .bind(sql_int(older_than))
            .bind(sql_limit(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        rows.iter().map(record_from_row).collect()
    }

    async fn expire_idle(&self, key: &str, seen_updated_at: u64, leak: NewLeak) -> Result<bool, StoreError> {
        validate_leak(key, &leak)?;
        let (this, owned) = (self.clone(), key.to_owned());
        self.order.run(key, async move { this.expire_idle_now(&owned, seen_updated_at, leak).await }).await
    }

    async fn registered_sandboxes(&self, provider: &str, since: u64) -> Result<Vec<String>, StoreError> {
        if !storable_name(provider) {
            return Ok(Vec::new());
        }
        sqlx::query_scalar(&self.queries.registered_sandboxes)
            .bind(provider)
            .bind(sql_int(since))
            .fetch_all(&self.pool)
            .await
            .map_err(backend)
    }

    async fn sandbox_references(&self, provider: &str, destroyed_since: u64) -> Result<Vec<String>, StoreError> {
        if !storable_name(provider) {
            return Ok(Vec::new());
        }
        sqlx::query_scalar(&self.queries.sandbox_references)
            .bind(provider)
            .bind(sql_int(destroyed_since))
            .bind(AUDIT_DESTROYED)
            .fetch_all(&self.pool)
            .await
            .map_err(backend)
    }

    fn scoped_reads(&self) -> bool {
        true
    }

    async fn sweep_mark(&self, _provider: &str) -> Result<u64, StoreError> {
        let sql = &self.queries.scoped.sweep_mark;
        let mark: i64 = sqlx::query_scalar(sql).fetch_one(&self.pool).await.map_err(backend)?;
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
        let found = sqlx::query_scalar(&self.queries.scoped.referenced_among)
            .bind(provider)
            .bind(asked)
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
        let found = sqlx::query_scalar(&self.queries.scoped.registered_among)
            .bind(provider)
            .bind(asked)
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
        sqlx::query_scalar(&self.queries.scoped.lookup_candidates)
            .bind(provider)
            .bind(sql_int(since))
            .bind(sql_limit(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(backend)
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
        let sql = &self.queries.scoped;
        let mut tx = self.pool.begin().await.map_err(backend)?;
        sqlx::query(&sql.lookup_gone).bind(provider).bind(gone).execute(&mut *tx).await.map_err(backend)?;
        let query = sqlx::query(&sql.lookup_checked).bind(provider).bind(checked).bind(sql_int(now));
        query.execute(&mut *tx).await.map_err(backend)?;
        tx.commit().await.map_err(backend)
    }

    async fn record_leak(&self, leak: NewLeak, reason: LeakReason, next_attempt_at: u64) -> Result<(), StoreError> {
        validate_leak(&leak.key, &leak)?;
        self.upsert_leak(&self.pool, &leak, reason, next_attempt_at).await
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
        let rows = match lease_ms {
            Some(lease_ms) => {
                let mut tx = self.pool.begin().await.map_err(backend)?;
                let rows = sqlx::query(&self.queries.claim_due)
                    .bind(provider)
                    .bind(sql_int(now))
                    .bind(sql_limit(limit))
                    .bind(sql_int(lease_end(0, lease_ms)))
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(backend)?;
                tx.commit().await.map_err(backend)?;
                rows
            }
            None => sqlx::query(&self.queries.list_due)
                .bind(provider)
                .bind(sql_int(now))
                .bind(sql_limit(limit))
                .fetch_all(&self.pool)
                .await
                .map_err(backend)?,
        };
        due_in_order(&rows)
    }

    async fn defer_leak(
        &self,
        entry: &LeakEntry,
        message: &str,
        failed_at: u64,
        next_attempt_at: u64,
    ) -> Result<Held, StoreError> {
        if !storable_name(&entry.provider) || !storable_name(&entry.provider_sandbox_id) {
            return Ok(held(entry, 0));
        }
        let done = sqlx::query(&self.queries.defer_leak)
            .bind(&entry.provider)
            .bind(&entry.provider_sandbox_id)
            .bind(ledger_text(message))
            .bind(sql_int(failed_at))
            .bind(sql_int(next_attempt_at))
            .bind(entry.claim.map(sql_int))
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(held(entry, done.rows_affected()))
    }

    /// The caller's clock (`_now`) is not used: the lease runs on the database's.
    async fn claim_sweep(&self, provider: &str, holder: &str, lease_ms: u64, _now: u64) -> Result<bool, StoreError> {
        validate_name("provider", provider)?;
        validate_name("holder", holder)?;
        let done = sqlx::query(&self.queries.claim_sweep)
            .bind(provider)
            .bind(holder)
            .bind(sql_int(lease_end(0, lease_ms)))
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(done.rows_affected() == 1)
    }

    async fn release_sweep(&self, provider: &str, holder: &str) -> Result<(), StoreError> {
        if !storable_name(provider) || holder.contains('\0') {
            return Ok(());
        }
        sqlx::query(&self.queries.release_sweep)
            .bind(provider)
            .bind(holder)
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn prune(&self, provider: &str, registry_before: u64, audit_before: u64) -> Result<(), StoreError> {
        if !storable_name(provider) {
            return Ok(());
        }
        // In batches, each one statement (so its own short transaction): no
        // write waits behind a long prune.
        let (sql, batch) = (&self.queries.scoped, sql_limit(PRUNE_BATCH));
        prune_in_batches(PRUNING, || async move {
            let query = sqlx::query(&sql.prune_registry).bind(provider).bind(sql_int(registry_before));
            let done = query.bind(sql_int(audit_before)).bind(batch).execute(&self.pool).await.map_err(backend)?;
            Ok(done.rows_affected())
        })
        .await?;
        prune_in_batches(PRUNING, || async move {
            let query = sqlx::query(&sql.prune_audit).bind(provider).bind(sql_int(audit_before)).bind(batch);
            Ok(query.execute(&self.pool).await.map_err(backend)?.rows_affected())
        })
        .await
    }

    async fn append_audit(&self, entries: &[AuditEntry]) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut tx = self.pool.begin().await.map_err(backend)?;
        for entry in entries {
            let text = AuditText::of(entry);
            sqlx::query(&self.queries.append_audit)
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
            if entry.result == AUDIT_DESTROYED
                && storable_name(&entry.provider)
                && storable_name(&entry.provider_sandbox_id)
            {
                // A confirmed destroy: known gone, off the lookup queue.
                let query = sqlx::query(&self.queries.scoped.unqueue_destroyed).bind(&entry.provider);
                query.bind(&entry.provider_sandbox_id).execute(&mut *tx).await.map_err(backend)?;
            }
        }
        tx.commit().await.map_err(backend)
    }

    async fn list_audit(&self, since: Option<u64>, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        let rows = sqlx::query(&self.queries.list_audit)
            .bind(sql_int(since.unwrap_or(0)))
            .bind(sql_limit(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        rows.iter().map(audit_from_row).collect()
    }

    async fn scheduled_leaks(&self) -> Result<Vec<ScheduledLeak>, StoreError> {
        let rows = sqlx::query(&self.queries.scheduled).fetch_all(&self.pool).await.map_err(backend)?;
        rows.iter().map(scheduled_from_row).collect()
    }

    async fn facts(&self) -> Result<StoreFacts, StoreError> {
        let (schema_version, records, last): (i64, i64, Option<i64>) =
            sqlx::query_as(&self.queries.facts).fetch_one(&self.pool).await.map_err(backend)?;
        Ok(StoreFacts {
            schema_version,
            records: u64::try_from(records).unwrap_or(0),
            last_audit_at: last.and_then(|at| u64::try_from(at).ok()),
        })
    }
}
