//! Fleet vectors (`reclaimAll`, `reconcile`) acted out on a virtual clock:
//! the core's machines driven directly against the native in-memory store
//! (seeded from the case) and scripted providers. Format: the "Fleet
//! passes" section of `tests/vectors/README.md`.

use std::collections::BTreeMap;

use sandbox_reclaim::contract::FleetStore;
use sandbox_reclaim::machine::effects::{
    Completion, DueFields, Effect, EffectId, Ending, Flow, InstanceFields, Millis, Output, StaleRecord,
};
use sandbox_reclaim::machine::reclaim_all::ReclaimAll;
use sandbox_reclaim::machine::reconcile::Reconcile;
use sandbox_reclaim::machine::start::{HostProvider, PassStart};
use sandbox_reclaim::model::fleet::{AuditEntry, LeakReason, ListedSandbox};
use sandbox_reclaim::options::{Dialect, HostOptions};
use sandbox_reclaim::stores::checks::now_or_never;
use sandbox_reclaim::{
    InMemorySandboxInstanceStore, LeakEntry, LeakLedger, NewLeak, SandboxInstanceRecord, SandboxInstanceStore,
};
use serde_json::{json, Value};

use super::{clock_start, log_line};

/// Whether `vector` is a fleet case.
pub fn is_fleet(vector: &Value) -> bool {
    matches!(vector["api"].as_str(), Some("reclaimAll" | "reconcile"))
}

fn ready<T>(future: impl std::future::Future<Output = T>) -> T {
    now_or_never(future).expect("the in-memory store answers at once")
}

fn relative(value: &Value, start: Millis) -> Value {
    value.as_u64().map_or(Value::Null, |at| json!(at as i64 - start as i64))
}

