//! The vectors' scripted host, acted out on a virtual clock: what the Node
//! and Python harnesses do with their real drivers, done here by driving the
//! core's machines directly. Format: `tests/vectors/README.md`.

pub mod fleet;

use std::collections::BTreeMap;

use sandbox_reclaim::machine::effects::{
    Completion, Effect, EffectId, Ending, Flow, InstanceFields, LogLine, MetaValue, Millis, Output,
};
use sandbox_reclaim::machine::{Reclaim, ReclaimApi, ReclaimInput, Retry, RetryInput};
use serde_json::{json, Map, Value};

/// Where every vector's clock starts unless it says otherwise.
pub const DEFAULT_CLOCK_START: Millis = 1_700_000_000_000;

/// Every case of every vector file, in file order.
pub fn load_vectors() -> Vec<Value> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|entry| entry.unwrap().path()).collect();
    files.retain(|path| path.extension().is_some_and(|ext| ext == "json"));
    files.sort();
    let mut cases = Vec::new();
    for file in files {
        let document: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        cases.extend(document["cases"].as_array().unwrap().iter().cloned());
    }
    cases
}

pub fn clock_start(vector: &Value) -> Millis {
    vector["clock"]["start"].as_u64().unwrap_or(DEFAULT_CLOCK_START)
}

/// The machine a vector specifies, started at the clock's start.
pub fn machine_for(vector: &Value) -> Box<dyn Flow> {
    let options = &vector["options"];
    let timeout = options["destroyTimeoutMs"].as_u64();
    let now = clock_start(vector);
    match vector["api"].as_str().unwrap() {
        "retryLeaks" => Box::new(Retry::new(
            RetryInput {
                provider_name: vector["provider"]["name"].as_str().unwrap().to_owned(),
                limit: options["limit"].as_u64().unwrap_or(100) as u32,
                lease_ms: options["leaseMs"].as_u64().unwrap_or(300_000),
                destroy_timeout_ms: timeout,
            },
            now,
        )),
        api => {
            let record = &vector["record"];
            let input = ReclaimInput {
                api: if api == "reclaimSandbox" { ReclaimApi::ReclaimSandbox } else { ReclaimApi::SandboxReclaimer },
                run_id: record["runId"].as_str().unwrap().to_owned(),
                sandbox_key: record["sandboxKey"].as_str().map(str::to_owned),
                providers: vec![vector["provider"]["name"].as_str().unwrap().to_owned()],
                store_has_ledger: vector["store"]["ledger"] == json!(true),
                destroy_timeout_ms: timeout,
            };
            Box::new(Reclaim::new(input, now))
        }
    }
}

/// A host method's scripted behaviour.
struct Behaviour {
    fails: Option<String>,
    /// `None`: never settles.
    latency: Option<Millis>,
}

fn behaviour(script: &Value) -> Behaviour {
    let latency = script["latencyMs"].as_u64().unwrap_or(0);
    match script["mode"].as_str().unwrap_or("resolve") {
        "throw" | "reject" => {
            Behaviour { fails: Some(script["message"].as_str().unwrap().to_owned()), latency: Some(latency) }
        }
        "hang" => Behaviour { fails: None, latency: None },
        _ => Behaviour { fails: None, latency: Some(latency) },
    }
}

struct Pending {
    id: EffectId,
    settles_at: Millis,
    effect: Effect,
    fails: Option<String>,
    source: &'static str,
}

/// What a run produced, in the vectors' terms.
pub struct Observed {
    pub result: Result<Value, Value>,
    pub calls: Vec<Value>,
    pub logs: Vec<Value>,
    pub aborted: Vec<Value>,
    pub elapsed: Millis,
    pub instances_after: Value,
    pub leaks_after: Value,
}

