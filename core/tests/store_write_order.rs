//! The store contract's write order, on every native store: a write a caller
//! started commits in issue order or not at all. A caller that goes away
//! (a dropped future: `timeout`, a cancelled task) never leaves its write
//! queued to land after later writes, and an `upsert` issued after a
//! `delete` of the same key always wins.

mod store_support;

use std::sync::Arc;
use std::time::Duration;

use sandbox_reclaim::{SandboxInstanceRecord, SandboxInstanceStore};
use store_support::{Backend, Fresh};

fn record(key: &str, updated_at: u64) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: key.to_owned(),
        provider: "docker".into(),
        provider_sandbox_id: format!("c-{key}-{updated_at}"),
        latest_snapshot_id: None,
        thread_id: format!("t-{key}"),
        latest_run_id: None,
        updated_at,
    }
}

/// Polls `write` once, then drops it: a caller cancelled mid-write.
async fn start_then_drop<F: std::future::Future>(write: F) {
    let _ = tokio::time::timeout(Duration::ZERO, write).await;
}

/// 15 concurrent deletes keep the writer busy; the delete of `live` is
/// started and dropped, then the resumed run re-upserts `live`. Whatever
/// commits afterwards, the fresh record must stay.
async fn cancelled_delete_never_lands_after_a_later_upsert(backend: Backend) {
    let fresh = Fresh::new(backend).await;
    let store: Arc<dyn SandboxInstanceStore> = Arc::clone(&fresh.store);
    for trial in 0..40 {
        let live = format!("live-{trial}");
        store.upsert(&record(&live, 1)).await.unwrap();
        for other in 0..15 {
            store.upsert(&record(&format!("o-{trial}-{other}"), 1)).await.unwrap();
        }
        let others: Vec<_> = (0..15)
            .map(|other| {
                let store = Arc::clone(&store);
                tokio::spawn(async move { store.delete(&format!("o-{trial}-{other}")).await })
            })
            .collect();
        tokio::task::yield_now().await;
        start_then_drop(store.delete(&live)).await;
        let resumed = record(&live, 2);
        store.upsert(&resumed).await.unwrap();
        for other in others {
            other.await.unwrap().unwrap();
        }
        // Later writes (another reclaim's delete) flush whatever is queued.
        store.upsert(&record("flush", 1)).await.unwrap();
        store.delete("flush").await.unwrap();
        assert_eq!(
            store.get(&live).await.unwrap(),
            Some(resumed),
            "{backend:?} trial {trial}: a cancelled delete landed after the fresh upsert"
        );
    }
    fresh.cleanup().await;
}

/// Callers dropped mid-write never make another caller's committed write
/// read as lost, and every delete still lands exactly once.
async fn dropped_callers_leave_every_other_answer_true(backend: Backend) {
    let fresh = Fresh::new(backend).await;
    let store: Arc<dyn SandboxInstanceStore> = Arc::clone(&fresh.store);
    for n in 0..60 {
        store.upsert(&record(&format!("k{n}"), 1)).await.unwrap();
    }
    let writes: Vec<_> = (0..60)
        .map(|n| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let key = format!("k{n}");
                if n % 4 == 0 {
                    start_then_drop(store.delete(&key)).await;
                    Ok(())
                } else {
                    store.delete(&key).await
                }
            })
        })
        .collect();
    for write in writes {
        write.await.unwrap().expect("a write that committed is answered Ok");
    }
    // Writes whose callers went away were issued, so they still commit, in order.
    store.upsert(&record("flush", 1)).await.unwrap();
    store.delete("flush").await.unwrap();
    for n in 0..60 {
        assert_eq!(store.get(&format!("k{n}")).await.unwrap(), None, "{backend:?}: k{n} deleted");
    }
    fresh.cleanup().await;
}

/// Writes to one key, issued in a row without waiting, commit in that order.
async fn writes_to_one_key_commit_in_issue_order(backend: Backend) {
    let fresh = Fresh::new(backend).await;
    let store: Arc<dyn SandboxInstanceStore> = Arc::clone(&fresh.store);
    for trial in 0..20 {
        let key = format!("seq-{trial}");
        store.upsert(&record(&key, 1)).await.unwrap();
        let (a, b) = (Arc::clone(&store), Arc::clone(&store));
        let (delete_key, upsert_key) = (key.clone(), key.clone());
        // Both issued before either is awaited to its end: delete, then upsert.
        let mut delete = Box::pin(async move { a.delete(&delete_key).await });
        let finished = tokio::time::timeout(Duration::ZERO, &mut delete).await.is_ok();
        let upsert = tokio::spawn(async move { b.upsert(&record(&upsert_key, 3)).await });
        upsert.await.unwrap().unwrap();
        if !finished {
            delete.await.unwrap();
        }
        assert_eq!(store.get(&key).await.unwrap(), Some(record(&key, 3)), "{backend:?} trial {trial}");
    }
    fresh.cleanup().await;
}

macro_rules! for_every_store {
    ($($name:ident),*) => {
        mod memory {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { super::$name(super::Backend::Memory).await })*
        }
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { super::$name(super::Backend::Sqlite).await })*
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() { super::$name(super::Backend::Postgres).await })*
        }
    };
}

for_every_store!(
    cancelled_delete_never_lands_after_a_later_upsert,
    dropped_callers_leave_every_other_answer_true,
    writes_to_one_key_commit_in_issue_order
);
