//! The tokio driver on the real clock: a destroy past its deadline is dropped
//! (cancelled) and reported with `DestroyTimeout`; a retry's lease bounds its
//! destroys. (The vectors specify the same on a virtual clock.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sandbox_reclaim::{
    reclaim_sandbox, retry_leaks, DestroyTimeout, InMemorySandboxInstanceStore, LeakLedger, LogMeta, LogValue, NewLeak,
    ProviderError, ReclaimLogger, ReclaimOptions, ReclaimOutcome, RetryOptions, RunRecord, RunStatus,
    SandboxInstanceRecord, SandboxInstanceStore, SandboxProvider,
};

/// Destroys that take `delay`; counts those that finish and those dropped midway.
struct SlowProvider {
    delay: Duration,
    finished: AtomicUsize,
    dropped: std::sync::Arc<AtomicUsize>,
}

struct CountDrop(std::sync::Arc<AtomicUsize>, bool);

impl Drop for CountDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[async_trait]
impl SandboxProvider for SlowProvider {
    fn name(&self) -> &str {
        "docker"
    }
    async fn destroy(&self, _id: &str) -> Result<(), ProviderError> {
        let mut guard = CountDrop(self.dropped.clone(), false);
        tokio::time::sleep(self.delay).await;
        guard.1 = true;
        self.finished.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn provider(delay: Duration) -> SlowProvider {
    SlowProvider { delay, finished: AtomicUsize::new(0), dropped: Default::default() }
}

#[derive(Default)]
struct Lines(Mutex<Vec<(String, Option<String>)>>);

impl ReclaimLogger for Lines {
    fn warn(&self, message: &str, meta: &LogMeta<'_>) {
        let error = meta.iter().find_map(|(_, value)| match value {
            LogValue::Error(error) => error.downcast_ref::<DestroyTimeout>().map(|timeout| timeout.to_string()),
            LogValue::Text(_) => None,
        });
        self.0.lock().unwrap().push((message.to_owned(), error));
    }
    fn errors(&self, _: &str, _: &LogMeta<'_>) {}
    fn sandbox(&self, _: &str, _: &LogMeta<'_>) {}
}

fn instance(key: &str) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: key.into(),
        provider: "docker".into(),
        provider_sandbox_id: format!("ctr-{key}"),
        latest_snapshot_id: None,
        thread_id: "t".into(),
        latest_run_id: None,
        updated_at: 1,
    }
}

#[tokio::test]
async fn a_destroy_past_its_deadline_is_dropped_and_reported_as_a_timeout() {
    let store = InMemorySandboxInstanceStore::with_ledger();
    store.upsert(&instance("k")).await.unwrap();
    let slow = provider(Duration::from_secs(30));
    let lines = Lines::default();
    let options =
        ReclaimOptions::new(&slow, &store).with_logger(&lines).with_destroy_timeout(Duration::from_millis(50));
    let started = Instant::now();
    let record = RunRecord::new("r", "t", RunStatus::Completed).with_sandbox_key("k");
    assert_eq!(reclaim_sandbox(&record, options).await.unwrap(), ReclaimOutcome::DestroyFailed);
    assert!(started.elapsed() >= Duration::from_millis(45) && started.elapsed() < Duration::from_secs(5));
    assert_eq!(slow.dropped.load(Ordering::SeqCst), 1, "the destroy future was dropped, i.e. cancelled");
    let expected = "destroying sandbox \"ctr-k\" did not settle within 50 ms; it was cancelled";
    assert_eq!(lines.0.lock().unwrap().clone()[0].1.as_deref(), Some(expected));
    assert_eq!(store.get("k").await.unwrap(), None);
    assert_eq!(store.list_leaks(None).await.unwrap()[0].last_error, expected);
}

#[tokio::test]
async fn a_retry_stops_destroying_when_its_lease_runs_out() {
    let store = InMemorySandboxInstanceStore::with_ledger();
    for index in 0..10 {
        let key = format!("k{index}");
        let leak = NewLeak {
            key: key.clone(),
            provider: "docker".into(),
            provider_sandbox_id: format!("ctr-{index}"),
            run_id: "r".into(),
            error_message: "down".into(),
            failed_at: 1,
        };
        store.delete_recording_leak(&key, leak).await.unwrap();
    }
    let slow = provider(Duration::from_millis(40));
    let options = RetryOptions { limit: 10, lease: Duration::from_millis(200), destroy_timeout: None };
    let summary = retry_leaks(&slow, &store, options).await.unwrap();
    // 180 ms of usable lease at 40 ms a destroy: four finish, the fifth is cut.
    assert!(summary.destroyed >= 3 && summary.destroyed <= 4, "{summary:?}");
    assert_eq!(summary.retried, summary.destroyed + 1, "one destroy was cut by the lease: {summary:?}");
    assert_eq!(slow.dropped.load(Ordering::SeqCst), 1);
    assert_eq!(store.count_leaks(None).await.unwrap(), 10 - summary.destroyed);
}
