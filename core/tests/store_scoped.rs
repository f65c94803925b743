//! A sweep's scoped store reads (`FleetStore::sweep_mark`, `referenced_among`,
//! `registered_among`, `lookup_candidates`, `lookup_checked`): the same checks
//! against the in-memory, SQLite and PostgreSQL stores; the upgrade of a
//! version-4 database; prune's batches; and that every scoped query runs on
//! indexes, never a scan of a table.
#![cfg(all(feature = "sqlite", feature = "postgres"))]

mod store_support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox_reclaim::stores::postgres::PRUNE_BATCH as PG_PRUNE_BATCH;
use sandbox_reclaim::stores::sqlite::{ScopedSql, PRUNE_BATCH};
use sandbox_reclaim::{
    AuditEntry, FleetStore, InMemorySandboxInstanceStore, LeakReason, NewLeak, SandboxInstanceRecord,
    SandboxInstanceStore, SqliteSandboxInstanceStore,
};
use serde_json::Value;
use sqlx::ConnectOptions;
use store_support::{drop_schema, pg_exec, pg_store, pg_url, remove_db, temp_db_path, unique, Backend};

/// Both faces of a store: instance records and the fleet operations.
trait Store: FleetStore + SandboxInstanceStore {}
impl<T: FleetStore + SandboxInstanceStore> Store for T {}

/// Where a store's rows live, for the tests that seed or read them directly.
enum Place {
    Memory,
    File(PathBuf),
    Schema(String),
}

struct Fresh {
    store: Arc<dyn Store>,
    place: Place,
}

impl Fresh {
    async fn new(backend: Backend) -> Self {
        match backend {
            Backend::Memory => {
                Self { store: Arc::new(InMemorySandboxInstanceStore::with_ledger()), place: Place::Memory }
            }
            Backend::Sqlite => {
                let path = temp_db_path("scoped");
                let store = SqliteSandboxInstanceStore::open(&path).await.expect("open SQLite");
                Self { store: Arc::new(store), place: Place::File(path) }
            }
            Backend::Postgres => {
                let schema = unique("scoped");
                Self { store: Arc::new(pg_store(&schema).await), place: Place::Schema(schema) }
            }
        }
    }

    async fn cleanup(self) {
        drop(self.store);
        match self.place {
            Place::Memory => {}
            Place::File(path) => remove_db(&path),
            Place::Schema(schema) => drop_schema(&schema).await,
        }
    }
}

fn record(key: &str, provider: &str, id: &str, updated_at: u64) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: key.to_owned(),
        provider: provider.to_owned(),
        provider_sandbox_id: id.to_owned(),
        latest_snapshot_id: None,
        thread_id: "thread".to_owned(),
        latest_run_id: Some("run".to_owned()),
        updated_at,
    }
}

fn leak(key: &str, id: &str) -> NewLeak {
    NewLeak {
        key: key.to_owned(),
        provider: "docker".to_owned(),
        provider_sandbox_id: id.to_owned(),
        run_id: format!("run-{key}"),
        error_message: format!("destroy of {id} failed"),
        failed_at: 1,
    }
}

fn audit(at: u64, id: &str, result: &str) -> AuditEntry {
    AuditEntry {
        at,
        host: "host-a".to_owned(),
        provider: "docker".to_owned(),
        provider_sandbox_id: id.to_owned(),
        key: None,
        reason: "orphan".to_owned(),
        result: result.to_owned(),
        error: None,
    }
}

fn owned(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| (*id).to_owned()).collect()
}

fn wall_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

/// Past every window a test uses (and within 2^53).
const FAR: u64 = u64::MAX >> 12;

/// A record naming `id`, written at `at`, then deleted.
async fn gone(store: &dyn Store, key: &str, id: &str, at: u64) {
    store.upsert(&record(key, "docker", id, at)).await.unwrap();
    store.delete(key).await.unwrap();
}

