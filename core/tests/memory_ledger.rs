//! The in-memory store's ledger and `retry_leaks`, end to end through the driver.

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use sandbox_reclaim::{
    reclaim_sandbox, retry_leaks, sandbox_reclaimer, InMemorySandboxInstanceStore, LeakLedger, ProviderError,
    ReclaimOptions, ReclaimOutcome, ReclaimerError, RetryOptions, RunRecord, RunStatus, SandboxInstanceRecord,
    SandboxInstanceStore, SandboxProvider,
};

/// Fails to destroy the ids in `failing`; records every destroy.
struct FlakyProvider {
    failing: Mutex<Vec<String>>,
    destroyed: Mutex<Vec<String>>,
}

#[async_trait]
impl SandboxProvider for FlakyProvider {
    fn name(&self) -> &str {
        "docker"
    }
    async fn destroy(&self, id: &str) -> Result<(), ProviderError> {
        if self.failing.lock().unwrap().iter().any(|failing| failing == id) {
            return Err(ProviderError::backend(format!("engine refused {id}")));
        }
        self.destroyed.lock().unwrap().push(id.to_owned());
        Ok(())
    }
}

fn instance(key: &str, id: &str) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: key.into(),
        provider: "docker".into(),
        provider_sandbox_id: id.into(),
        latest_snapshot_id: None,
        thread_id: "t".into(),
        latest_run_id: None,
        updated_at: 1,
    }
}

#[tokio::test]
async fn a_failed_destroy_is_remembered_and_retried_until_it_succeeds() {
    let store = InMemorySandboxInstanceStore::with_ledger();
    store.upsert(&instance("k1", "c1")).await.unwrap();
    store.upsert(&instance("k2", "c2")).await.unwrap();
    let provider = FlakyProvider { failing: Mutex::new(vec!["c1".into()]), destroyed: Mutex::default() };
    let options = ReclaimOptions { provider: &provider, instances: &store, logger: None, destroy_timeout: None };

    let first = RunRecord::new("r1", "t", RunStatus::Completed).with_sandbox_key("k1");
    assert_eq!(reclaim_sandbox(&first, options).await.unwrap(), ReclaimOutcome::DestroyFailed);
    let second = RunRecord::new("r2", "t", RunStatus::Completed).with_sandbox_key("k2");
    assert!(sandbox_reclaimer(&second, options).await.is_ok());

    assert!(store.get("k1").await.unwrap().is_none(), "the record is deleted as in the reference");
    let leaks = store.list_leaks(Some("docker")).await.unwrap();
    assert_eq!(leaks.len(), 1);
    assert_eq!((leaks[0].key.as_str(), leaks[0].provider_sandbox_id.as_str()), ("k1", "c1"));
    assert_eq!((leaks[0].attempts, leaks[0].last_error.as_str()), (1, "engine refused c1"));

    let summary = retry_leaks(&provider, &store, RetryOptions::default()).await.unwrap();
    assert_eq!((summary.retried, summary.destroyed, summary.still_failing), (1, 0, 1));
    assert_eq!(store.list_leaks(None).await.unwrap()[0].attempts, 2);

    provider.failing.lock().unwrap().clear();
    let summary = retry_leaks(&provider, &store, RetryOptions::default()).await.unwrap();
    assert_eq!((summary.retried, summary.destroyed, summary.still_failing), (1, 1, 0));
    assert_eq!(store.count_leaks(None).await.unwrap(), 0);
    assert_eq!(*provider.destroyed.lock().unwrap(), vec!["c2", "c1"]);
}

#[tokio::test]
async fn a_claimed_leak_is_not_claimed_again_until_its_lease_expires() {
    let store = InMemorySandboxInstanceStore::with_ledger();
    store.upsert(&instance("k1", "c1")).await.unwrap();
    let provider = FlakyProvider { failing: Mutex::new(vec!["c1".into()]), destroyed: Mutex::default() };
    let options = ReclaimOptions { provider: &provider, instances: &store, logger: None, destroy_timeout: None };
    let record = RunRecord::new("r1", "t", RunStatus::Failed).with_sandbox_key("k1");
    let error = sandbox_reclaimer(&record, options).await.unwrap_err();
    assert!(matches!(error, ReclaimerError::ReclaimFailed(ref failure) if failure.run_id == "r1"));

    let lease = Duration::from_millis(50);
    assert_eq!(store.claim_leaks("docker", 10, lease).await.unwrap().len(), 1);
    assert!(store.claim_leaks("docker", 10, lease).await.unwrap().is_empty(), "held by the first claim");
    assert!(store.claim_leaks("daytona", 10, lease).await.unwrap().is_empty(), "other providers see nothing");
    tokio::time::sleep(lease * 2).await;
    assert_eq!(store.claim_leaks("docker", 10, lease).await.unwrap().len(), 1, "an expired lease frees the entry");
}

#[tokio::test]
async fn the_store_copies_records_and_upsert_fully_replaces() {
    let store = InMemorySandboxInstanceStore::new();
    let mut record = instance("k", "c");
    record.latest_snapshot_id = Some("snap".into());
    store.upsert(&record).await.unwrap();
    record.provider = "mutated".into();
    assert_eq!(store.get("k").await.unwrap().unwrap().provider, "docker");
    store.upsert(&instance("k", "c")).await.unwrap();
    assert_eq!(store.get("k").await.unwrap().unwrap().latest_snapshot_id, None, "omitted optionals are cleared");
    store.delete("missing").await.unwrap();
    let mut empty = instance("", "c");
    assert!(store.upsert(&empty).await.is_err(), "empty key refused");
    empty.key = "k2".into();
    empty.updated_at = 1 << 53;
    assert!(store.upsert(&empty).await.is_err(), "timestamps beyond 2^53-1 refused");
    assert!(store.leak_ledger().is_none(), "a plain store behaves like the reference's");
}