/// Runs `vector` on a virtual clock against its scripted host.
pub fn run_virtual(vector: &Value) -> Observed {
    let start = clock_start(vector);
    let mut now = start;
    let mut flow = machine_for(vector);
    let mut records: BTreeMap<String, Value> = BTreeMap::new();
    for record in vector["store"]["instances"].as_array().unwrap() {
        records.insert(record["key"].as_str().unwrap().to_owned(), record.clone());
    }
    let mut leaks: Vec<Value> = vector["store"]["leaks"].as_array().cloned().unwrap_or_default();
    for leak in &mut leaks {
        // Vectors give a claim's end relative to the clock's start.
        if let Some(until) = leak["claimedUntil"].as_u64() {
            leak["claimedUntil"] = json!(start + until);
        }
    }
    let mut claimed: BTreeMap<EffectId, Vec<Value>> = BTreeMap::new();
    let mut thrown: BTreeMap<EffectId, &'static str> = BTreeMap::new();
    let (mut calls, mut logs, mut aborted) = (Vec::new(), Vec::new(), Vec::new());
    let mut pending: Vec<Pending> = Vec::new();
    let mut started: BTreeMap<EffectId, Effect> = BTreeMap::new();
    let logger = vector["logger"] == json!(true);
    loop {
        while let Some((id, effect)) = flow.poll_effect() {
            let at = now - start;
            let call =
                |on: &str, method: &str, args: Value| json!({"on": on, "method": method, "args": args, "at": at});
            let (script, source, call) = match &effect {
                Effect::Log(line) => {
                    if logger {
                        logs.push(log_line(line, &thrown));
                    }
                    continue;
                }
                Effect::Progress(_) => continue,
                Effect::Cancel { target } => {
                    // The cancelled effect may still settle later (a host that
                    // ignores its signal): it stays pending, and the machine
                    // must ignore it.
                    if let Some(Effect::Destroy { provider_sandbox_id, .. }) = started.get(target) {
                        aborted.push(json!(provider_sandbox_id));
                    }
                    continue;
                }
                Effect::GetInstance { key } => (&vector["store"]["get"], "get", call("store", "get", json!([key]))),
                Effect::DeleteInstance { key } => {
                    (&vector["store"]["delete"], "delete", call("store", "delete", json!([key])))
                }
                Effect::DeleteRecordingLeak { key, leak } => {
                    let args = json!([key, {
                        "key": leak.key, "provider": leak.provider, "providerSandboxId": leak.provider_sandbox_id,
                        "runId": leak.run_id, "errorMessage": leak.error_message,
                    }]);
                    (&vector["store"]["delete"], "delete", call("store", "deleteRecordingLeak", args))
                }
                Effect::Destroy { provider_sandbox_id, .. } => {
                    let script = &vector["provider"]["destroy"][provider_sandbox_id];
                    (script, "destroy", call("provider", "destroy", json!([{"id": provider_sandbox_id}])))
                }
                Effect::ClaimLeaks { provider, limit, lease_ms } => {
                    let args = json!([provider, limit, lease_ms]);
                    (&vector["store"]["claimLeaks"], "claimLeaks", call("store", "claimLeaks", args))
                }
                Effect::ResolveLeak { entry } => {
                    let sandbox_id = claimed[&entry.effect][entry.index as usize]["providerSandboxId"].clone();
                    (&vector["store"]["resolveLeak"], "resolveLeak", call("store", "resolveLeak", json!([sandbox_id])))
                }
                Effect::RecordRetryFailure { entry, message, failed_at } => {
                    let sandbox_id = claimed[&entry.effect][entry.index as usize]["providerSandboxId"].clone();
                    let args = json!([sandbox_id, message, failed_at - start]);
                    (
                        &vector["store"]["recordRetryFailure"],
                        "recordRetryFailure",
                        call("store", "recordRetryFailure", args),
                    )
                }
                other => unreachable!("fleet cases run in vector_support::fleet: {other:?}"),
            };
            calls.push(call);
            started.insert(id, effect.clone());
            let behaviour = behaviour(script);
            if let Some(latency) = behaviour.latency {
                pending.push(Pending { id, settles_at: now + latency, effect, fails: behaviour.fails, source });
            }
        }
        if let Some(ending) = flow.poll_done() {
            let result = match ending {
                Ending::Resolved(Output::Nothing) => Ok(Value::Null),
                Ending::Resolved(Output::Outcome(outcome)) => Ok(json!(outcome)),
                Ending::Resolved(Output::Retry(summary)) => Ok(json!(summary)),
                Ending::Resolved(_) => unreachable!("fleet cases run in vector_support::fleet"),
                Ending::HostError(id) => Err(json!({"kind": "hostError", "source": thrown[&id]})),
                Ending::ReclaimFailed(failure) => Err(json!({
                    "kind": "SandboxReclaimFailedError", "message": failure.message(),
                    "runId": failure.run_id, "sandboxKey": failure.sandbox_key,
                })),
            };
            let instances_after = Value::Array(records.into_values().collect());
            let leaks_after = Value::Array(leaks.iter().map(public_leak).collect());
            return Observed { result, calls, logs, aborted, elapsed: now - start, instances_after, leaks_after };
        }
        // The earliest settle (ties: the effect started first), unless the machine's deadline comes before.
        let next = pending.iter().enumerate().min_by_key(|(_, p)| (p.settles_at, p.id)).map(|(index, _)| index);
        let timeout = flow.poll_timeout();
        let settle_first = next.filter(|&index| timeout.is_none_or(|at| pending[index].settles_at <= at));
        if let Some(index) = settle_first {
            let settled = pending.remove(index);
            now = now.max(settled.settles_at);
            let completion = match settled.fails {
                Some(message) => {
                    thrown.insert(settled.id, settled.source);
                    Completion::Failed { message }
                }
                None => perform(&settled, now, &mut records, &mut leaks, &mut claimed),
            };
            flow.complete(settled.id, completion, now).expect("the machine accepts its own effect's completion");
        } else if let Some(at) = timeout {
            now = now.max(at);
            flow.handle_timeout(now);
        } else {
            panic!("vector `{}` hangs: nothing in flight and no deadline", vector["name"]);
        }
    }
}