/// A mark under which the deletions of `deleted` (all before this call) no
/// longer count. PostgreSQL's mark is the oldest transaction still running,
/// which another test's open transaction holds back: the mark is taken
/// again until it passes them. A store whose mark never passes a deletion
/// fails here.
async fn mark_past(store: &dyn Store, deleted: &[&str]) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mark = store.sweep_mark("docker").await.unwrap();
        if store.referenced_among("docker", &owned(deleted), FAR, mark).await.unwrap().is_empty() {
            return mark;
        }
        assert!(Instant::now() < deadline, "deletions before the mark still count under it: {deleted:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What references a listed id: a live record, a leak entry, an audited
/// destroy or a resolve within the window, a deletion after the mark; of
/// one provider only, and only ids that were asked about.
async fn referenced_among_answers_for_the_asked_ids(store: &dyn Store) {
    store.upsert(&record("k-live", "docker", "live", 100)).await.unwrap();
    store.record_leak(leak("k-leak", "leaked"), LeakReason::Orphan, 0).await.unwrap();
    store.record_leak(leak("k-res", "resolved"), LeakReason::Orphan, 0).await.unwrap();
    let claimed = store.claim_leaks("docker", 10, Duration::from_secs(60)).await.unwrap();
    let resolved = claimed.iter().find(|entry| entry.provider_sandbox_id == "resolved").unwrap();
    assert!(store.resolve_leak(resolved).await.unwrap());
    let elsewhere = AuditEntry { provider: "daytona".to_owned(), ..audit(1000, "elsewhere", "destroyed") };
    let rows = [
        audit(1000, "destroyed-new", "destroyed"),
        audit(999, "destroyed-old", "destroyed"),
        audit(1000, "failed-new", "failed"),
        elsewhere,
    ];
    store.append_audit(&rows).await.unwrap();
    store.upsert(&record("k-other", "daytona", "other-live", 100)).await.unwrap();
    gone(store, "k-before", "gone-before", 100).await;
    store.upsert(&record("k-after", "docker", "gone-after", 100)).await.unwrap();
    store.upsert(&record("k-moved", "docker", "moved-old", 100)).await.unwrap();

    let mark = mark_past(store, &["gone-before"]).await;
    store.delete("k-after").await.unwrap();
    store.upsert(&record("k-moved", "docker", "moved-new", 200)).await.unwrap();

    let asked = owned(&[
        "zz-unknown",
        "moved-old",
        "live",
        "leaked",
        "destroyed-new",
        "destroyed-old",
        "failed-new",
        "resolved",
        "gone-before",
        "gone-after",
        "moved-new",
        "other-live",
        "elsewhere",
        "live",
        "",
        "nul\0",
    ]);
    let found = store.referenced_among("docker", &asked, 1000, mark).await.unwrap();
    let expected = ["destroyed-new", "gone-after", "leaked", "live", "moved-new", "moved-old", "resolved"];
    assert_eq!(found, expected, "sorted, each once; audit before the window, failures, others' ids, unknown: no");
    let later = store.referenced_among("docker", &asked, FAR, mark).await.unwrap();
    assert_eq!(later, ["gone-after", "leaked", "live", "moved-new", "moved-old"], "past the window");
    let newer = mark_past(store, &["gone-after", "moved-old"]).await;
    assert!(newer > mark, "the mark rose past the deletions");
    let found = store.referenced_among("docker", &asked, FAR, newer).await.unwrap();
    assert_eq!(found, ["leaked", "live", "moved-new"], "what exists now");
    assert_eq!(store.referenced_among("daytona", &asked, 1000, 0).await.unwrap(), ["elsewhere", "other-live"]);
    assert!(store.referenced_among("", &asked, 0, 0).await.unwrap().is_empty());
    assert!(store.referenced_among("docker", &[], 0, 0).await.unwrap().is_empty());
}

/// The registry among asked ids: a live record always, a deleted one while
/// it was last seen within `since`.
async fn registered_among_counts_live_and_recently_deleted(store: &dyn Store) {
    store.upsert(&record("k1", "docker", "live", 100)).await.unwrap();
    gone(store, "k2", "deleted", 100).await;
    store.upsert(&record("k3", "daytona", "theirs", 100)).await.unwrap();
    let asked = owned(&["unknown", "theirs", "deleted", "live", "live"]);
    let now = wall_now();
    assert_eq!(store.registered_among("docker", &asked, now - 60_000).await.unwrap(), ["deleted", "live"]);
    let later = store.registered_among("docker", &asked, now + 3_600_000).await.unwrap();
    assert_eq!(later, ["live"], "deleted before `since`; a live record counts however old");
    assert_eq!(store.registered_among("daytona", &asked, FAR).await.unwrap(), ["theirs"]);
    assert!(store.registered_among("\0", &asked, 0).await.unwrap().is_empty());
}

/// The lookup queue: registered sandboxes whose record is gone, named by no
/// record or leak entry and not known gone; never checked first (most
/// recently deleted first), then least recently checked.
async fn lookup_candidates_follow_the_queue(store: &dyn Store) {
    // Written a day ahead, so each is last seen at its write whatever the
    // clock says when it is deleted: a deterministic order.
    let t = wall_now() + 86_400_000;
    let since = t + 2_000;
    let candidates = |since: u64, limit: usize| store.lookup_candidates("docker", since, limit);
    gone(store, "ka", "a", t + 5_000).await;
    gone(store, "kb", "b", t + 10_000).await;
    gone(store, "kg", "g", t + 1_000).await;
    store.upsert(&record("kc", "docker", "c", t + 9_000)).await.unwrap();
    store.upsert(&record("kd", "docker", "d", t + 9_000)).await.unwrap();
    let ledger = store.leak_ledger().unwrap();
    ledger.delete_recording_leak("kd", leak("kd", "d")).await.unwrap();
    gone(store, "ke", "e", t + 9_000).await;
    store.upsert(&record("ke2", "docker", "e", t + 9_500)).await.unwrap();
    store.upsert(&record("kx", "daytona", "x", t + 9_000)).await.unwrap();
    store.delete("kx").await.unwrap();
    assert_eq!(candidates(since, 10).await.unwrap(), ["b", "a"], "live, in the ledger, named again, older: no");
    assert_eq!(candidates(0, 10).await.unwrap(), ["b", "a", "g"], "`since` excluded g");

    gone(store, "kh", "h", t + 20_000).await;
    assert_eq!(candidates(since, 1).await.unwrap(), ["h"], "the limit");
    assert_eq!(candidates(since, 10).await.unwrap(), ["h", "b", "a"]);
    store.lookup_checked("docker", &owned(&["h"]), &owned(&["b"]), 5).await.unwrap();
    assert_eq!(candidates(since, 10).await.unwrap(), ["a", "b"], "checked: behind the never-checked; gone: out");
    store.lookup_checked("docker", &[], &owned(&["a"]), 7).await.unwrap();
    assert_eq!(candidates(since, 10).await.unwrap(), ["b", "a"], "least recently checked first");
    let mark = mark_past(store, &["h", "b"]).await;
    let found = store.referenced_among("docker", &owned(&["h", "b"]), wall_now() - 60_000, mark).await.unwrap();
    assert_eq!(found, ["h"], "found gone: counted like a confirmed destroy within the window");

    gone(store, "ki", "i", t + 6_000).await;
    assert_eq!(candidates(since, 10).await.unwrap(), ["i", "b", "a"]);
    store.append_audit(&[audit(t, "i", "failed")]).await.unwrap();
    assert_eq!(candidates(since, 10).await.unwrap(), ["i", "b", "a"], "a failed destroy confirms nothing");
    store.append_audit(&[audit(t, "i", "destroyed")]).await.unwrap();
    assert_eq!(candidates(since, 10).await.unwrap(), ["b", "a"], "an audited destroy: known gone");

    gone(store, "kj", "j", t + 8_000).await;
    assert_eq!(candidates(since, 10).await.unwrap(), ["j", "b", "a"]);
    store.record_leak(leak("kj", "j"), LeakReason::Orphan, 0).await.unwrap();
    assert_eq!(candidates(since, 10).await.unwrap(), ["b", "a"], "the ledger covers it");
    let claimed = store.claim_leaks("docker", 10, Duration::from_secs(60)).await.unwrap();
    for entry in claimed.iter().filter(|entry| entry.provider_sandbox_id == "j") {
        assert!(store.resolve_leak(entry).await.unwrap());
    }
    assert_eq!(candidates(since, 10).await.unwrap(), ["b", "a"], "a resolve confirmed its destroy");
    assert_eq!(candidates(0, 10).await.unwrap(), ["g", "b", "a"], "h and i never again");
    assert!(store.lookup_candidates("docker", 0, 0).await.unwrap().is_empty());
    assert!(store.lookup_candidates("", 0, 10).await.unwrap().is_empty());
}

/// The mark never goes down (not even when prune deletes the row of the
/// newest deletion) and rises past a deletion.
async fn the_mark_never_goes_down(store: &dyn Store) {
    let mut marks = vec![store.sweep_mark("docker").await.unwrap()];
    // A record moved to another sandbox: the first one's row is the newest
    // deletion, last seen at its record's write (100).
    store.upsert(&record("k", "docker", "p1", 100)).await.unwrap();
    store.upsert(&record("k", "docker", "p2", 100)).await.unwrap();
    marks.push(store.sweep_mark("docker").await.unwrap());
    store.prune("docker", 1_000, 0).await.unwrap();
    let before = store.sweep_mark("docker").await.unwrap();
    marks.push(before);
    store.delete("k").await.unwrap();
    let found = store.referenced_among("docker", &owned(&["p2"]), FAR, before).await.unwrap();
    assert_eq!(found, ["p2"], "deleted after the mark");
    marks.push(mark_past(store, &["p1", "p2"]).await);
    assert!(marks.windows(2).all(|pair| pair[0] <= pair[1]), "never goes down: {marks:?}");
    assert!(marks[3] > before, "rose past the deletion: {marks:?}");
}

async fn scoped_contract(backend: Backend) {
    type Case = for<'a> fn(&'a dyn Store) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + 'a>>;
    let cases: [(&str, Case); 4] = [
        ("referenced_among", |store| Box::pin(referenced_among_answers_for_the_asked_ids(store))),
        ("registered_among", |store| Box::pin(registered_among_counts_live_and_recently_deleted(store))),
        ("lookup_candidates", |store| Box::pin(lookup_candidates_follow_the_queue(store))),
        ("sweep_mark", |store| Box::pin(the_mark_never_goes_down(store))),
    ];
    for (name, case) in cases {
        let fresh = Fresh::new(backend).await;
        eprintln!("{backend:?}: {name}");
        case(&*fresh.store).await;
        fresh.cleanup().await;
    }
}