fn absolute(value: &Value, start: Millis) -> u64 {
    (start as i64 + value.as_i64().unwrap_or(0)) as u64
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// The case's store, seeded (times relative to the clock's start).
fn seeded_store(vector: &Value, start: Millis) -> InMemorySandboxInstanceStore {
    let store = if vector["store"]["ledger"] == json!(false) {
        InMemorySandboxInstanceStore::new()
    } else {
        InMemorySandboxInstanceStore::with_ledger()
    };
    for record in vector["store"]["instances"].as_array().into_iter().flatten() {
        let mut record = record.clone();
        record["updatedAt"] = json!(absolute(&record["updatedAt"], start));
        let record: SandboxInstanceRecord = serde_json::from_value(record).unwrap();
        ready(store.upsert(&record)).unwrap();
    }
    // Records written and deleted before the pass: the registry names their
    // sandboxes, and no record is left.
    for record in vector["store"]["registered"].as_array().into_iter().flatten() {
        let mut record = record.clone();
        record["updatedAt"] = json!(absolute(&record["updatedAt"], start));
        let record: SandboxInstanceRecord = serde_json::from_value(record).unwrap();
        ready(store.upsert(&record)).unwrap();
        ready(store.delete(&record.key)).unwrap();
    }
    for leak in vector["store"]["leaks"].as_array().into_iter().flatten() {
        let new = NewLeak {
            key: text(&leak["key"]),
            provider: text(&leak["provider"]),
            provider_sandbox_id: text(&leak["providerSandboxId"]),
            run_id: text(&leak["runId"]),
            error_message: text(&leak["errorMessage"]),
            failed_at: absolute(&leak["failedAt"], start),
        };
        let reason = LeakReason::parse(leak["reason"].as_str().unwrap_or("destroy-failed"));
        let next = absolute(&leak["nextAttemptAt"], start);
        for _ in 0..leak["attempts"].as_u64().unwrap_or(1) {
            ready(store.record_leak(new.clone(), reason, next)).unwrap();
        }
    }
    for sweep in vector["store"]["sweeps"].as_array().into_iter().flatten() {
        let lease = sweep["leaseMs"].as_u64().unwrap();
        assert!(ready(store.claim_sweep(&text(&sweep["provider"]), &text(&sweep["holder"]), lease, start)).unwrap());
    }
    for row in vector["store"]["audit"].as_array().into_iter().flatten() {
        let mut row = row.clone();
        row["at"] = json!(absolute(&row["at"], start));
        let row: AuditEntry = serde_json::from_value(row).unwrap();
        ready(store.append_audit(&[row])).unwrap();
    }
    store
}

/// The case's machine, its input built from the case's (camelCase) options by
/// the core's own option checks, as the Node binding builds it.
fn machine(vector: &Value, start: Millis, has_ledger: bool) -> Box<dyn Flow> {
    let options = HostOptions::parse(&vector["options"].to_string(), Dialect::Node).expect("options object");
    let providers = vector["providers"].as_array().unwrap();
    let pass = PassStart {
        progress: vector["progress"] == json!(true),
        stopped: vector["stopAtMs"] == json!(0),
        host_name: None,
        // The in-memory store keeps a registry, and prunes it and its audit log.
        registry: true,
        prune: true,
        scoped: true,
    };
    if vector["api"] == "reclaimAll" {
        let records = vector["records"].as_array().unwrap();
        let records =
            records.iter().map(|run| (text(&run["runId"]), run["sandboxKey"].as_str().map(str::to_owned))).collect();
        let names = providers.iter().map(|provider| text(&provider["name"])).collect();
        let input = sandbox_reclaim::machine::start::reclaim_all(&options, records, names, has_ledger, pass.clone())
            .expect("valid options");
        return Box::new(ReclaimAll::new(input, start));
    }
    let providers = providers
        .iter()
        .map(|provider| HostProvider {
            name: text(&provider["name"]),
            can_list: provider.get("list").is_some(),
            can_lookup: provider.get("lookup").is_some(),
            owner: provider["owner"].as_str().map(str::to_owned),
        })
        .collect();
    let input = sandbox_reclaim::machine::start::reconcile(&options, providers, pass, start).expect("valid options");
    Box::new(Reconcile::new(input, start))
}

/// What a fleet run produced, in the vectors' terms.
pub struct FleetObserved {
    pub result: Result<Value, Value>,
    pub calls: Vec<Value>,
    pub logs: Vec<Value>,
    pub progress: Vec<Value>,
    pub aborted: Vec<Value>,
    pub elapsed: Millis,
    pub instances_after: Value,
    pub leaks_after: Value,
    pub audit_after: Value,
}

struct Started {
    id: EffectId,
    settles_at: Millis,
    /// Zero-latency calls settle before timers due at the same millisecond.
    timer: bool,
    effect: Effect,
    script: Value,
    method: &'static str,
}

fn leak_json(leak: &NewLeak) -> Value {
    json!({"key": leak.key, "provider": leak.provider, "providerSandboxId": leak.provider_sandbox_id, "runId": leak.run_id, "errorMessage": leak.error_message})
}

/// Runs a fleet `vector` on a virtual clock.
pub fn run_fleet(vector: &Value) -> FleetObserved {
    let start = clock_start(vector);
    let mut now = start;
    let store = seeded_store(vector, start);
    let has_ledger = store.leak_ledger().is_some();
    let mut flow = machine(vector, start, has_ledger);
    let providers = vector["providers"].as_array().unwrap().clone();
    let scripts = &vector["store"]["scripts"];
    let stop_at = vector["stopAtMs"].as_u64().map(|at| start + at);
    let mut stopped = false;
    let mut entries: BTreeMap<EffectId, Vec<LeakEntry>> = BTreeMap::new();
    let mut thrown: BTreeMap<EffectId, &'static str> = BTreeMap::new();
    let mut started: BTreeMap<EffectId, Effect> = BTreeMap::new();
    let (mut calls, mut logs, mut progress, mut aborted) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut pending: Vec<Started> = Vec::new();
    let provider_of = |index: u32| providers[index as usize].clone();
    loop {
        // A driver starts a batch's effects in order, and nothing after a
        // log line whose logger threw (the reference's unguarded call).
        let mut batch: std::collections::VecDeque<_> = std::iter::from_fn(|| flow.poll_effect()).collect();
        while let Some((id, effect)) = batch.pop_front() {
            let at = json!(now - start);
            let rel = |time: u64| json!(time as i64 - start as i64);
            let store_call =
                |method: &str, args: Value| json!({"on": "store", "method": method, "args": args, "at": at});
            let script_for = |method: &str, first: &str| {
                let specific = &scripts[format!("{method}:{first}")];
                if specific.is_null() {
                    scripts[method].clone()
                } else {
                    specific.clone()
                }
            };
            let (method, call, script): (&'static str, Value, Value) = match &effect {
                Effect::Log(line) => {
                    if vector["logger"] == json!(true) {
                        logs.push(log_line(line, &thrown));
                        if let Some(message) = vector["loggerThrows"][line.level.as_str()].as_str() {
                            let failed = Completion::Failed { message: message.to_owned() };
                            flow.complete(id, failed, now).unwrap();
                            batch = std::iter::from_fn(|| flow.poll_effect()).collect();
                        }
                    }
                    continue;
                }
                Effect::Progress(event) => {
                    progress.push(serde_json::from_str(event).unwrap());
                    continue;
                }
                Effect::Cancel { target } => {
                    match started.get(target) {
                        Some(Effect::Destroy { provider_sandbox_id, .. }) => aborted.push(json!(provider_sandbox_id)),
                        Some(Effect::ListSandboxes { provider, .. }) => {
                            aborted.push(json!(format!("list:{}", text(&provider_of(*provider)["name"]))))
                        }
                        Some(Effect::LookupSandboxes { provider, .. }) => {
                            aborted.push(json!(format!("lookup:{}", text(&provider_of(*provider)["name"]))))
                        }
                        _ => {}
                    }
                    // A cancelled call may still settle later; the machine must ignore it.
                    continue;
                }
                Effect::GetInstance { key } => ("get", store_call("get", json!([key])), script_for("get", key)),
                Effect::DeleteInstance { key } => {
                    ("delete", store_call("delete", json!([key])), script_for("delete", key))
                }
                Effect::DeleteRecordingLeak { key, leak } => (
                    "deleteRecordingLeak",
                    store_call("deleteRecordingLeak", json!([key, leak_json(leak)])),
                    script_for("deleteRecordingLeak", key),
                ),
                Effect::Destroy { provider, provider_sandbox_id, .. } => {
                    let provider = provider_of(*provider);
                    let call = json!({"on": "provider", "method": "destroy", "args": [{"id": provider_sandbox_id}], "at": at, "name": provider["name"]});
                    ("destroy", call, provider["destroy"][provider_sandbox_id].clone())
                }
                Effect::ListSandboxes { provider, .. } => {
                    let provider = provider_of(*provider);
                    let call =
                        json!({"on": "provider", "method": "list", "args": [], "at": at, "name": provider["name"]});
                    ("list", call, provider["list"].clone())
                }
                Effect::LookupSandboxes { provider, ids, .. } => {
                    let provider = provider_of(*provider);
                    let call = json!({"on": "provider", "method": "lookup", "args": [{"ids": ids}], "at": at, "name": provider["name"]});
                    ("lookup", call, provider["lookup"].clone())
                }
                Effect::SandboxReferences { provider, destroyed_since } => (
                    "sandboxReferences",
                    store_call("sandboxReferences", json!([provider, rel(*destroyed_since)])),
                    script_for("sandboxReferences", provider),
                ),
                Effect::RegisteredSandboxes { provider, since } => (
                    "registeredSandboxes",
                    store_call("registeredSandboxes", json!([provider, rel(*since)])),
                    script_for("registeredSandboxes", provider),
                ),
                Effect::SweepMark { provider } => {
                    ("sweepMark", store_call("sweepMark", json!([provider])), script_for("sweepMark", provider))
                }
                Effect::ReferencedAmong { provider, ids, destroyed_since, .. } => (
                    "referencedAmong",
                    // The mark is the store's own number: recorded as "$mark".
                    store_call("referencedAmong", json!([provider, ids, rel(*destroyed_since), "$mark"])),
                    script_for("referencedAmong", provider),
                ),
                Effect::RegisteredAmong { provider, ids, since } => (
                    "registeredAmong",
                    store_call("registeredAmong", json!([provider, ids, rel(*since)])),
                    script_for("registeredAmong", provider),
                ),
                Effect::LookupCandidates { provider, since, limit } => (
                    "lookupCandidates",
                    store_call("lookupCandidates", json!([provider, rel(*since), limit])),
                    script_for("lookupCandidates", provider),
                ),
                Effect::LookupChecked { provider, gone, checked, now: checked_at } => (
                    "lookupChecked",
                    store_call("lookupChecked", json!([provider, gone, checked, rel(*checked_at)])),
                    script_for("lookupChecked", provider),
                ),
                Effect::ListStale { older_than, limit } => (
                    "listStale",
                    store_call("listStale", json!([rel(*older_than), limit])),
                    script_for("listStale", ""),
                ),
                Effect::ExpireIdle { key, updated_at, leak } => (
                    "expireIdle",
                    store_call("expireIdle", json!([key, rel(*updated_at), leak_json(leak)])),
                    script_for("expireIdle", key),
                ),
                Effect::RecordLeak { leak, reason, next_attempt_at } => (
                    "recordLeak",
                    store_call("recordLeak", json!([leak_json(leak), reason.as_str(), rel(*next_attempt_at)])),
                    script_for("recordLeak", &leak.key),
                ),
                Effect::DueLeaks { provider, limit, lease_ms, now: asked } => (
                    "dueLeaks",
                    store_call("dueLeaks", json!([provider, limit, lease_ms, rel(*asked)])),
                    script_for("dueLeaks", provider),
                ),
                Effect::DeferLeak { entry, message, failed_at, next_attempt_at } => {
                    let sandbox_id = entries[&entry.effect][entry.index as usize].provider_sandbox_id.clone();
                    let args = json!([sandbox_id, message, rel(*failed_at), rel(*next_attempt_at)]);
                    ("deferLeak", store_call("deferLeak", args), script_for("deferLeak", &sandbox_id))
                }
                Effect::ResolveLeak { entry } => {
                    let sandbox_id = entries[&entry.effect][entry.index as usize].provider_sandbox_id.clone();
                    (
                        "resolveLeak",
                        store_call("resolveLeak", json!([sandbox_id])),
                        script_for("resolveLeak", &sandbox_id),
                    )
                }
                Effect::ClaimSweep { provider, lease_ms, now: asked, .. } => (
                    "claimSweep",
                    store_call("claimSweep", json!([provider, "$holder", lease_ms, rel(*asked)])),
                    script_for("claimSweep", provider),
                ),
                Effect::ReleaseSweep { provider, .. } => (
                    "releaseSweep",
                    store_call("releaseSweep", json!([provider, "$holder"])),
                    script_for("releaseSweep", provider),
                ),
                Effect::AppendAudit(rows) => {
                    ("appendAudit", store_call("appendAudit", json!([rows.len()])), script_for("appendAudit", ""))
                }
                Effect::Prune { provider, registry_before, audit_before } => (
                    "prune",
                    store_call("prune", json!([provider, rel(*registry_before), rel(*audit_before)])),
                    script_for("prune", provider),
                ),
                other => panic!("fleet vectors do not use {other:?}"),
            };
            calls.push(call);
            started.insert(id, effect.clone());
            if script["mode"] == "hang" {
                continue;
            }
            let latency = script["latencyMs"].as_u64().unwrap_or(0);
            pending.push(Started { id, settles_at: now + latency, timer: latency > 0, effect, script, method });
        }
        if let Some(ending) = flow.poll_done() {
            let result = match ending {
                Ending::Resolved(Output::FleetReclaim(report)) => Ok(serde_json::to_value(&report).unwrap()),
                Ending::Resolved(Output::Reconcile(report)) => Ok(serde_json::to_value(&report).unwrap()),
                Ending::HostError(id) => Err(json!({"kind": "hostError", "source": thrown[&id]})),
                other => panic!("a fleet pass ended with {other:?}"),
            };
            let instances_after = Value::Array(
                store
                    .records()
                    .into_iter()
                    .map(|record| {
                        let mut record = serde_json::to_value(record).unwrap();
                        record["updatedAt"] = relative(&record["updatedAt"], start);
                        record
                    })
                    .collect(),
            );
            let leaks = ready(store.list_leaks(None)).unwrap_or_default();
            let leaks_after = Value::Array(
                leaks
                    .into_iter()
                    .map(|leak| {
                        let mut leak = serde_json::to_value(leak).unwrap();
                        leak.as_object_mut().unwrap().remove("failedAt");
                        leak
                    })
                    .collect(),
            );
            let audit = if has_ledger { ready(store.list_audit(None, 100_000)).unwrap() } else { Vec::new() };
            let audit_after = Value::Array(
                audit
                    .into_iter()
                    .map(|row| {
                        let mut row = serde_json::to_value(row).unwrap();
                        row["at"] = relative(&row["at"], start);
                        row
                    })
                    .collect(),
            );
            return FleetObserved {
                result,
                calls,
                logs,
                progress,
                aborted,
                elapsed: now - start,
                instances_after,
                leaks_after,
                audit_after,
            };
        }
        let next =
            pending.iter().enumerate().min_by_key(|(_, p)| (p.settles_at, p.timer, p.id)).map(|(index, _)| index);
        let next_at = next.map(|index| pending[index].settles_at);
        let timeout = flow.poll_timeout();
        if let Some(at) = stop_at.filter(|_| !stopped) {
            if next_at.is_none_or(|settle| settle > at) && timeout.is_none_or(|deadline| deadline > at) {
                stopped = true;
                now = now.max(at);
                flow.stop(now);
                continue;
            }
        }
        let settle_first = next.filter(|&index| timeout.is_none_or(|at| pending[index].settles_at <= at));
        if let Some(index) = settle_first {
            let settled = pending.remove(index);
            now = now.max(settled.settles_at);
            let completion = settle(&settled, now, start, &store, &mut entries, &mut thrown);
            flow.complete(settled.id, completion, now).expect("the machine accepts its own effect's completion");
        } else if let Some(at) = timeout {
            now = now.max(at);
            flow.handle_timeout(now);
        } else {
            panic!("vector `{}` hangs: nothing in flight and no deadline", vector["name"]);
        }
    }
}

/// How a started effect settles: its script's answer, or the native store's.
fn settle(
    settled: &Started,
    now: Millis,
    start: Millis,
    store: &InMemorySandboxInstanceStore,
    entries: &mut BTreeMap<EffectId, Vec<LeakEntry>>,
    thrown: &mut BTreeMap<EffectId, &'static str>,
) -> Completion {
    let script = &settled.script;
    if matches!(script["mode"].as_str(), Some("reject" | "throw")) {
        thrown.insert(settled.id, settled.method);
        return Completion::Failed { message: text(&script["message"]) };
    }
    let returned = (script["mode"] == "return").then(|| script["value"].clone());
    let failed = |error: sandbox_reclaim::StoreError, thrown: &mut BTreeMap<EffectId, &'static str>| {
        thrown.insert(settled.id, settled.method);
        Completion::Failed { message: error.to_string() }
    };
    let store_done = |result: Result<(), sandbox_reclaim::StoreError>,
                      thrown: &mut BTreeMap<EffectId, &'static str>| {
        result.map_or_else(|error| failed(error, thrown), |()| Completion::Ok)
    };
    let entry_of = |entries: &BTreeMap<EffectId, Vec<LeakEntry>>, effect: EffectId, index: u32| {
        entries[&effect][index as usize].clone()
    };
    match &settled.effect {
        Effect::Destroy { .. } => Completion::Ok,
        Effect::ListSandboxes { .. } | Effect::LookupSandboxes { .. } => {
            if let Effect::ListSandboxes { .. } = settled.effect {
                meanwhile(&script["meanwhile"], start, store);
            }
            let listed = returned.unwrap_or(json!([]));
            Completion::Sandboxes(
                listed
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|sandbox| ListedSandbox {
                        id: text(&sandbox["id"]),
                        created_at: sandbox["createdAt"].as_i64().map(|at| (start as i64 + at) as u64),
                        owner: sandbox["owner"].as_str().map(str::to_owned),
                        key: sandbox["key"].as_str().map(str::to_owned),
                        deleting: sandbox["deleting"].as_bool().unwrap_or(false),
                    })
                    .collect(),
            )
        }
        Effect::GetInstance { key } => match ready(store.get(key)) {
            Ok(record) => Completion::Instance(record.map(|found| InstanceFields {
                provider: found.provider,
                provider_sandbox_id: found.provider_sandbox_id,
            })),
            Err(error) => failed(error, thrown),
        },
        Effect::DeleteInstance { key } => store_done(ready(store.delete(key)), thrown),
        Effect::DeleteRecordingLeak { key, leak } => {
            store_done(ready(store.delete_recording_leak(key, leak.clone())), thrown)
        }
        Effect::SandboxReferences { provider, destroyed_since } => {
            match ready(store.sandbox_references(provider, *destroyed_since)) {
                Ok(ids) => Completion::Ids(ids),
                Err(error) => failed(error, thrown),
            }
        }
        Effect::RegisteredSandboxes { provider, since } => match ready(store.registered_sandboxes(provider, *since)) {
            Ok(ids) => Completion::Ids(ids),
            Err(error) => failed(error, thrown),
        },
        Effect::SweepMark { provider } => match returned {
            Some(value) => Completion::Mark(value.as_u64().unwrap()),
            None => ready(store.sweep_mark(provider)).map_or_else(|error| failed(error, thrown), Completion::Mark),
        },
        Effect::ReferencedAmong { provider, ids, destroyed_since, mark } => {
            ready(store.referenced_among(provider, ids, *destroyed_since, *mark))
                .map_or_else(|error| failed(error, thrown), Completion::Ids)
        }
        Effect::RegisteredAmong { provider, ids, since } => ready(store.registered_among(provider, ids, *since))
            .map_or_else(|error| failed(error, thrown), Completion::Ids),
        Effect::LookupCandidates { provider, since, limit } => {
            ready(store.lookup_candidates(provider, *since, *limit as usize))
                .map_or_else(|error| failed(error, thrown), Completion::Ids)
        }
        Effect::LookupChecked { provider, gone, checked, now: checked_at } => {
            store_done(ready(store.lookup_checked(provider, gone, checked, *checked_at)), thrown)
        }
        Effect::ListStale { older_than, limit } => match ready(store.list_stale(*older_than, *limit as usize)) {
            Ok(records) => Completion::Stale(
                records
                    .into_iter()
                    .map(|record| StaleRecord {
                        key: record.key,
                        provider: record.provider,
                        provider_sandbox_id: record.provider_sandbox_id,
                        updated_at: record.updated_at,
                    })
                    .collect(),
            ),
            Err(error) => failed(error, thrown),
        },
        Effect::ExpireIdle { key, updated_at, leak } => match returned {
            Some(value) => Completion::Flag(value == json!(true)),
            None => ready(store.expire_idle(key, *updated_at, leak.clone()))
                .map_or_else(|error| failed(error, thrown), Completion::Flag),
        },
        Effect::RecordLeak { leak, reason, next_attempt_at } => {
            store_done(ready(store.record_leak(leak.clone(), *reason, *next_attempt_at)), thrown)
        }
        Effect::DueLeaks { provider, limit, lease_ms, now: asked } => {
            match ready(store.due_leaks(provider, *limit as usize, *lease_ms, *asked)) {
                Ok(due) => {
                    let fields = due
                        .iter()
                        .map(|due| DueFields {
                            provider_sandbox_id: due.entry.provider_sandbox_id.clone(),
                            key: due.entry.key.clone(),
                            attempts: due.entry.attempts,
                            reason: due.reason,
                        })
                        .collect();
                    entries.insert(settled.id, due.into_iter().map(|due| due.entry).collect());
                    Completion::Due(fields)
                }
                Err(error) => failed(error, thrown),
            }
        }
        // A scripted `return` answers without writing (`false`: a claim lost).
        Effect::ResolveLeak { entry } => match returned {
            Some(value) => Completion::Flag(value != json!(false)),
            None => ready(store.resolve_leak(&entry_of(entries, entry.effect, entry.index)))
                .map_or_else(|error| failed(error, thrown), Completion::Flag),
        },
        Effect::DeferLeak { entry, message, failed_at, next_attempt_at } => match returned {
            Some(value) => Completion::Flag(value != json!(false)),
            None => {
                let entry = entry_of(entries, entry.effect, entry.index);
                ready(store.defer_leak(&entry, message, *failed_at, *next_attempt_at))
                    .map_or_else(|error| failed(error, thrown), Completion::Flag)
            }
        },
        Effect::ClaimSweep { provider, holder, lease_ms, now: asked } => match returned {
            Some(value) => Completion::Flag(value == json!(true)),
            None => ready(store.claim_sweep(provider, holder, *lease_ms, *asked))
                .map_or_else(|error| failed(error, thrown), Completion::Flag),
        },
        Effect::ReleaseSweep { provider, holder } => store_done(ready(store.release_sweep(provider, holder)), thrown),
        Effect::Prune { provider, registry_before, audit_before } => {
            store_done(ready(store.prune(provider, *registry_before, *audit_before)), thrown)
        }
        // A scripted `return` answers without writing (a lost audit write).
        Effect::AppendAudit(rows) => match returned {
            Some(_) => Completion::Ok,
            None => store_done(ready(store.append_audit(rows)), thrown),
        },
        other => {
            let _ = now;
            panic!("unexpected effect {other:?}")
        }
    }
}

