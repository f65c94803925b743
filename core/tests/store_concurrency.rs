//! Concurrent writers: no error, no lost write, and two retriers never
//! destroy the same leaked sandbox twice.
#![cfg(all(feature = "sqlite", feature = "postgres"))]

mod store_support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use sandbox_reclaim::{
    retry_leaks, LeakLedger, NewLeak, RetryOptions, RetrySummary, SandboxInstanceRecord, SandboxInstanceStore,
    SqliteSandboxInstanceStore,
};
use store_support::{drop_schema, pg_store, remove_db, temp_db_path, unique, ScriptedProvider};

type Store = Arc<dyn SandboxInstanceStore>;

/// Shared sandbox every task records as leaked, to contend on one ledger row.
const CONTENDED_ID: &str = "shared-sandbox";

fn record(task: usize, slot: u64, version: u64) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: format!("task{task}-key{slot}"),
        provider: "docker".to_owned(),
        provider_sandbox_id: format!("task{task}-ctr{slot}"),
        latest_snapshot_id: (version % 2 == 0).then(|| format!("snap-{version}")),
        thread_id: format!("thread-{task}"),
        latest_run_id: (version % 3 == 0).then(|| format!("run-{version}")),
        updated_at: version,
    }
}

fn leak(key: &str, provider_sandbox_id: &str, at: u64) -> NewLeak {
    NewLeak {
        key: key.to_owned(),
        provider: "docker".to_owned(),
        provider_sandbox_id: provider_sandbox_id.to_owned(),
        run_id: "run".to_owned(),
        error_message: "engine down".to_owned(),
        failed_at: at,
    }
}

/// What one task expects to find afterwards.
#[derive(Default)]
struct Expected {
    records: HashMap<String, Option<SandboxInstanceRecord>>,
    leak_attempts: HashMap<String, u32>,
    contended: u32,
}

/// `ops` mixed operations on the task's own keys (checking every read
/// against what it wrote), plus a leak recording of the contended sandbox
/// every 10th op.
async fn mixed_ops(store: Store, task: usize, ops: u64) -> Expected {
    let ledger = store.leak_ledger().unwrap();
    let mut expected = Expected::default();
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64 ^ task as u64;
    for version in 1..=ops {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let slot = (seed >> 33) % 25;
        let key = format!("task{task}-key{slot}");
        match (seed >> 20) % 20 {
            0..=9 => {
                let written = record(task, slot, version);
                store.upsert(&written).await.unwrap();
                expected.records.insert(key, Some(written));
            }
            10..=14 => {
                let got = store.get(&key).await.unwrap();
                assert_eq!(&got, expected.records.get(&key).unwrap_or(&None), "task {task} read its own write");
            }
            15..=17 => {
                store.delete(&key).await.unwrap();
                expected.records.insert(key, None);
            }
            _ => {
                let id = format!("task{task}-ctr{slot}");
                ledger.delete_recording_leak(&key, leak(&key, &id, version)).await.unwrap();
                expected.records.insert(key, None);
                *expected.leak_attempts.entry(id).or_default() += 1;
            }
        }
        if version % 10 == 0 {
            ledger.delete_recording_leak("nobody", leak("nobody", CONTENDED_ID, version)).await.unwrap();
            expected.contended += 1;
        }
    }
    expected
}