#[tokio::test]
async fn in_memory_store_answers_scoped_reads() {
    scoped_contract(Backend::Memory).await;
}

#[tokio::test]
async fn sqlite_store_answers_scoped_reads() {
    scoped_contract(Backend::Sqlite).await;
}

#[tokio::test]
async fn postgres_store_answers_scoped_reads() {
    scoped_contract(Backend::Postgres).await;
}

#[tokio::test]
async fn every_store_says_it_answers_scoped_reads() {
    for backend in [Backend::Memory, Backend::Sqlite, Backend::Postgres] {
        let fresh = Fresh::new(backend).await;
        assert!(fresh.store.scoped_reads(), "{backend:?}");
        fresh.cleanup().await;
    }
}

// ---------------------------------------------------------------------------
// Upgrading a version-4 database.

const SQLITE_V1_TO_V4: [&str; 4] = [
    include_str!("../src/stores/migrations/sqlite/0001_instances_and_leaks.sql"),
    include_str!("../src/stores/migrations/sqlite/0002_fleet.sql"),
    include_str!("../src/stores/migrations/sqlite/0003_registry.sql"),
    include_str!("../src/stores/migrations/sqlite/0004_claim_generation.sql"),
];
const POSTGRES_V1_TO_V4: [&str; 4] = [
    include_str!("../src/stores/migrations/postgres/0001_instances_and_leaks.sql"),
    include_str!("../src/stores/migrations/postgres/0002_fleet.sql"),
    include_str!("../src/stores/migrations/postgres/0003_registry.sql"),
    include_str!("../src/stores/migrations/postgres/0004_claim_generation.sql"),
];

