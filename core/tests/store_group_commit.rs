//! SQLite's group commit: concurrent reclaim-path writes share transactions
//! and every one of them lands, with its own answer.

use std::sync::Arc;

use sandbox_reclaim::{LeakLedger, NewLeak, SandboxInstanceRecord, SandboxInstanceStore, SqliteSandboxInstanceStore};

fn record(n: usize) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: format!("k{n}"),
        provider: "docker".into(),
        provider_sandbox_id: format!("c{n}"),
        latest_snapshot_id: None,
        thread_id: format!("t{n}"),
        latest_run_id: None,
        updated_at: 1,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_deletes_and_leak_records_all_land() {
    let dir = std::env::temp_dir().join(format!("sandbox-reclaim-group-commit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(SqliteSandboxInstanceStore::open(dir.join("store.sqlite")).await.unwrap());
    for n in 0..300 {
        store.upsert(&record(n)).await.unwrap();
    }
    let writes = (0..300).map(|n| {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            if n % 3 == 0 {
                let leak = NewLeak {
                    key: format!("k{n}"),
                    provider: "docker".into(),
                    provider_sandbox_id: format!("c{n}"),
                    run_id: format!("r{n}"),
                    error_message: "boom".into(),
                    failed_at: 5,
                };
                store.delete_recording_leak(&format!("k{n}"), leak).await
            } else {
                store.delete(&format!("k{n}")).await
            }
        })
    });
    for write in futures_join(writes.collect()).await {
        write.unwrap().unwrap();
    }
    for n in 0..300 {
        assert_eq!(store.get(&format!("k{n}")).await.unwrap(), None, "k{n} deleted");
    }
    let leaks = store.list_leaks(None).await.unwrap();
    assert_eq!(leaks.len(), 100, "one leak per failed destroy");
    assert!(leaks.iter().all(|leak| leak.last_error == "boom" && leak.attempts == 1));
    // A refused write fails alone, before it joins a batch.
    let bad = NewLeak {
        key: "k1".into(),
        provider: String::new(),
        provider_sandbox_id: "c1".into(),
        run_id: "r1".into(),
        error_message: "boom".into(),
        failed_at: 5,
    };
    assert!(store.delete_recording_leak("k1", bad).await.is_err());
    store.close().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

async fn futures_join<T>(handles: Vec<tokio::task::JoinHandle<T>>) -> Vec<Result<T, tokio::task::JoinError>> {
    let mut results = Vec::with_capacity(handles.len());
    for handle in handles {
        results.push(handle.await);
    }
    results
}
