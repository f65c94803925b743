//! PostgreSQL's reads and deletes share statements under load (see
//! `core/src/stores/coalesce.rs`): every caller still gets exactly its own
//! key's answer, whatever else its statement carried.
#![cfg(feature = "postgres")]

mod store_support;

use futures_util::future::join_all;
use sandbox_reclaim::{SandboxInstanceRecord, SandboxInstanceStore, StoreError};
use store_support::{drop_schema, pg_exec, pg_store, unique};

fn record(key: &str, n: usize) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: key.to_owned(),
        provider: "docker".to_owned(),
        provider_sandbox_id: format!("ctr-{n}"),
        latest_snapshot_id: None,
        thread_id: format!("thread-{n}"),
        latest_run_id: None,
        updated_at: n as u64,
    }
}

/// Keys of every shape the digest must agree on with the database's own
/// `sha256(convert_to(key, 'UTF8'))`: ASCII, accents, astral characters.
fn key(n: usize) -> String {
    match n % 3 {
        0 => format!("thread-{n}:sandbox"),
        1 => format!("fil-é-{n}:sandbox"),
        _ => format!("🧵{n}:📦"),
    }
}

#[tokio::test]
async fn concurrent_gets_and_deletes_each_answer_their_own_key() {
    let schema = unique("batched");
    let store = pg_store(&schema).await;
    for n in 0..60 {
        store.upsert(&record(&key(n), n)).await.unwrap();
    }
    // 0..60 stored, 60..120 not; every key asked twice in the same burst.
    let asked: Vec<usize> = (0..120).chain(0..120).collect();
    let store = &store;
    let answers = join_all(asked.iter().map(|n| async move { store.get(&key(*n)).await })).await;
    for (n, answer) in asked.iter().zip(answers) {
        let expected = (*n < 60).then(|| record(&key(*n), *n));
        assert_eq!(answer.unwrap(), expected, "get of key {n}");
    }
    // Deletes of stored and missing keys together, then nothing is left.
    let deletes = join_all((0..120).map(|n| async move { store.delete(&key(n)).await })).await;
    assert!(deletes.iter().all(Result::is_ok), "{deletes:?}");
    let after = join_all((0..60).map(|n| async move { store.get(&key(n)).await.unwrap() })).await;
    assert!(after.iter().all(Option::is_none), "every record deleted");
    drop_schema(&schema).await;
}

#[tokio::test]
async fn an_unreadable_row_fails_only_its_own_get() {
    let schema = unique("batched_bad");
    let store = pg_store(&schema).await;
    for n in 0..20 {
        store.upsert(&record(&key(n), n)).await.unwrap();
    }
    // A row no record can be read from (a negative time, written around the table's check).
    let table = format!("\"{schema}\".\"sandbox_instances\"");
    pg_exec(&format!("ALTER TABLE {table} DROP CONSTRAINT sandbox_instances_updated_at_check")).await;
    pg_exec(&format!("UPDATE {table} SET updated_at = -1 WHERE sandbox_key = '{}'", key(4))).await;
    let asked: Vec<usize> = (0..20).chain([4]).collect();
    let store = &store;
    let answers = join_all(asked.iter().map(|n| async move { store.get(&key(*n)).await })).await;
    for (n, answer) in asked.iter().zip(answers) {
        if *n == 4 {
            assert!(matches!(answer, Err(StoreError::Backend(_))), "key 4: {answer:?}");
        } else {
            assert_eq!(answer.unwrap(), Some(record(&key(*n), *n)), "get of key {n}");
        }
    }
    drop_schema(&schema).await;
}

#[tokio::test]
async fn a_connection_the_server_dropped_while_idle_is_replaced_before_use() {
    // Only this test's connections carry this name, so only they are dropped.
    let name = unique("stale");
    let schema = unique("batched_stale");
    let separator = if store_support::pg_url().contains('?') { '&' } else { '?' };
    let url = format!("{}{separator}application_name={name}", store_support::pg_url());
    let options = sandbox_reclaim::PostgresOptions { max_connections: 1, ..store_support::pg_options(&schema) };
    let store = sandbox_reclaim::PostgresSandboxInstanceStore::connect(&url, options).await.unwrap();
    store.upsert(&record(&key(0), 0)).await.unwrap();
    // A restarted server, or an idle timeout: the pooled connection is gone.
    pg_exec(&format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '{name}'")).await;
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    assert_eq!(store.get(&key(0)).await.unwrap(), Some(record(&key(0), 0)), "answered on a fresh connection");
    drop_schema(&schema).await;
}