fn filled(sql: &str, names: &[(String, String)]) -> String {
    names.iter().fold(sql.to_owned(), |sql, (placeholder, name)| sql.replace(placeholder, name))
}

/// What an upgraded version-4 store holds: a record deleted before the
/// upgrade is a lookup candidate; a live one, one in the ledger and one
/// whose destroy was confirmed are not; old deletions count before any mark.
async fn check_backfill(store: &dyn Store) {
    assert_eq!(store.lookup_candidates("docker", 0, 10).await.unwrap(), ["gone"]);
    let mark = store.sweep_mark("docker").await.unwrap();
    let asked = owned(&["gone", "leaked", "live", "resolved"]);
    assert_eq!(store.referenced_among("docker", &asked, FAR, mark).await.unwrap(), ["leaked", "live"]);
    store.delete("k-live").await.unwrap();
    let found = store.referenced_among("docker", &asked, FAR, mark).await.unwrap();
    assert_eq!(found, ["leaked", "live"], "deleted after the mark: counted");
    assert_eq!(store.lookup_candidates("docker", 0, 10).await.unwrap(), ["live", "gone"], "most recent first");
}

/// Rows a version-4 store's own triggers wrote: records live, deleted, deleted
/// into the ledger, deleted and resolved.
const V4_ROWS: &str = "DELETE FROM {instances} WHERE sandbox_key IN ('k-gone', 'k-leaked', 'k-resolved');
     UPDATE {registry} SET resolved_at = last_seen + 1 WHERE provider_sandbox_id = 'resolved';";