/// A listing's `meanwhile`: what other processes do to the store while the
/// listing is out, applied as it settles (before the pass reads it).
fn meanwhile(ops: &Value, start: Millis, store: &InMemorySandboxInstanceStore) {
    for op in ops.as_array().into_iter().flatten() {
        match op["op"].as_str() {
            Some("delete") => ready(store.delete(&text(&op["key"]))).unwrap(),
            Some("upsert") => {
                let mut record = op["record"].clone();
                record["updatedAt"] = json!(absolute(&record["updatedAt"], start));
                let record: SandboxInstanceRecord = serde_json::from_value(record).unwrap();
                ready(store.upsert(&record)).unwrap();
            }
            Some("resolveLeaks") => {
                let lease = std::time::Duration::from_millis(60_000);
                let claimed = ready(store.claim_leaks(&text(&op["provider"]), 1000, lease)).unwrap();
                for entry in claimed {
                    assert!(ready(store.resolve_leak(&entry)).unwrap());
                }
            }
            other => panic!("unknown meanwhile op {other:?}"),
        }
    }
}

/// `actual` matches `expected` when every key `expected` names matches;
/// arrays element by element, of equal length; other values equal.
pub fn partial_match(actual: &Value, expected: &Value, path: &str) -> Result<(), String> {
    match (actual, expected) {
        (Value::Object(actual), Value::Object(expected)) => {
            for (key, want) in expected {
                let got = actual.get(key).unwrap_or(&Value::Null);
                partial_match(got, want, &format!("{path}.{key}"))?;
            }
            Ok(())
        }
        (Value::Array(actual), Value::Array(expected)) => {
            if actual.len() != expected.len() {
                return Err(format!("{path}: {} items, expected {}: {actual:?}", actual.len(), expected.len()));
            }
            for (index, (got, want)) in actual.iter().zip(expected).enumerate() {
                partial_match(got, want, &format!("{path}[{index}]"))?;
            }
            Ok(())
        }
        _ if actual == expected => Ok(()),
        _ => Err(format!("{path}: got {actual}, expected {expected}")),
    }
}

