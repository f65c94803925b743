//! Runs every parity vector in `tests/vectors/`: all of them by driving the
//! core's machines on a virtual clock (as the Node and Python harnesses do
//! through their drivers), and the untimed reclaim vectors through the tokio
//! driver too. Format: `tests/vectors/README.md`.

mod vector_support;

use vector_support::{assert_observed, load_vectors, run_virtual};

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use sandbox_reclaim::{
    reclaim_sandbox, sandbox_reclaimer, LeakEntry, LeakLedger, LogMeta, LogValue, NewLeak, ProviderError, ReclaimError,
    ReclaimLogger, ReclaimOptions, ReclaimerError, RunRecord, SandboxInstanceRecord, SandboxInstanceStore,
    SandboxProvider, StoreError,
};
use serde_json::{json, Value};

/// The error a scripted fault raises; its `source` proves identity.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct Fault {
    source_method: &'static str,
    message: String,
}

fn fault(behaviour: Option<&Value>, source_method: &'static str) -> Option<Fault> {
    let behaviour = behaviour?;
    match behaviour["mode"].as_str()? {
        // Rust has no sync/async distinction: throw and reject are both `Err`.
        "throw" | "reject" => Some(Fault { source_method, message: behaviour["message"].as_str().unwrap().to_owned() }),
        _ => None,
    }
}

struct ScriptedStore<'v> {
    vector: &'v Value,
    calls: &'v Mutex<Vec<Value>>,
    records: Mutex<BTreeMap<String, SandboxInstanceRecord>>,
    leaks: Mutex<Vec<Value>>,
}

#[async_trait]
impl SandboxInstanceStore for ScriptedStore<'_> {
    async fn get(&self, key: &str) -> Result<Option<SandboxInstanceRecord>, StoreError> {
        self.calls.lock().unwrap().push(json!({"on": "store", "method": "get", "args": [key]}));
        if let Some(fault) = fault(self.vector["store"].get("get"), "get") {
            return Err(StoreError::backend(fault));
        }
        Ok(self.records.lock().unwrap().get(key).cloned())
    }
    async fn upsert(&self, record: &SandboxInstanceRecord) -> Result<(), StoreError> {
        self.records.lock().unwrap().insert(record.key.clone(), record.clone());
        Ok(())
    }
    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.calls.lock().unwrap().push(json!({"on": "store", "method": "delete", "args": [key]}));
        if let Some(fault) = fault(self.vector["store"].get("delete"), "delete") {
            return Err(StoreError::backend(fault));
        }
        self.records.lock().unwrap().remove(key);
        Ok(())
    }
    fn leak_ledger(&self) -> Option<&dyn LeakLedger> {
        (self.vector["store"]["ledger"] == json!(true)).then_some(self as &dyn LeakLedger)
    }
}

#[async_trait]
impl LeakLedger for ScriptedStore<'_> {
    async fn delete_recording_leak(&self, key: &str, leak: NewLeak) -> Result<(), StoreError> {
        assert!(leak.failed_at > 1_600_000_000_000, "failedAt is epoch milliseconds");
        let args = json!({
            "key": leak.key, "provider": leak.provider, "providerSandboxId": leak.provider_sandbox_id,
            "runId": leak.run_id, "errorMessage": leak.error_message,
        });
        self.calls.lock().unwrap().push(json!({"on": "store", "method": "deleteRecordingLeak", "args": [key, args]}));
        if let Some(fault) = fault(self.vector["store"].get("delete"), "delete") {
            return Err(StoreError::backend(fault));
        }
        self.records.lock().unwrap().remove(key);
        self.leaks.lock().unwrap().push(serde_json::to_value(leak.into_entry()).unwrap());
        Ok(())
    }
    async fn list_leaks(&self, _provider: Option<&str>) -> Result<Vec<LeakEntry>, StoreError> {
        unimplemented!("not used by the vectors")
    }
    async fn claim_leaks(&self, _: &str, _: usize, _: Duration) -> Result<Vec<LeakEntry>, StoreError> {
        unimplemented!("not used by the vectors")
    }
    async fn resolve_leak(&self, _: &LeakEntry) -> Result<bool, StoreError> {
        unimplemented!("not used by the vectors")
    }
    async fn record_retry_failure(&self, _: &LeakEntry, _: &str, _: u64) -> Result<bool, StoreError> {
        unimplemented!("not used by the vectors")
    }
}

struct ScriptedProvider<'v> {
    vector: &'v Value,
    calls: &'v Mutex<Vec<Value>>,
}

#[async_trait]
impl SandboxProvider for ScriptedProvider<'_> {
    fn name(&self) -> &str {
        self.vector["provider"]["name"].as_str().unwrap()
    }
    async fn destroy(&self, id: &str) -> Result<(), ProviderError> {
        self.calls.lock().unwrap().push(json!({"on": "provider", "method": "destroy", "args": [{"id": id}]}));
        match fault(self.vector["provider"].get("destroy").and_then(|by_id| by_id.get(id)), "destroy") {
            Some(fault) => Err(ProviderError::backend(fault)),
            None => Ok(()),
        }
    }
}

#[derive(Default)]
struct RecordingLogger {
    lines: Mutex<Vec<Value>>,
    destroy_fault: Mutex<Option<String>>,
}

impl RecordingLogger {
    fn record(&self, level: &str, message: &str, meta: &LogMeta<'_>) {
        let mut object = serde_json::Map::new();
        for (key, value) in meta {
            let value = match value {
                LogValue::Text(text) => json!(text),
                LogValue::Error(error) => {
                    // Identity: the provider's own Fault, carried inside ProviderError.
                    let provider_error = error.downcast_ref::<ProviderError>().expect("a ProviderError");
                    let ProviderError::Backend(inner) = provider_error else { panic!("backend error expected") };
                    let fault = inner.downcast_ref::<Fault>().expect("the scripted fault itself");
                    assert_eq!(fault.source_method, "destroy");
                    *self.destroy_fault.lock().unwrap() = Some(fault.message.clone());
                    json!({"$hostError": "destroy"})
                }
            };
            object.insert((*key).to_owned(), value);
        }
        self.lines.lock().unwrap().push(json!({"level": level, "message": message, "meta": object}));
    }
}