/// Runs `mixed_ops` on every handle at once (task i on handle i % n) and
/// checks the final state, read through a handle of its own.
async fn hammer(handles: Vec<Store>, tasks: usize, ops: u64, check: Store) {
    let running: Vec<_> =
        (0..tasks).map(|task| tokio::spawn(mixed_ops(Arc::clone(&handles[task % handles.len()]), task, ops))).collect();
    let mut contended = 0;
    let mut leak_attempts = HashMap::new();
    for (task, joined) in running.into_iter().enumerate() {
        let expected = joined.await.unwrap_or_else(|panic| panic!("task {task} failed: {panic}"));
        for (key, record) in expected.records {
            assert_eq!(check.get(&key).await.unwrap(), record, "final state of {key}");
        }
        leak_attempts.extend(expected.leak_attempts);
        contended += expected.contended;
    }
    let leaks = check.leak_ledger().unwrap().list_leaks(Some("docker")).await.unwrap();
    let found: HashMap<_, _> = leaks.iter().map(|leak| (leak.provider_sandbox_id.clone(), leak.attempts)).collect();
    assert_eq!(found.get(CONTENDED_ID).copied(), Some(contended), "no lost increment on the contended leak");
    for (id, attempts) in &leak_attempts {
        assert_eq!(found.get(id), Some(attempts), "attempts of {id}");
    }
    assert_eq!(found.len(), leak_attempts.len() + 1, "no unexpected leaks");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_four_handles_on_one_file_lose_no_write() {
    let path = temp_db_path("hammer");
    let mut handles: Vec<Store> = Vec::new();
    for _ in 0..4 {
        handles.push(Arc::new(SqliteSandboxInstanceStore::open(&path).await.unwrap()));
    }
    let check: Store = Arc::new(SqliteSandboxInstanceStore::open(&path).await.unwrap());
    hammer(handles, 4, 2_000, check).await;
    remove_db(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_sixteen_tasks_lose_no_write() {
    let schema = unique("hammer");
    let mut handles: Vec<Store> = Vec::new();
    for _ in 0..4 {
        handles.push(Arc::new(pg_store(&schema).await));
    }
    let check: Store = Arc::new(pg_store(&schema).await);
    hammer(handles, 16, 500, check).await;
    drop_schema(&schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_concurrent_opens_of_a_new_file_all_succeed() {
    let path = temp_db_path("open");
    let opening: Vec<_> = (0..6)
        .map(|_| {
            let path = path.clone();
            tokio::spawn(async move { SqliteSandboxInstanceStore::open(&path).await })
        })
        .collect();
    for opened in opening {
        let store = opened.await.unwrap().expect("every concurrent open succeeds");
        assert_eq!(store.get("missing").await.unwrap(), None);
    }
    remove_db(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_concurrent_connects_to_a_new_schema_all_succeed() {
    let schema = unique("connect");
    let connecting: Vec<_> = (0..6)
        .map(|_| {
            let schema = schema.clone();
            tokio::spawn(async move { pg_store(&schema).await })
        })
        .collect();
    for connected in connecting {
        let store = connected.await.unwrap();
        assert_eq!(store.get("missing").await.unwrap(), None);
    }
    drop_schema(&schema).await;
}

/// Two hosts (two pools) retrying the same ledger at once: every leaked
/// sandbox is destroyed exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_concurrent_retries_never_destroy_twice() {
    const LEAKS: usize = 120;
    let schema = unique("retry");
    let first = pg_store(&schema).await;
    let second = pg_store(&schema).await;
    for index in 0..LEAKS {
        let key = format!("k{index}");
        first.delete_recording_leak(&key, leak(&key, &format!("ctr-{index}"), 1)).await.unwrap();
    }
    let provider = Arc::new(ScriptedProvider { delay: Duration::from_millis(3), ..ScriptedProvider::new("docker") });
    let retrier = |store: sandbox_reclaim::PostgresSandboxInstanceStore, provider: Arc<ScriptedProvider>| async move {
        let mut total = RetrySummary::default();
        let options = RetryOptions { limit: 7, ..RetryOptions::default() };
        loop {
            let summary = retry_leaks(provider.as_ref(), &store, options).await.unwrap();
            if summary.retried == 0 {
                return total;
            }
            total.retried += summary.retried;
            total.destroyed += summary.destroyed;
        }
    };
    let (a, b) = tokio::join!(
        tokio::spawn(retrier(first.clone(), Arc::clone(&provider))),
        tokio::spawn(retrier(second, Arc::clone(&provider)))
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.destroyed + b.destroyed, LEAKS as u64);
    assert!(a.destroyed > 0 && b.destroyed > 0, "both retriers took part: {a:?} {b:?}");
    let calls = provider.calls();
    assert_eq!(calls.len(), LEAKS);
    let twice: Vec<_> = calls.iter().filter(|(_, count)| **count != 1).collect();
    assert!(twice.is_empty(), "destroyed more than once: {twice:?}");
    assert_eq!(first.count_leaks(None).await.unwrap(), 0);
    drop_schema(&schema).await;
}