/// Asserts everything a fleet vector expects of an observed run.
pub fn assert_fleet(vector: &Value, observed: &FleetObserved) {
    let name = vector["name"].as_str().unwrap();
    let expected = &vector["expect"];
    match (&observed.result, expected.get("error")) {
        (Ok(report), None) => {
            if let Some(want) = expected.get("report") {
                if let Err(mismatch) = partial_match(report, want, "report") {
                    panic!("{name}: {mismatch}\nfull report: {report}");
                }
            }
        }
        (Err(error), Some(want)) => assert_eq!(error, want, "{name}: error"),
        (got, _) => panic!("{name}: unexpected result {got:?}"),
    }
    let calls: Vec<Value> = observed
        .calls
        .iter()
        .zip(expected["calls"].as_array().unwrap().iter().chain(std::iter::repeat(&Value::Null)))
        .map(|(call, want)| {
            let mut call = call.clone();
            if want.get("at").is_none() {
                call.as_object_mut().unwrap().remove("at");
            }
            call
        })
        .collect();
    assert_eq!(Value::Array(calls), expected["calls"], "{name}: calls");
    let logs = expected.get("logs").cloned().unwrap_or(json!([]));
    assert_eq!(Value::Array(observed.logs.clone()), logs, "{name}: logs");
    if let Some(progress) = expected.get("progress") {
        assert_eq!(Value::Array(observed.progress.clone()), *progress, "{name}: progress");
    }
    assert_eq!(observed.instances_after, expected["instancesAfter"], "{name}: records afterwards");
    if let Some(leaks) = expected.get("leaksAfter") {
        assert_eq!(observed.leaks_after, *leaks, "{name}: leak ledger afterwards");
    }
    if let Some(audit) = expected.get("auditAfter") {
        assert_eq!(observed.audit_after, *audit, "{name}: audit log afterwards");
    }
    let aborted = expected.get("aborted").cloned().unwrap_or(json!([]));
    assert_eq!(Value::Array(observed.aborted.clone()), aborted, "{name}: cancelled calls");
    if let Some(elapsed) = expected.get("elapsedMs") {
        assert_eq!(json!(observed.elapsed), *elapsed, "{name}: virtual time at the end");
    }
}