#[tokio::test]
async fn a_version_4_sqlite_file_queues_what_its_deleted_records_named() {
    let path = temp_db_path("scoped_v4");
    let names: Vec<(String, String)> = ["instances", "leaks", "sweeps", "audit", "registry"]
        .iter()
        .map(|table| (format!("{{{table}}}"), format!("sandbox_{table}")))
        .collect();
    let mut setup = "CREATE TABLE sandbox_reclaim_schema_version
        (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT;\n"
        .to_owned();
    for (version, sql) in SQLITE_V1_TO_V4.iter().enumerate() {
        setup += &filled(sql, &names);
        setup += &format!("\nINSERT INTO sandbox_reclaim_schema_version VALUES ({}, 0);\n", version + 1);
    }
    setup += "INSERT INTO sandbox_instances (sandbox_key, provider, provider_sandbox_id, thread_id, updated_at) VALUES
        ('k-live', 'docker', 'live', 't', 100), ('k-gone', 'docker', 'gone', 't', 100),
        ('k-leaked', 'docker', 'leaked', 't', 100), ('k-resolved', 'docker', 'resolved', 't', 100);
      INSERT INTO sandbox_leaks (provider, provider_sandbox_id, sandbox_key, run_id, last_error, failed_at, attempts)
        VALUES ('docker', 'leaked', 'k-leaked', 'r', 'e', 1, 1);\n";
    setup += &filled(V4_ROWS, &names);
    let mut connection =
        sqlx::sqlite::SqliteConnectOptions::new().filename(&path).create_if_missing(true).connect().await.unwrap();
    sqlx::raw_sql(&setup).execute(&mut connection).await.unwrap();
    drop(connection);

    let store = SqliteSandboxInstanceStore::open(&path).await.expect("a version-4 file upgrades");
    check_backfill(&store).await;
    store.close().await;
    remove_db(&path);
}

#[tokio::test]
async fn a_version_4_postgres_schema_queues_what_its_deleted_records_named() {
    let schema = unique("scoped_v4");
    let qualified = |table: &str| format!("\"{schema}\".\"{table}\"");
    let mut names: Vec<(String, String)> = ["instances", "leaks", "sweeps", "audit", "registry"]
        .iter()
        .map(|table| (format!("{{{table}}}"), qualified(&format!("sandbox_{table}"))))
        .collect();
    names.push(("{register_fn}".to_owned(), qualified("sandbox_registry_register")));
    names.push(("{register_trigger}".to_owned(), "\"sandbox_registry_register\"".to_owned()));
    let versions = qualified("sandbox_reclaim_schema_version");
    let mut setup = format!(
        "CREATE SCHEMA \"{schema}\";
         CREATE TABLE {versions} (version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());\n"
    );
    for (version, sql) in POSTGRES_V1_TO_V4.iter().enumerate() {
        setup += &filled(sql, &names);
        setup += &format!("\nINSERT INTO {versions} (version) VALUES ({});\n", version + 1);
    }
    setup += "INSERT INTO {instances} (key_hash, sandbox_key, provider, provider_sandbox_id, thread_id, updated_at)
        SELECT sha256(convert_to(key, 'UTF8')), key, 'docker', id, 't', 100 FROM (VALUES ('k-live', 'live'),
        ('k-gone', 'gone'), ('k-leaked', 'leaked'), ('k-resolved', 'resolved')) AS seeded (key, id);
      INSERT INTO {leaks} (sandbox_hash, provider, provider_sandbox_id, sandbox_key, run_id, last_error, failed_at,
        attempts) VALUES (sha256(convert_to('6:dockerleaked', 'UTF8')), 'docker', 'leaked', 'k-leaked', 'r', 'e',
        1, 1);\n";
    setup += V4_ROWS;
    pg_exec(&filled(&setup, &names)).await;

    let store = pg_store(&schema).await;
    check_backfill(&store).await;
    store.close().await;
    drop_schema(&schema).await;
}

// ---------------------------------------------------------------------------
// Prune in bounded batches.

/// Expired rows of the provider pruned (more than two batches' worth), so
/// prune ran more than one batch; and what it keeps.
const EXPIRED: usize = 2 * if PRUNE_BATCH > PG_PRUNE_BATCH { PRUNE_BATCH } else { PG_PRUNE_BATCH } + 7;

/// `count` rows per kind: the provider's expired (at 100) and fresh (at
/// 5000) rows, and another provider's expired ones, in the registry and the
/// audit log.
fn prune_seed(count: &dyn Fn(usize, &str, &str, u64) -> String) -> String {
    [count(EXPIRED, "docker", "old", 100), count(3, "docker", "new", 5_000), count(3, "daytona", "old", 100)].concat()
}

fn check_pruned(counts: Vec<(String, String, i64)>) {
    let rows = |table: &str, provider: &str| {
        counts.iter().find(|(t, p, _)| t == table && p == provider).map_or(0, |(_, _, n)| *n)
    };
    for table in ["registry", "audit"] {
        assert_eq!(rows(table, "docker"), 3, "{table}: every expired row went, the fresh ones stay");
        assert_eq!(rows(table, "daytona"), 3, "{table}: another provider's stay");
    }
}

#[tokio::test]
async fn sqlite_prune_runs_batches_until_every_expired_row_is_gone() {
    let path = temp_db_path("scoped_prune");
    let store = SqliteSandboxInstanceStore::open(&path).await.unwrap();
    let seed = prune_seed(&|count, provider, prefix, at| {
        format!(
            "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {count})
             INSERT INTO sandbox_registry (provider, provider_sandbox_id, sandbox_key, first_seen, last_seen)
             SELECT '{provider}', '{prefix}-' || n, 'k', {at}, {at} FROM g;
             WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {count})
             INSERT INTO sandbox_audit (at, host, provider, provider_sandbox_id, reason, result)
             SELECT {at}, 'h', '{provider}', '{prefix}-' || n, 'orphan', 'destroyed' FROM g;\n"
        )
    });
    store_support::sqlite_exec(&path, &seed).await;
    store.prune("docker", 1_000, 1_000).await.unwrap();
    store.close().await;
    let mut connection = sqlx::sqlite::SqliteConnectOptions::new().filename(&path).connect().await.unwrap();
    let counts = sqlx::query_as(
        "SELECT 'registry', provider, COUNT(*) FROM sandbox_registry GROUP BY provider
         UNION ALL SELECT 'audit', provider, COUNT(*) FROM sandbox_audit GROUP BY provider",
    )
    .fetch_all(&mut connection)
    .await
    .unwrap();
    drop(connection);
    check_pruned(counts);
    remove_db(&path);
}

