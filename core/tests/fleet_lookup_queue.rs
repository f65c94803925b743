//! The lookup remembers what it learned and looks where leaks are (#38):
//! with a long registry of long-gone sandboxes and one fresh leftover (an
//! unlabelled sandbox whose record was just deleted, as a swallowed destroy
//! leaves it), the leftover is destroyed in the first pass, no id is asked
//! twice over 30 passes, and a pass never asks for more than the queue holds.
//! Run on every store this crate ships.

mod store_support;

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use sandbox_reclaim::runtime::clock::now_millis;
use sandbox_reclaim::{
    reconcile, FleetStore, InMemorySandboxInstanceStore, ListedSandbox, ProviderError, ReconcileOptions,
    SandboxInstanceRecord, SandboxInstanceStore, SqliteSandboxInstanceStore,
};

/// A vendor account holding `alive` (unlabelled); it lists nothing of them
/// (TanStack's providers cannot filter unlabelled sandboxes) and answers a
/// get by id. Counts every id asked.
struct Vendor {
    alive: Mutex<Vec<String>>,
    asked: Mutex<HashMap<String, u32>>,
    per_pass: Mutex<Vec<usize>>,
    destroyed: Mutex<Vec<String>>,
}

impl Vendor {
    fn new(alive: &[&str]) -> Self {
        Self {
            alive: Mutex::new(alive.iter().map(|id| id.to_string()).collect()),
            asked: Mutex::default(),
            per_pass: Mutex::default(),
            destroyed: Mutex::default(),
        }
    }
}

#[async_trait]
impl sandbox_reclaim::SandboxProvider for Vendor {
    fn name(&self) -> &str {
        "vendor"
    }
    async fn destroy(&self, id: &str) -> Result<(), ProviderError> {
        self.alive.lock().unwrap().retain(|alive| alive != id);
        self.destroyed.lock().unwrap().push(id.to_owned());
        Ok(())
    }
    fn can_list(&self) -> bool {
        true
    }
    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        Ok(Vec::new())
    }
    fn can_lookup(&self) -> bool {
        true
    }
    async fn lookup_sandboxes(&self, ids: &[String]) -> Result<Vec<ListedSandbox>, ProviderError> {
        let mut asked = self.asked.lock().unwrap();
        for id in ids {
            *asked.entry(id.clone()).or_default() += 1;
        }
        self.per_pass.lock().unwrap().push(ids.len());
        let alive = self.alive.lock().unwrap();
        let old = now_millis() - 3_600_000;
        Ok(ids
            .iter()
            .filter(|id| alive.contains(id))
            .map(|id| ListedSandbox { id: id.clone(), created_at: Some(old), owner: None, key: None, deleting: false })
            .collect())
    }
}

fn record(key: &str, sandbox: &str, updated_at: u64) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: key.into(),
        provider: "vendor".into(),
        provider_sandbox_id: sandbox.into(),
        latest_snapshot_id: None,
        thread_id: format!("thread-{key}"),
        latest_run_id: None,
        updated_at,
    }
}

/// `gone` records of long-gone sandboxes written and deleted, then the
/// fresh leftover's: the registry's queue, oldest deletion first.
async fn seed(store: &dyn SandboxInstanceStore, gone: usize) {
    let written = now_millis() - 86_400_000;
    for n in 0..gone {
        store.upsert(&record(&format!("k{n}"), &format!("gone-{n}"), written)).await.unwrap();
        store.delete(&format!("k{n}")).await.unwrap();
    }
    store.upsert(&record("fresh", "left-1", now_millis())).await.unwrap();
    store.delete("fresh").await.unwrap();
}

async fn thirty_passes(store: &dyn FleetStore, gone: usize) {
    let vendor = Vendor::new(&["left-1"]);
    for pass in 0..30 {
        let report = reconcile(ReconcileOptions::new(vec![&vendor], store)).await.unwrap();
        let orphans = &report.providers[0].orphans;
        if pass == 0 {
            assert_eq!(*vendor.destroyed.lock().unwrap(), ["left-1"], "the fresh leftover goes in the first pass");
            assert_eq!(orphans.destroyed, 1);
        }
    }
    let asked = vendor.asked.lock().unwrap();
    let twice: Vec<_> = asked.iter().filter(|(_, count)| **count > 1).collect();
    assert!(twice.is_empty(), "asked twice within 30 passes: {twice:?}");
    let per_pass = vendor.per_pass.lock().unwrap();
    let unresolved = gone + 1;
    // Once every candidate was answered gone, a pass has nothing to ask.
    assert_eq!(per_pass.len(), 30.min(unresolved.div_ceil(1000)), "a lookup per pass while candidates remain");
    assert!(per_pass.iter().all(|&count| count <= 1000), "at most `limit` a pass: {per_pass:?}");
    assert_eq!(asked.len(), 30_000.min(unresolved), "every pass asked only unresolved, never-asked candidates");
    assert_eq!(*vendor.destroyed.lock().unwrap(), ["left-1"], "nothing else was ever destroyed");
}

#[tokio::test]
async fn in_memory_the_leftover_goes_first_and_nothing_is_asked_twice() {
    let store = InMemorySandboxInstanceStore::with_ledger();
    seed(&store, 100_000).await;
    thirty_passes(&store, 100_000).await;
}

#[tokio::test]
async fn sqlite_the_leftover_goes_first_and_nothing_is_asked_twice() {
    let path = store_support::temp_db_path("lookup-queue");
    let store = SqliteSandboxInstanceStore::open(&path).await.unwrap();
    // Written through the package's own API (its triggers queue each
    // deletion); 5,000 keep the test quick: the queue empties in 6 passes,
    // and the 24 after it ask nothing.
    seed(&store, 5_000).await;
    thirty_passes(&store, 5_000).await;
    store.close().await;
    store_support::remove_db(&path);
}

#[tokio::test]
async fn postgres_the_leftover_goes_first_and_nothing_is_asked_twice() {
    let store = store_support::pg_store(&store_support::unique("lookup_queue")).await;
    seed(&store, 5_000).await;
    thirty_passes(&store, 5_000).await;
    store.close().await;
}
