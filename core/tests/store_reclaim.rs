//! Reclaims through the durable stores: a failed destroy leaves a leak entry
//! (in the same transaction as the record's removal), `retry_leaks` retries
//! it, and a failure inside that transaction leaves the record in place.
#![cfg(all(feature = "sqlite", feature = "postgres"))]

mod store_support;

use sandbox_reclaim::{
    reclaim_sandbox, retry_leaks, sandbox_reclaimer, ReclaimOptions, ReclaimOutcome, ReclaimerError, RetryOptions,
    RetrySummary, RunRecord, RunStatus, SandboxInstanceRecord, SandboxInstanceStore, SqliteSandboxInstanceStore,
};
use store_support::{
    drop_schema, pg_exec, pg_store, remove_db, sqlite_exec, temp_db_path, unique, Backend, Fresh, ScriptedProvider,
};

fn instance(key: &str, provider_sandbox_id: &str) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: key.to_owned(),
        provider: "docker".to_owned(),
        provider_sandbox_id: provider_sandbox_id.to_owned(),
        latest_snapshot_id: None,
        thread_id: "thread-1".to_owned(),
        latest_run_id: Some("run-1".to_owned()),
        updated_at: 1,
    }
}

fn run(run_id: &str, key: &str) -> RunRecord {
    RunRecord::new(run_id, "thread-1", RunStatus::Completed).with_sandbox_key(key)
}

async fn failed_destroy_records_a_leak(backend: Backend) {
    let fresh = Fresh::new(backend).await;
    let store = fresh.store.as_ref();
    store.upsert(&instance("k1", "ctr-1")).await.unwrap();
    store.upsert(&instance("k2", "ctr-2")).await.unwrap();
    let provider = ScriptedProvider::failing("docker");
    let options = ReclaimOptions { provider: &provider, instances: store, logger: None, destroy_timeout: None };

    let outcome = reclaim_sandbox(&run("run-1", "k1"), options).await.unwrap();
    assert_eq!(outcome, ReclaimOutcome::DestroyFailed);
    let error = sandbox_reclaimer(&run("run-2", "k2"), options).await.unwrap_err();
    assert!(matches!(error, ReclaimerError::ReclaimFailed(_)), "{backend:?}: {error}");

    assert_eq!(store.get("k1").await.unwrap(), None, "{backend:?}: the record is removed, as in the reference");
    assert_eq!(store.get("k2").await.unwrap(), None);
    let leaks = fresh.ledger().list_leaks(Some("docker")).await.unwrap();
    let ids: Vec<_> = leaks.iter().map(|leak| (leak.key.as_str(), leak.provider_sandbox_id.as_str())).collect();
    assert_eq!(ids, [("k1", "ctr-1"), ("k2", "ctr-2")], "{backend:?}");
    assert_eq!(leaks[0].run_id, "run-1");
    assert_eq!(leaks[1].run_id, "run-2");
    assert_eq!(leaks[0].last_error, "destroy of ctr-1 failed: engine unreachable");
    assert_eq!(leaks[0].attempts, 1);
    assert!(leaks[0].failed_at > 1_600_000_000_000, "failedAt is wall-clock epoch milliseconds");

    // Retry: ctr-1 is now destroyable, ctr-2 still fails.
    let retrier = ScriptedProvider::new("docker");
    retrier.fail_ids.lock().unwrap().push("ctr-2".to_owned());
    let summary = retry_leaks(&retrier, fresh.ledger(), RetryOptions::default()).await.unwrap();
    assert_eq!(summary, RetrySummary { retried: 2, destroyed: 1, still_failing: 1, lease_lost: 0 }, "{backend:?}");
    let left = fresh.ledger().list_leaks(None).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!((left[0].provider_sandbox_id.as_str(), left[0].attempts), ("ctr-2", 2));
    assert_eq!(left[0].last_error, "destroy of ctr-2 failed: engine unreachable");
    // The failure released the claim, so the next retry takes it again.
    retrier.fail_ids.lock().unwrap().clear();
    let summary = retry_leaks(&retrier, fresh.ledger(), RetryOptions::default()).await.unwrap();
    assert_eq!(summary, RetrySummary { retried: 1, destroyed: 1, still_failing: 0, lease_lost: 0 });
    assert_eq!(fresh.ledger().count_leaks(None).await.unwrap(), 0);
    // Another provider's retry never touches docker's leaks.
    let other = ScriptedProvider::new("local");
    assert_eq!(retry_leaks(&other, fresh.ledger(), RetryOptions::default()).await.unwrap(), RetrySummary::default());
    fresh.cleanup().await;
}