#[tokio::test]
async fn postgres_prune_runs_batches_until_every_expired_row_is_gone() {
    let schema = unique("scoped_prune");
    let store = pg_store(&schema).await;
    let seed = prune_seed(&|count, provider, prefix, at| {
        format!(
            "INSERT INTO \"{schema}\".sandbox_registry (sandbox_hash, provider, provider_sandbox_id, sandbox_key,
               first_seen, last_seen)
             SELECT \"{schema}\".sandbox_registry_hash('{provider}', '{prefix}-' || g), '{provider}', '{prefix}-' || g,
               'k', {at}, {at} FROM generate_series(1, {count}) AS g;
             INSERT INTO \"{schema}\".sandbox_audit (at, host, provider, provider_sandbox_id, reason, result)
             SELECT {at}, 'h', '{provider}', '{prefix}-' || g, 'orphan', 'destroyed'
             FROM generate_series(1, {count}) AS g;\n"
        )
    });
    pg_exec(&seed).await;
    store.prune("docker", 1_000, 1_000).await.unwrap();
    store.close().await;
    let pool = pg_pool().await;
    let counts = sqlx::query_as(&format!(
        "SELECT 'registry', provider, COUNT(*) FROM \"{schema}\".sandbox_registry GROUP BY provider
         UNION ALL SELECT 'audit', provider, COUNT(*) FROM \"{schema}\".sandbox_audit GROUP BY provider"
    ))
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    check_pruned(counts);
    drop_schema(&schema).await;
}

// ---------------------------------------------------------------------------
// Every scoped query runs on indexes.

async fn pg_pool() -> sqlx::PgPool {
    sqlx::postgres::PgPoolOptions::new().max_connections(1).connect(&pg_url()).await.unwrap()
}

/// A statement's parameter.
#[derive(Clone)]
enum Bind {
    Text(String),
    /// A list of ids: a `text[]` on PostgreSQL, a JSON array on SQLite.
    Ids(Vec<String>),
    Int(i64),
}

/// Each scoped statement with realistic parameters, in the order the
/// statement takes them (see `ScopedSql`).
fn statements(sql: &ScopedSql, ids: &[String], now: i64) -> Vec<(&'static str, String, Vec<Bind>)> {
    let (provider, listed) = (Bind::Text("docker".to_owned()), Bind::Ids(ids.to_vec()));
    let month_ago = Bind::Int(now - 30 * 86_400_000);
    let batch = Bind::Int(PRUNE_BATCH as i64);
    let rowids = Bind::Ids((1..=ids.len()).map(|n| n.to_string()).collect());
    let mut by_row = Vec::new();
    if let Some(gone) = &sql.lookup_gone_rows {
        by_row.push(("lookup_gone_rows", gone.clone(), vec![provider.clone(), rowids.clone(), listed.clone()]));
    }
    if let Some(checked) = &sql.lookup_checked_rows {
        let binds = vec![provider.clone(), rowids, listed.clone(), Bind::Int(now)];
        by_row.push(("lookup_checked_rows", checked.clone(), binds));
    }
    let mut all = vec![
        ("sweep_mark", sql.sweep_mark.clone(), vec![]),
        (
            "referenced_among",
            sql.referenced_among.clone(),
            vec![
                provider.clone(),
                listed.clone(),
                Bind::Int(now - 600_000),
                Bind::Int(1_000),
                Bind::Text("destroyed".to_owned()),
            ],
        ),
        ("registered_among", sql.registered_among.clone(), vec![provider.clone(), listed.clone(), month_ago.clone()]),
        ("lookup_candidates", sql.lookup_candidates.clone(), vec![provider.clone(), month_ago.clone(), Bind::Int(100)]),
        ("lookup_gone", sql.lookup_gone.clone(), vec![provider.clone(), listed.clone()]),
        ("lookup_checked", sql.lookup_checked.clone(), vec![provider.clone(), listed, Bind::Int(now)]),
        ("unqueue_destroyed", sql.unqueue_destroyed.clone(), vec![provider.clone(), Bind::Text(ids[0].clone())]),
        (
            "prune_registry",
            sql.prune_registry.clone(),
            vec![provider.clone(), month_ago.clone(), month_ago.clone(), batch.clone()],
        ),
        ("prune_audit", sql.prune_audit.clone(), vec![provider, month_ago, batch]),
    ];
    all.extend(by_row);
    all
}

/// 500 listed ids, as a sweep's batch: live, deleted and unknown ones.
fn listed_ids(seeded: u64) -> Vec<String> {
    let mut ids: Vec<String> = (0..450).map(|n| format!("sbx-{}", (n * 397) % seeded + 1)).collect();
    ids.extend((0..50).map(|n| format!("never-seen-{n}")));
    ids
}

/// The statements whose cost must follow the asked ids: each table is read
/// by key (an asked id), never by a range of the provider's rows.
const BY_ID: [&str; 7] = [
    "referenced_among",
    "registered_among",
    "lookup_gone",
    "lookup_checked",
    "unqueue_destroyed",
    "lookup_gone_rows",
    "lookup_checked_rows",
];

/// Every node of a PostgreSQL JSON plan: (node type, relation, index).
fn plan_nodes(plan: &Value, nodes: &mut Vec<(String, String, String)>) {
    let text = |key: &str| plan.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    nodes.push((text("Node Type"), text("Relation Name"), text("Index Name")));
    for child in plan.get("Plans").and_then(Value::as_array).into_iter().flatten() {
        plan_nodes(child, nodes);
    }
}

