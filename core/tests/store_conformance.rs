//! Runs the shared store conformance cases (`tests/conformance/`, format in
//! its README) against the in-memory, SQLite and PostgreSQL stores.
#![cfg(all(feature = "sqlite", feature = "postgres"))]

mod store_support;

use std::path::PathBuf;
use std::time::Duration;

use sandbox_reclaim::{LeakEntry, NewLeak, SandboxInstanceRecord, SandboxInstanceStore, StoreError};
use serde_json::{json, Value};
use store_support::{Backend, Fresh};

fn load_cases() -> Vec<Value> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for file in files {
        let parsed: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        cases.extend(parsed["cases"].as_array().unwrap().iter().map(expand));
    }
    assert!(cases.len() >= 30, "expected the full case list, found {}", cases.len());
    cases
}

/// Replaces every `{"$repeat": text, "times": n}` with the repeated text.
fn expand(value: &Value) -> Value {
    match value {
        Value::Object(map) if map.contains_key("$repeat") => {
            let times = usize::try_from(map["times"].as_u64().unwrap()).unwrap();
            Value::String(map["$repeat"].as_str().unwrap().repeat(times))
        }
        Value::Object(map) => Value::Object(map.iter().map(|(key, inner)| (key.clone(), expand(inner))).collect()),
        Value::Array(items) => Value::Array(items.iter().map(expand).collect()),
        other => other.clone(),
    }
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_else(|| panic!("expected a string, got {value}"))
}

fn leak_entries(value: &Value) -> Vec<LeakEntry> {
    serde_json::from_value(value.clone()).unwrap()
}

/// The entry a step names by `(provider, providerSandboxId)`; the rest of
/// the fields do not identify it.
fn named_entry(value: &Value) -> LeakEntry {
    LeakEntry {
        key: String::new(),
        provider: text(&value["provider"]).to_owned(),
        provider_sandbox_id: text(&value["providerSandboxId"]).to_owned(),
        run_id: String::new(),
        last_error: String::new(),
        failed_at: 0,
        attempts: 0,
        claim: None,
    }
}

fn optional_provider(value: &Value) -> Option<&str> {
    value.as_str()
}

async fn upsert_step(store: &dyn SandboxInstanceStore, step: &Value) -> Result<(), String> {
    let outcome = match serde_json::from_value::<SandboxInstanceRecord>(step["record"].clone()) {
        Ok(record) => store.upsert(&record).await.map_err(|error| match error {
            StoreError::InvalidRecord(invalid) => json!({"kind": "invalidRecord", "field": invalid.field}),
            other => json!({"kind": "other", "message": other.to_string()}),
        }),
        // `u64` cannot hold a negative or fractional updatedAt: the type
        // refuses it before any store sees it.
        Err(error) if error.to_string().contains("updatedAt") || step["record"]["updatedAt"].as_u64().is_none() => {
            Err(json!({"kind": "invalidRecord", "field": "updatedAt"}))
        }
        Err(error) => return Err(format!("record does not deserialise: {error}")),
    };
    match (outcome, step.get("expectError")) {
        (Ok(()), None) => Ok(()),
        (Err(got), Some(expected)) if &got == expected => Ok(()),
        (outcome, expected) => Err(format!("upsert: expected error {expected:?}, got {outcome:?}")),
    }
}

async fn run_step(store: &dyn SandboxInstanceStore, step: &Value) -> Result<(), String> {
    let ledger = || store.leak_ledger().expect("a ledger case ran on a store without one");
    let fail = |error: StoreError| format!("{} failed: {error}", step["op"]);
    match text(&step["op"]) {
        "get" => {
            let got = store.get(text(&step["key"])).await.map_err(fail)?;
            let got = serde_json::to_value(got).unwrap();
            if got != step["expect"] {
                return Err(format!("get: expected {}, got {got}", step["expect"]));
            }
        }
        "upsert" => upsert_step(store, step).await?,
        // Issued in order, none awaited before the next is issued (join_all
        // polls each once, in order, before waiting on any).
        "together" => {
            let steps = step["steps"].as_array().expect("together: steps");
            let runs = steps.iter().map(|inner| Box::pin(run_step(store, inner)));
            for outcome in futures_util::future::join_all(runs).await {
                outcome?;
            }
        }
        "delete" => store.delete(text(&step["key"])).await.map_err(fail)?,
        "deleteRecordingLeak" => {
            let leak = &step["leak"];
            let leak = NewLeak {
                key: text(&leak["key"]).to_owned(),
                provider: text(&leak["provider"]).to_owned(),
                provider_sandbox_id: text(&leak["providerSandboxId"]).to_owned(),
                run_id: text(&leak["runId"]).to_owned(),
                error_message: text(&leak["errorMessage"]).to_owned(),
                failed_at: leak["failedAt"].as_u64().unwrap(),
            };
            ledger().delete_recording_leak(text(&step["key"]), leak).await.map_err(fail)?;
        }
        "listLeaks" => {
            let got = ledger().list_leaks(optional_provider(&step["provider"])).await.map_err(fail)?;
            if got != leak_entries(&step["expect"]) {
                return Err(format!("listLeaks: expected {}, got {got:?}", step["expect"]));
            }
        }
        "countLeaks" => {
            let got = ledger().count_leaks(optional_provider(&step["provider"])).await.map_err(fail)?;
            if Some(got) != step["expect"].as_u64() {
                return Err(format!("countLeaks: expected {}, got {got}", step["expect"]));
            }
        }
        "claimLeaks" => {
            let limit = usize::try_from(step["limit"].as_u64().unwrap()).unwrap();
            let lease = Duration::from_millis(step["leaseMs"].as_u64().unwrap());
            let mut got = ledger().claim_leaks(text(&step["provider"]), limit, lease).await.map_err(fail)?;
            // Each claim's generation is the store's own: it must be there,
            // and the rest of the entry must be as expected.
            if let Some(unfenced) = got.iter().find(|entry| entry.claim.is_none()) {
                return Err(format!("claimLeaks: {unfenced:?} was handed out without its claim"));
            }
            got.iter_mut().for_each(|entry| entry.claim = None);
            if got != leak_entries(&step["expect"]) {
                return Err(format!("claimLeaks: expected {}, got {got:?}", step["expect"]));
            }
        }
        "resolveLeak" => {
            ledger().resolve_leak(&named_entry(&step["entry"])).await.map_err(fail)?;
        }
        "recordRetryFailure" => {
            let failed_at = step["failedAt"].as_u64().unwrap();
            let entry = named_entry(&step["entry"]);
            ledger().record_retry_failure(&entry, text(&step["message"]), failed_at).await.map_err(fail)?;
        }
        other => return Err(format!("unknown op {other}")),
    }
    Ok(())
}

async fn run_all(backend: Backend) {
    let mut failures = Vec::new();
    let cases = load_cases();
    for case in &cases {
        let fresh = Fresh::new(backend).await;
        for (index, step) in case["steps"].as_array().unwrap().iter().enumerate() {
            if let Err(problem) = run_step(fresh.store.as_ref(), step).await {
                // Long-key cases would print megabytes: keep the start.
                let problem: String = problem.chars().take(400).collect();
                failures.push(format!("{backend:?} / {} / step {index}: {problem}", case["name"]));
                break;
            }
        }
        fresh.cleanup().await;
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[tokio::test]
async fn in_memory_store_conforms() {
    run_all(Backend::Memory).await;
}

#[tokio::test]
async fn sqlite_store_conforms() {
    run_all(Backend::Sqlite).await;
}

#[tokio::test]
async fn postgres_store_conforms() {
    run_all(Backend::Postgres).await;
}