impl ReclaimLogger for RecordingLogger {
    fn warn(&self, message: &str, meta: &LogMeta<'_>) {
        self.record("warn", message, meta)
    }
    fn errors(&self, message: &str, meta: &LogMeta<'_>) {
        self.record("errors", message, meta)
    }
    fn sandbox(&self, message: &str, meta: &LogMeta<'_>) {
        self.record("sandbox", message, meta)
    }
}

fn assert_host_error(error: &StoreError, expected: &Value, vector: &Value) {
    let StoreError::Backend(inner) = error else { panic!("expected the host's error, got {error:?}") };
    let fault = inner.downcast_ref::<Fault>().expect("the very error the store raised");
    let source = expected["source"].as_str().unwrap();
    assert_eq!(fault.source_method, source);
    assert_eq!(fault.message, vector["store"][source]["message"].as_str().unwrap());
}

async fn run_vector(vector: &Value) {
    let calls = Mutex::new(Vec::new());
    let instances: Vec<SandboxInstanceRecord> = serde_json::from_value(vector["store"]["instances"].clone()).unwrap();
    let store = ScriptedStore {
        vector,
        calls: &calls,
        records: Mutex::new(instances.into_iter().map(|record| (record.key.clone(), record)).collect()),
        leaks: Mutex::new(Vec::new()),
    };
    let provider = ScriptedProvider { vector, calls: &calls };
    let logger = RecordingLogger::default();
    let record: RunRecord = serde_json::from_value(vector["record"].clone()).unwrap();
    let options = ReclaimOptions {
        provider: &provider,
        instances: &store,
        logger: (vector["logger"] == json!(true)).then_some(&logger as &dyn ReclaimLogger),
        destroy_timeout: None,
    };
    let expected = &vector["expect"];

    if vector["api"] == "reclaimSandbox" {
        match (reclaim_sandbox(&record, options).await, expected.get("error")) {
            (Ok(outcome), None) => assert_eq!(json!(outcome), expected["result"]),
            (Err(ReclaimError::Store(error)), Some(want)) => assert_host_error(&error, want, vector),
            (got, _) => panic!("unexpected result {got:?}"),
        }
    } else {
        match (sandbox_reclaimer(&record, options).await, expected.get("error")) {
            (Ok(()), None) => assert_eq!(expected["result"], Value::Null),
            (Err(ReclaimerError::Store(error)), Some(want)) if want["kind"] == "hostError" => {
                assert_host_error(&error, want, vector)
            }
            (Err(ReclaimerError::ReclaimFailed(failure)), Some(want)) => {
                assert_eq!(want["kind"], "SandboxReclaimFailedError");
                assert_eq!(failure.to_string(), want["message"].as_str().unwrap());
                assert_eq!(json!(failure.run_id), want["runId"]);
                assert_eq!(json!(failure.sandbox_key), want["sandboxKey"]);
            }
            (got, _) => panic!("unexpected result {got:?}"),
        }
    }

    assert_eq!(Value::Array(calls.lock().unwrap().clone()), expected["calls"], "calls");
    assert_eq!(Value::Array(logger.lines.into_inner().unwrap()), expected["logs"], "logs");
    let after: Vec<_> = store.records.into_inner().unwrap().into_values().collect();
    assert_eq!(serde_json::to_value(after).unwrap(), expected["instancesAfter"], "store contents afterwards");
    if let Some(leaks) = expected.get("leaksAfter") {
        let mut actual = store.leaks.into_inner().unwrap();
        for leak in &mut actual {
            leak.as_object_mut().unwrap().remove("failedAt");
        }
        assert_eq!(Value::Array(actual), *leaks, "leak ledger afterwards");
    }
}

/// Whether a vector needs time or flows only the virtual engine runs:
/// the tokio engine takes the reclaim vectors that settle at once.
fn runs_on_tokio(vector: &Value) -> bool {
    let text = vector.to_string();
    vector["api"] != "retryLeaks"
        && !vector_support::fleet::is_fleet(vector)
        && vector.get("options").is_none()
        && !text.contains("latencyMs")
        && !text.contains("\"hang\"")
}

#[test]
fn every_vector_passes_on_the_virtual_clock() {
    let vectors = load_vectors();
    let mut fleet = 0;
    for vector in &vectors {
        if vector_support::fleet::is_fleet(vector) {
            fleet += 1;
            vector_support::fleet::assert_fleet(vector, &vector_support::fleet::run_fleet(vector));
        } else {
            assert_observed(vector, &run_virtual(vector));
        }
    }
    assert!(fleet >= 32, "expected at least 32 fleet vectors, found {fleet}");
    assert!(vectors.len() >= 44, "expected at least 44 vectors, found {}", vectors.len());
}

#[tokio::test]
async fn every_untimed_reclaim_vector_passes_through_the_tokio_driver() {
    let mut count = 0;
    for vector in load_vectors().into_iter().filter(runs_on_tokio) {
        let name = vector["name"].as_str().unwrap().to_owned();
        // Run each case in its own task so a failing one names itself.
        let outcome = tokio::spawn(async move { run_vector(&vector).await }).await;
        assert!(outcome.is_ok(), "vector `{name}` failed through the tokio driver");
        count += 1;
    }
    assert!(count >= 44, "expected at least 44 untimed vectors, found {count}");
}