/// The scripted store's answer, computed when the effect settles.
fn perform(
    settled: &Pending,
    now: Millis,
    records: &mut BTreeMap<String, Value>,
    leaks: &mut Vec<Value>,
    claimed: &mut BTreeMap<EffectId, Vec<Value>>,
) -> Completion {
    let same = |leak: &Value, entry: &Value| {
        leak["provider"] == entry["provider"] && leak["providerSandboxId"] == entry["providerSandboxId"]
    };
    match &settled.effect {
        Effect::GetInstance { key } => Completion::Instance(records.get(key).map(|record| InstanceFields {
            provider: record["provider"].as_str().unwrap().to_owned(),
            provider_sandbox_id: record["providerSandboxId"].as_str().unwrap().to_owned(),
        })),
        Effect::DeleteInstance { key } => {
            records.remove(key);
            Completion::Ok
        }
        Effect::DeleteRecordingLeak { key, leak } => {
            records.remove(key);
            let entry = json!({
                "key": leak.key, "provider": leak.provider, "providerSandboxId": leak.provider_sandbox_id,
                "runId": leak.run_id, "lastError": leak.error_message, "failedAt": leak.failed_at, "attempts": 1,
            });
            match leaks.iter_mut().find(|known| same(known, &entry)) {
                Some(known) => {
                    let attempts = known["attempts"].as_u64().unwrap() + 1;
                    *known = entry;
                    known["attempts"] = json!(attempts);
                }
                None => leaks.push(entry),
            }
            Completion::Ok
        }
        Effect::ClaimLeaks { provider, limit, lease_ms } => {
            let mut taken = Vec::new();
            for leak in leaks.iter_mut() {
                let free = leak["claimedUntil"].as_u64().is_none_or(|until| until <= now);
                if taken.len() < *limit as usize && leak["provider"] == json!(provider) && free {
                    leak["claimedUntil"] = json!(now + lease_ms);
                    taken.push(leak.clone());
                }
            }
            let ids = taken.iter().map(|leak| leak["providerSandboxId"].as_str().unwrap().to_owned()).collect();
            claimed.insert(settled.id, taken);
            Completion::Leaks(ids)
        }
        Effect::ResolveLeak { entry } => {
            let entry = claimed[&entry.effect][entry.index as usize].clone();
            leaks.retain(|leak| !same(leak, &entry));
            Completion::Ok
        }
        Effect::RecordRetryFailure { entry, message, failed_at } => {
            let entry = claimed[&entry.effect][entry.index as usize].clone();
            if let Some(known) = leaks.iter_mut().find(|leak| same(leak, &entry)) {
                known["attempts"] = json!(known["attempts"].as_u64().unwrap() + 1);
                known["lastError"] = json!(message);
                known["failedAt"] = json!(failed_at);
                known.as_object_mut().unwrap().remove("claimedUntil");
            }
            Completion::Ok
        }
        Effect::Destroy { .. } => Completion::Ok,
        other => unreachable!("never settles here: {other:?}"),
    }
}

/// A ledger entry as the vectors list it: without time fields.
fn public_leak(leak: &Value) -> Value {
    let mut leak = leak.clone();
    let object = leak.as_object_mut().unwrap();
    object.remove("failedAt");
    object.remove("claimedUntil");
    leak
}

pub fn log_line(line: &LogLine, thrown: &BTreeMap<EffectId, &'static str>) -> Value {
    let mut meta = Map::new();
    for (key, value) in &line.meta {
        let value = match value {
            MetaValue::Text(text) => json!(text),
            MetaValue::HostError(id) => json!({"$hostError": thrown[id]}),
            MetaValue::DestroyTimeout { provider_sandbox_id, timeout_ms } => json!({"$timeoutError": {
                "providerSandboxId": provider_sandbox_id, "timeoutMs": timeout_ms,
                "message": sandbox_reclaim::report::messages::destroy_timeout_message(provider_sandbox_id, *timeout_ms),
            }}),
        };
        meta.insert((*key).to_owned(), value);
    }
    json!({"level": line.level.as_str(), "message": line.message, "meta": meta})
}

/// Asserts everything a vector expects of an observed run.
pub fn assert_observed(vector: &Value, observed: &Observed) {
    let name = vector["name"].as_str().unwrap();
    let expected = &vector["expect"];
    match (&observed.result, expected.get("error")) {
        (Ok(result), None) => assert_eq!(*result, expected["result"], "{name}: result"),
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
    assert_eq!(Value::Array(observed.logs.clone()), expected["logs"], "{name}: logs");
    assert_eq!(observed.instances_after, expected["instancesAfter"], "{name}: store contents afterwards");
    if let Some(leaks) = expected.get("leaksAfter") {
        assert_eq!(observed.leaks_after, *leaks, "{name}: leak ledger afterwards");
    }
    let aborted = expected.get("aborted").cloned().unwrap_or(json!([]));
    assert_eq!(Value::Array(observed.aborted.clone()), aborted, "{name}: cancelled destroys");
    if let Some(elapsed) = expected.get("elapsedMs") {
        assert_eq!(json!(observed.elapsed), *elapsed, "{name}: virtual time at the end");
    }
}