#[tokio::test]
async fn postgres_scoped_queries_run_on_indexes() {
    const SEEDED: u64 = 100_000;
    let schema = unique("scoped_plan");
    let store = pg_store(&schema).await;
    let table = |name: &str| format!("\"{schema}\".\"sandbox_{name}\"");
    let (instances, audit, registry, leaks) = (table("instances"), table("audit"), table("registry"), table("leaks"));
    let now = wall_now() as i64;
    // Rows as the store writes them (its triggers on): SEEDED live records,
    // SEEDED deleted ones (queued), SEEDED audit rows, a ledger.
    let seed = [
        format!(
            "INSERT INTO {instances} (key_hash, sandbox_key, provider, provider_sandbox_id, thread_id, latest_run_id,
               updated_at)
             SELECT sha256(convert_to('key-' || g, 'UTF8')), 'key-' || g, 'docker', 'sbx-' || g, 'thread', 'run',
               {now} - g FROM generate_series(1, {}) AS g",
            2 * SEEDED
        ),
        format!(
            "DELETE FROM {instances} WHERE key_hash IN
             (SELECT sha256(convert_to('key-' || g, 'UTF8')) FROM generate_series({}, {}) AS g)",
            SEEDED + 1,
            2 * SEEDED
        ),
        format!(
            "INSERT INTO {audit} (at, host, provider, provider_sandbox_id, sandbox_key, reason, result)
             SELECT {now} - g, 'host', 'docker', 'sbx-' || g, 'key-' || g, 'orphan',
               CASE WHEN g % 2 = 0 THEN 'destroyed' ELSE 'failed' END FROM generate_series(1, {SEEDED}) AS g"
        ),
        format!(
            "INSERT INTO {leaks} (sandbox_hash, provider, provider_sandbox_id, sandbox_key, run_id, last_error,
               failed_at, attempts)
             SELECT \"{schema}\".sandbox_registry_hash('docker', 'leak-' || g), 'docker', 'leak-' || g, 'k', 'r',
               'e', 1, 1 FROM generate_series(1, 1000) AS g"
        ),
        format!("ANALYZE {instances}, {audit}, {registry}, {leaks}"),
    ];
    let pool = pg_pool().await;
    for statement in &seed {
        sqlx::raw_sql(statement).execute(&pool).await.unwrap_or_else(|error| panic!("{statement}: {error}"));
    }
    let ids = listed_ids(2 * SEEDED);
    let ours = ["sandbox_instances", "sandbox_audit", "sandbox_registry", "sandbox_leaks"];
    for (name, sql, binds) in statements(store.scoped_sql(), &ids, now) {
        let explain = format!("EXPLAIN (FORMAT JSON) {sql}");
        let mut query = sqlx::query(&explain);
        for bind in binds {
            query = match bind {
                Bind::Text(text) => query.bind(text),
                Bind::Ids(ids) => query.bind(ids),
                Bind::Int(int) => query.bind(int),
            };
        }
        let row = query.fetch_one(&pool).await.unwrap_or_else(|error| panic!("{name}: {error}"));
        let plan: String = sqlx::Row::try_get_unchecked(&row, 0).unwrap();
        let plan: Value = serde_json::from_str(&plan).unwrap();
        let mut nodes = Vec::new();
        plan_nodes(&plan[0]["Plan"], &mut nodes);
        let scans: Vec<_> =
            nodes.iter().filter(|(node, table, _)| node == "Seq Scan" && ours.contains(&table.as_str())).collect();
        assert!(scans.is_empty(), "{name} scans a table: {nodes:?}\n{sql}");
        let indexes: Vec<&str> =
            nodes.iter().map(|(_, _, index)| index.as_str()).filter(|index| !index.is_empty()).collect();
        if name != "sweep_mark" {
            assert!(!indexes.is_empty(), "{name} uses no index: {nodes:?}\n{sql}");
        }
        // Indexes led by `provider` are ranges of the provider's rows.
        if BY_ID.contains(&name) {
            assert!(indexes.iter().all(|index| !index.contains("provider")), "{name} reads a range: {nodes:?}\n{sql}");
        }
        if name == "lookup_candidates" {
            let queue = indexes.iter().any(|index| index.contains("lookup_at"));
            assert!(queue, "{name} does not walk the queue's index: {nodes:?}\n{sql}");
        }
    }
    pool.close().await;
    store.close().await;
    drop_schema(&schema).await;
}

