//! Runs every parity vector in `tests/vectors/` through the async Rust driver.
//! Format: `tests/vectors/README.md`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use sandbox_reclaim::machine::LogLevel;
use sandbox_reclaim::program::{compile, Api, Instruction, Operand, Program};
use sandbox_reclaim::{
    reclaim_sandbox, sandbox_reclaimer, LeakEntry, LeakLedger, LogMeta, LogValue, NewLeak, ProviderError,
    ReclaimLogger, ReclaimOptions, ReclaimOutcome, ReclaimerError, RunRecord, SandboxInstanceRecord,
    SandboxInstanceStore, SandboxProvider, SandboxReclaimFailed, StoreError,
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
    async fn resolve_leak(&self, _: &LeakEntry) -> Result<(), StoreError> {
        unimplemented!("not used by the vectors")
    }
    async fn record_retry_failure(&self, _: &LeakEntry, _: &str, _: u64) -> Result<(), StoreError> {
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

/// Walks a compiled [`Program`] the way the bindings do, against the same
/// scripted host objects, and returns what `run_vector` would get from the
/// driver. This proves the compiled programs, not just the machine.
async fn walk_program(
    program: &Program,
    record: &RunRecord,
    options: ReclaimOptions<'_>,
) -> Result<Option<ReclaimOutcome>, ReclaimerError> {
    let mut at = 0;
    let mut instance: Option<SandboxInstanceRecord> = None;
    let mut destroy_error: Option<ProviderError> = None;
    let key = record.sandbox_key.clone().unwrap_or_default();
    loop {
        let text =
            |operand: Operand, instance: &Option<SandboxInstanceRecord>, error: &Option<ProviderError>| match operand {
                Operand::RunId => record.run_id.clone(),
                Operand::SandboxKey => key.clone(),
                Operand::ProviderName => options.provider.name().to_owned(),
                Operand::InstanceProvider => instance.as_ref().unwrap().provider.clone(),
                Operand::ProviderSandboxId => instance.as_ref().unwrap().provider_sandbox_id.clone(),
                Operand::DestroyError | Operand::DestroyErrorMessage => error.as_ref().unwrap().to_string(),
            };
        let mut next = at + 1;
        match &program.instructions[at] {
            Instruction::IfNoSandboxKey { target } if record.sandbox_key.is_none() => next = *target,
            Instruction::IfInstanceMissing { target } if instance.is_none() => next = *target,
            Instruction::IfProviderDiffers { target }
                if instance.as_ref().unwrap().provider != options.provider.name() =>
            {
                next = *target
            }
            Instruction::IfDestroyFailed { target } if destroy_error.is_some() => next = *target,
            Instruction::IfNoSandboxKey { .. }
            | Instruction::IfInstanceMissing { .. }
            | Instruction::IfProviderDiffers { .. }
            | Instruction::IfDestroyFailed { .. } => {}
            Instruction::GetInstance => instance = options.instances.get(&key).await?,
            Instruction::Destroy => {
                let id = &instance.as_ref().unwrap().provider_sandbox_id;
                destroy_error = options.provider.destroy(id).await.err();
            }
            Instruction::DeleteInstance => options.instances.delete(&key).await?,
            Instruction::DeleteInstanceRecordingLeak { leak } => {
                let value = |operand| text(operand, &instance, &destroy_error);
                let leak = NewLeak {
                    key: value(leak.key),
                    provider: value(leak.provider),
                    provider_sandbox_id: value(leak.provider_sandbox_id),
                    run_id: value(leak.run_id),
                    error_message: value(leak.error_message),
                    failed_at: sandbox_reclaim::driver::now_millis(),
                };
                options.instances.leak_ledger().unwrap().delete_recording_leak(&key, leak).await?;
            }
            Instruction::Log { level, message, meta } => {
                if let Some(logger) = options.logger {
                    let texts: Vec<String> =
                        meta.iter().map(|(_, operand)| text(*operand, &instance, &destroy_error)).collect();
                    let meta: Vec<(&'static str, LogValue<'_>)> = meta
                        .iter()
                        .zip(&texts)
                        .map(|((name, operand), text)| match operand {
                            Operand::DestroyError => (*name, LogValue::Error(destroy_error.as_ref().unwrap())),
                            _ => (*name, LogValue::Text(text)),
                        })
                        .collect();
                    match level {
                        LogLevel::Warn => logger.warn(message, &meta),
                        LogLevel::Errors => logger.errors(message, &meta),
                        LogLevel::Sandbox => logger.sandbox(message, &meta),
                    }
                }
            }
            Instruction::Finish { outcome } => return Ok(Some(*outcome)),
            Instruction::FailReclaim => {
                let failure =
                    SandboxReclaimFailed { run_id: record.run_id.clone(), sandbox_key: record.sandbox_key.clone() };
                return Err(ReclaimerError::ReclaimFailed(failure));
            }
        }
        at = next;
    }
}

/// Which engine runs a vector.
#[derive(Clone, Copy, Debug)]
enum Engine {
    /// The async driver over the state machine.
    Driver,
    /// The compiled program, walked like the bindings walk it.
    Program,
}

async fn run_vector(vector: &Value, engine: Engine) {
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
    };
    let expected = &vector["expect"];

    let api = if vector["api"] == "reclaimSandbox" { Api::ReclaimSandbox } else { Api::SandboxReclaimer };
    if let Engine::Program = engine {
        let program = compile(api, store.leak_ledger().is_some());
        match (walk_program(&program, &record, options).await, expected.get("error")) {
            (Ok(outcome), None) if api == Api::ReclaimSandbox => assert_eq!(json!(outcome), expected["result"]),
            (Ok(_), None) => assert_eq!(expected["result"], Value::Null),
            (Err(ReclaimerError::Store(error)), Some(want)) => assert_host_error(&error, want, vector),
            (Err(ReclaimerError::ReclaimFailed(failure)), Some(want)) => {
                assert_eq!(failure.to_string(), want["message"].as_str().unwrap())
            }
            (got, _) => panic!("unexpected result {got:?}"),
        }
    } else if api == Api::ReclaimSandbox {
        match (reclaim_sandbox(&record, options).await, expected.get("error")) {
            (Ok(outcome), None) => assert_eq!(json!(outcome), expected["result"]),
            (Err(error), Some(want)) => assert_host_error(&error, want, vector),
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

#[tokio::test]
async fn every_vector_passes_through_the_driver_and_the_compiled_program() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|entry| entry.unwrap().path()).collect();
    files.retain(|path| path.extension().is_some_and(|ext| ext == "json"));
    files.sort();
    let mut count = 0;
    for file in files {
        let document: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        for vector in document["cases"].as_array().unwrap() {
            let name = vector["name"].as_str().unwrap().to_owned();
            // Run each case in its own task so a failing one names itself.
            for engine in [Engine::Driver, Engine::Program] {
                let vector = vector.clone();
                let outcome = tokio::spawn(async move { run_vector(&vector, engine).await }).await;
                assert!(outcome.is_ok(), "vector `{name}` failed through the {engine:?}");
            }
            count += 1;
        }
    }
    assert!(count >= 30, "expected at least 30 vectors, found {count}");
}