#[tokio::test]
async fn in_memory_failed_destroy_records_a_leak() {
    failed_destroy_records_a_leak(Backend::Memory).await;
}

#[tokio::test]
async fn sqlite_failed_destroy_records_a_leak() {
    failed_destroy_records_a_leak(Backend::Sqlite).await;
}

#[tokio::test]
async fn postgres_failed_destroy_records_a_leak() {
    failed_destroy_records_a_leak(Backend::Postgres).await;
}

async fn successful_destroy_records_nothing(backend: Backend) {
    let fresh = Fresh::new(backend).await;
    fresh.store.upsert(&instance("k", "ctr-1")).await.unwrap();
    let provider = ScriptedProvider::new("docker");
    let options =
        ReclaimOptions { provider: &provider, instances: fresh.store.as_ref(), logger: None, destroy_timeout: None };
    assert_eq!(reclaim_sandbox(&run("run-1", "k"), options).await.unwrap(), ReclaimOutcome::Destroyed);
    assert_eq!(fresh.store.get("k").await.unwrap(), None);
    assert_eq!(fresh.ledger().count_leaks(None).await.unwrap(), 0, "{backend:?}");
    fresh.cleanup().await;
}

#[tokio::test]
async fn sqlite_successful_destroy_records_nothing() {
    successful_destroy_records_nothing(Backend::Sqlite).await;
}

#[tokio::test]
async fn postgres_successful_destroy_records_nothing() {
    successful_destroy_records_nothing(Backend::Postgres).await;
}

/// If recording the leak fails, the record's delete is rolled back with it:
/// the sandbox stays reachable and the reclaim reports the store error.
#[tokio::test]
async fn sqlite_leak_write_failure_keeps_the_record() {
    let path = temp_db_path("atomic");
    let store = SqliteSandboxInstanceStore::open(&path).await.unwrap();
    store.upsert(&instance("k", "ctr-1")).await.unwrap();
    sqlite_exec(
        &path,
        "CREATE TRIGGER refuse_leaks BEFORE INSERT ON sandbox_leaks BEGIN SELECT RAISE(ABORT, 'ledger full'); END;",
    )
    .await;
    let provider = ScriptedProvider::failing("docker");
    let options = ReclaimOptions { provider: &provider, instances: &store, logger: None, destroy_timeout: None };
    let error = reclaim_sandbox(&run("run-1", "k"), options).await.unwrap_err();
    assert!(error.to_string().contains("ledger full"), "{error}");
    assert_eq!(store.get("k").await.unwrap(), Some(instance("k", "ctr-1")), "the delete was rolled back");
    store.close().await;
    remove_db(&path);
}

#[tokio::test]
async fn postgres_leak_write_failure_keeps_the_record() {
    let schema = unique("atomic");
    let store = pg_store(&schema).await;
    store.upsert(&instance("k", "ctr-1")).await.unwrap();
    pg_exec(&format!(
        "CREATE FUNCTION \"{schema}\".refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'ledger full'; END $$;
         CREATE TRIGGER refuse_leaks BEFORE INSERT ON \"{schema}\".sandbox_leaks FOR EACH ROW EXECUTE FUNCTION \"{schema}\".refuse();"
    ))
    .await;
    let provider = ScriptedProvider::failing("docker");
    let options = ReclaimOptions { provider: &provider, instances: &store, logger: None, destroy_timeout: None };
    let error = reclaim_sandbox(&run("run-1", "k"), options).await.unwrap_err();
    assert!(error.to_string().contains("ledger full"), "{error}");
    assert_eq!(store.get("k").await.unwrap(), Some(instance("k", "ctr-1")), "the delete was rolled back");
    store.close().await;
    drop_schema(&schema).await;
}