/// SQLite's write-back goes by the rowids its candidates read handed out,
/// and only to rows still holding an asked id: a row whose rowid another
/// sandbox's row took meanwhile is not touched; an id never handed out is
/// written by id.
#[tokio::test]
async fn sqlite_write_back_by_rowid_touches_only_the_asked_rows() {
    let path = temp_db_path("scoped_rowid");
    let store = SqliteSandboxInstanceStore::open(&path).await.unwrap();
    let t = wall_now() + 86_400_000;
    gone(&store, "ka", "a", t + 1_000).await;
    gone(&store, "kb", "b", t + 2_000).await;
    assert_eq!(store.lookup_candidates("docker", 0, 10).await.unwrap(), ["b", "a"]);
    // The row a's candidate was read from now holds z (same rowid).
    store_support::sqlite_exec(
        &path,
        "UPDATE sandbox_registry SET provider_sandbox_id = 'z' WHERE provider_sandbox_id = 'a'",
    )
    .await;
    gone(&store, "kc", "c", t + 3_000).await;
    store.lookup_checked("docker", &owned(&["a", "c"]), &owned(&["b"]), 5).await.unwrap();
    let mut connection = sqlx::sqlite::SqliteConnectOptions::new().filename(&path).connect().await.unwrap();
    let rows: Vec<(String, Option<i64>, bool)> = sqlx::query_as(
        "SELECT provider_sandbox_id, lookup_at, resolved_at IS NOT NULL FROM sandbox_registry ORDER BY provider_sandbox_id",
    )
    .fetch_all(&mut connection)
    .await
    .unwrap();
    let queued_at = |id: &str| rows.iter().find(|row| row.0 == id).map(|row| (row.1.is_some(), row.2));
    assert_eq!(queued_at("z"), Some((true, false)), "another sandbox's row: untouched ({rows:?})");
    assert_eq!(queued_at("c"), Some((false, true)), "never handed out: resolved by id ({rows:?})");
    assert_eq!(rows.iter().find(|row| row.0 == "b").map(|row| row.1), Some(Some(5)), "checked by rowid ({rows:?})");
    drop(connection);
    store.close().await;
    remove_db(&path);
}

/// SQLite's plan of one statement: its `detail` lines.
async fn sqlite_plan(path: &Path, sql: &str, binds: Vec<Bind>) -> Vec<String> {
    let mut connection = sqlx::sqlite::SqliteConnectOptions::new().filename(path).connect().await.unwrap();
    let explain = format!("EXPLAIN QUERY PLAN {sql}");
    let mut query = sqlx::query(&explain);
    for bind in binds {
        query = match bind {
            Bind::Text(text) => query.bind(text),
            Bind::Ids(ids) => query.bind(serde_json::json!(ids).to_string()),
            Bind::Int(int) => query.bind(int),
        };
    }
    let rows = query.fetch_all(&mut connection).await.unwrap_or_else(|error| panic!("{sql}: {error}"));
    rows.iter().map(|row| sqlx::Row::get::<String, _>(row, 3)).collect()
}

#[tokio::test]
async fn sqlite_scoped_queries_run_on_indexes() {
    const SEEDED: u64 = 10_000;
    let path = temp_db_path("scoped_plan");
    let store = SqliteSandboxInstanceStore::open(&path).await.unwrap();
    let now = wall_now() as i64;
    let seed = format!(
        "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {all})
         INSERT INTO sandbox_instances (sandbox_key, provider, provider_sandbox_id, thread_id, updated_at)
         SELECT 'key-' || n, 'docker', 'sbx-' || n, 'thread', {now} - n FROM g;
         DELETE FROM sandbox_instances WHERE CAST(substr(sandbox_key, 5) AS INTEGER) > {SEEDED};
         WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {SEEDED})
         INSERT INTO sandbox_audit (at, host, provider, provider_sandbox_id, reason, result)
         SELECT {now} - n, 'host', 'docker', 'sbx-' || n, 'orphan', 'destroyed' FROM g;",
        all = 2 * SEEDED,
    );
    store_support::sqlite_exec(&path, &seed).await;
    let ids = listed_ids(2 * SEEDED);
    for (name, sql, binds) in statements(SqliteSandboxInstanceStore::scoped_sql(), &ids, now) {
        let plan = sqlite_plan(&path, &sql, binds).await;
        for detail in &plan {
            let scans_ours = detail.starts_with("SCAN ") && !detail.contains("VIRTUAL TABLE");
            assert!(!scans_ours, "{name} scans a table ({detail}): {plan:?}\n{sql}");
            assert!(!detail.contains("TEMP B-TREE"), "{name} sorts what it read ({detail}): {plan:?}\n{sql}");
            // By key: an asked id, or (SQLite's write-back) a handed-out rowid.
            let by_key = ["provider_sandbox_id=?", "(rowid=?)"];
            let by_id = !detail.starts_with("SEARCH ") || by_key.iter().any(|key| detail.contains(key));
            assert!(by_id || !BY_ID.contains(&name), "{name} reads a range ({detail}): {plan:?}\n{sql}");
        }
        // The mark is one row read by its key (`INTEGER PRIMARY KEY`, the rowid).
        let indexed = |detail: &String| detail.contains(" INDEX ") || detail.contains("INTEGER PRIMARY KEY");
        assert!(plan.iter().any(indexed), "{name} uses no index: {plan:?}\n{sql}");
        if name == "lookup_candidates" {
            let queue = plan.iter().any(|detail| detail.contains("lookup_queue"));
            assert!(queue, "{name} does not walk the queue's index: {plan:?}\n{sql}");
        }
    }
    store.close().await;
    remove_db(&path);
}
