//! The flat form in which flows cross into a host language's driver (the JS
//! and Python drivers in the bindings): one table of runs, and *batches*.
//!
//! A run lives in a [`RunTable`] under a small number, so a host keeps no
//! native object per run. Every call answers with a batch: one flat list
//! carrying the run's number, its next deadline, its ending (if it ended) and
//! the effects to start, so a reclaim crosses the boundary once per host call:
//!
//! ```text
//! [run, deadline | None, ending, ending operands..., op, id, args..., op, id, args..., ...]
//! ```
//!
//! How many operands follow the ending kind is [`Protocol::ending_operands`]
//! (none while the run goes on): every slot costs a host call to build, so a
//! batch carries only what the driver reads.
//!
//! Both bindings turn [`Slot`]s into their own values and read the layout's
//! numbers from [`Protocol`], so no driver hard-codes them. Python gets a
//! tuple; Node gets one packed string (`bindings-node/src/packed.rs`), since
//! napi builds an array element by element, and a string the run passed in
//! crosses back as its index.
//!
//! Layer: the top one; may import every other layer of this crate.

use std::collections::HashMap;

use serde_json::Value;

use crate::machine::effects::{
    Completion, DueFields, Effect, EffectId, Ending, InstanceFields, LogLevel, MetaValue, Millis, Misuse, Output,
    StaleRecord,
};
use crate::machine::BoxedFlow;
use crate::model::fleet::{LeakReason, ListedSandbox};
use crate::report::messages;

/// One value of a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Slot {
    /// A whole number (ids, counts, epoch milliseconds; all below 2^53).
    Int(u64),
    Text(String),
    /// JavaScript's `undefined`, Python's `None`.
    Nothing,
}

/// Batch header: run, deadline, ending kind (its operands follow).
pub const HEADER: usize = 3;

/// Ending kinds (header slot 2).
pub mod ending {
    pub const RUNNING: u32 = 0;
    pub const RESOLVE_NOTHING: u32 = 1;
    /// Resolve with the string in slot 3 (an outcome).
    pub const RESOLVE_STRING: u32 = 2;
    /// Resolve with the JSON document in slot 3 (a summary).
    pub const RESOLVE_JSON: u32 = 3;
    /// Reject with the value effect `slot 3` threw.
    pub const REJECT_HOST_ERROR: u32 = 4;
    /// Reject with `SandboxReclaimFailedError(runId = slot 3, sandboxKey = slot 4)`, message slot 5.
    pub const REJECT_RECLAIM_FAILED: u32 = 5;

    /// How many operands follow each ending kind, by kind.
    pub const OPERANDS: [u32; 6] = [0, 0, 1, 1, 1, 3];
}

pub use crate::machine::effect_table::op;

/// Meta value kinds inside a LOG effect.
pub mod meta {
    /// value: the text
    pub const TEXT: u32 = 0;
    /// value: the effect whose thrown value it is
    pub const HOST_ERROR: u32 = 1;
    /// values: providerSandboxId, timeoutMs, message (a `SandboxDestroyTimeoutError`)
    pub const DESTROY_TIMEOUT: u32 = 2;
}

/// Completion kinds a driver reports with [`RunTable::complete`].
pub mod completion {
    pub const OK: u32 = 0;
    /// a: the failure's message (destroys only; empty otherwise)
    pub const FAILED: u32 = 1;
    /// a: provider, b: providerSandboxId
    pub const INSTANCE: u32 = 2;
    pub const NO_INSTANCE: u32 = 3;
    /// a: the host's answer as JSON (the effects marked "answered with JSON")
    pub const JSON: u32 = 4;
}

/// The layout's numbers and the fixed names a driver checks input against.
#[derive(Debug, Clone)]
pub struct Protocol {
    pub header: u32,
    pub endings: [u32; 6],
    /// Operands after each ending kind (indexed by kind).
    pub ending_operands: [u32; 6],
    pub ops: [u32; op::ALL.len()],
    pub meta_kinds: [u32; 3],
    pub completions: [u32; 5],
    /// The logger methods a flow may call.
    pub levels: [&'static str; 3],
    pub reclaim_failed_error_name: &'static str,
    pub destroy_timeout_error_name: &'static str,
    pub unreadable_error_message: &'static str,
    /// Each op's operands, host method and answer, by op number.
    pub effects: &'static [crate::machine::effect_table::EffectSpec],
}

/// See [`Protocol`].
pub fn protocol() -> Protocol {
    use ending::*;
    Protocol {
        header: HEADER as u32,
        endings: [RUNNING, RESOLVE_NOTHING, RESOLVE_STRING, RESOLVE_JSON, REJECT_HOST_ERROR, REJECT_RECLAIM_FAILED],
        ending_operands: OPERANDS,
        ops: op::ALL,
        meta_kinds: [meta::TEXT, meta::HOST_ERROR, meta::DESTROY_TIMEOUT],
        completions: [
            completion::OK,
            completion::FAILED,
            completion::INSTANCE,
            completion::NO_INSTANCE,
            completion::JSON,
        ],
        levels: LogLevel::ALL.map(LogLevel::as_str),
        reclaim_failed_error_name: messages::RECLAIM_FAILED_ERROR_NAME,
        destroy_timeout_error_name: messages::DESTROY_TIMEOUT_ERROR_NAME,
        unreadable_error_message: messages::UNREADABLE_ERROR,
        effects: &crate::machine::effect_table::EFFECTS,
    }
}

/// Why a driver's call was refused (a driver bug, never user input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("{prefix}: unknown run {run}", prefix = messages::MISUSE, run = .0)]
    UnknownRun(u32),
    #[error("{prefix}: unknown completion kind {kind}", prefix = messages::MISUSE, kind = .0)]
    UnknownCompletion(u32),
    #[error(transparent)]
    Misuse(#[from] Misuse),
}

struct Run {
    flow: BoxedFlow,
    /// Its ending was sent. It stays answerable until its slot is reused:
    /// the driver may still report that a log of the final batch threw (which
    /// changes the ending), and it runs that batch before starting anything.
    ended: bool,
    /// Effects answered with JSON, by id → their op (how to read the answer).
    json_answers: HashMap<EffectId, u32>,
}

/// The runs of one driver thread (or of one interpreter), by number; ended
/// and abandoned slots are reused.
#[derive(Default)]
pub struct RunTable {
    runs: Vec<Option<Run>>,
    /// Slots free for the next run (ended or abandoned), so starting one is
    /// O(1) however many are in flight.
    free: Vec<u32>,
}

impl RunTable {
    pub const fn new() -> Self {
        Self { runs: Vec::new(), free: Vec::new() }
    }

    /// Admits a started flow; answers its first batch.
    pub fn start(&mut self, flow: BoxedFlow) -> Vec<Slot> {
        let entry = Some(Run { flow, ended: false, json_answers: HashMap::new() });
        let run = match self.free.pop() {
            Some(free) => {
                self.runs[free as usize] = entry;
                free
            }
            None => {
                self.runs.push(entry);
                (self.runs.len() - 1) as u32
            }
        };
        self.advance(run, |_| Ok(())).unwrap_or_default()
    }

    /// Feeds how effect `id` settled (`kind`: a [`completion`] kind).
    pub fn complete(
        &mut self,
        run: u32,
        id: EffectId,
        kind: u32,
        a: Option<String>,
        b: Option<String>,
        now: Millis,
    ) -> Result<Vec<Slot>, WireError> {
        if kind == completion::JSON {
            let entry = self.runs.get_mut(run as usize).and_then(Option::as_mut).ok_or(WireError::UnknownRun(run))?;
            let op = entry.json_answers.remove(&id).ok_or(Misuse(messages::MISUSE_UNKNOWN_EFFECT))?;
            let settled = decode(op, a.as_deref().unwrap_or("null"));
            return self.advance(run, |flow| Ok(flow.complete(id, settled, now)?));
        }
        let settled = match kind {
            completion::OK => Completion::Ok,
            completion::FAILED => Completion::Failed { message: a.unwrap_or_default() },
            completion::INSTANCE => Completion::Instance(Some(InstanceFields {
                provider: a.unwrap_or_default(),
                provider_sandbox_id: b.unwrap_or_default(),
            })),
            completion::NO_INSTANCE => Completion::Instance(None),
            other => return Err(WireError::UnknownCompletion(other)),
        };
        self.advance(run, |flow| Ok(flow.complete(id, settled, now)?))
    }

    /// Feeds a `claimLeaks` answer: the provider sandbox id of each entry.
    pub fn complete_leaks(
        &mut self,
        run: u32,
        id: EffectId,
        sandbox_ids: Vec<String>,
        now: Millis,
    ) -> Result<Vec<Slot>, WireError> {
        self.advance(run, |flow| Ok(flow.complete(id, Completion::Leaks(sandbox_ids), now)?))
    }

    /// Tells run `run` the time (its deadline was reached).
    pub fn timeout(&mut self, run: u32, now: Millis) -> Result<Vec<Slot>, WireError> {
        self.advance(run, |flow| {
            flow.handle_timeout(now);
            Ok(())
        })
    }

    /// Tells run `run` its caller cancelled it (see [`crate::machine::effects::Flow::stop`]).
    pub fn stop(&mut self, run: u32, now: Millis) -> Result<Vec<Slot>, WireError> {
        self.advance(run, |flow| {
            flow.stop(now);
            Ok(())
        })
    }

    /// Forgets run `run` (its driver gave up: a host answer broke its contract).
    pub fn abandon(&mut self, run: u32) {
        if let Some(slot) = self.runs.get_mut(run as usize) {
            // An ended run's slot is already free.
            if slot.take().is_some_and(|run| !run.ended) {
                self.free.push(run);
            }
        }
    }

    fn advance(
        &mut self,
        run: u32,
        step: impl FnOnce(&mut BoxedFlow) -> Result<(), WireError>,
    ) -> Result<Vec<Slot>, WireError> {
        let entry = self.runs.get_mut(run as usize).and_then(Option::as_mut).ok_or(WireError::UnknownRun(run))?;
        step(&mut entry.flow)?;
        let (slots, ended) = encode(run, &mut entry.flow, &mut entry.json_answers);
        if ended && !entry.ended {
            entry.ended = true;
            self.free.push(run);
        }
        Ok(slots)
    }
}

fn int(value: impl Into<u64>) -> Slot {
    Slot::Int(value.into())
}

fn text(value: impl Into<String>) -> Slot {
    Slot::Text(value.into())
}

/// The batch of `flow`: its deadline or its ending, then its effects,
/// written into one vector (the header first, filled in once the flow says
/// whether it ended).
fn encode(run: u32, flow: &mut BoxedFlow, json_answers: &mut HashMap<EffectId, u32>) -> (Vec<Slot>, bool) {
    let mut slots = Vec::with_capacity(HEADER + 8);
    slots.extend([int(run), Slot::Nothing, int(ending::RUNNING)]);
    while let Some((id, effect)) = flow.poll_effect() {
        let code = encode_effect(&mut slots, id, effect);
        if crate::machine::effect_table::answered_with_json(code) {
            json_answers.insert(id, code);
        }
    }
    let Some(end) = flow.poll_done() else {
        slots[1] = flow.poll_timeout().map_or(Slot::Nothing, int);
        return (slots, false);
    };
    let (kind, operands) = match end {
        Ending::Resolved(Output::Nothing) => (ending::RESOLVE_NOTHING, vec![]),
        Ending::Resolved(Output::Outcome(outcome)) => (ending::RESOLVE_STRING, vec![text(outcome.as_str())]),
        Ending::Resolved(Output::Retry(summary)) => {
            (ending::RESOLVE_JSON, vec![text(serde_json::to_string(&summary).unwrap_or_default())])
        }
        Ending::Resolved(Output::FleetReclaim(report)) => {
            (ending::RESOLVE_JSON, vec![text(serde_json::to_string(&report).unwrap_or_default())])
        }
        Ending::Resolved(Output::Reconcile(report)) => {
            (ending::RESOLVE_JSON, vec![text(serde_json::to_string(&report).unwrap_or_default())])
        }
        Ending::HostError(id) => (ending::REJECT_HOST_ERROR, vec![int(id)]),
        Ending::ReclaimFailed(failure) => {
            let message = failure.message();
            let key = failure.sandbox_key.map_or(Slot::Nothing, text);
            (ending::REJECT_RECLAIM_FAILED, vec![text(failure.run_id), key, text(message)])
        }
    };
    debug_assert_eq!(operands.len(), ending::OPERANDS[kind as usize] as usize);
    slots[2] = int(kind);
    slots.splice(HEADER..HEADER, operands);
    (slots, true)
}

fn leak_slots(leak: crate::model::ledger::NewLeak) -> [Slot; 6] {
    [
        text(leak.key),
        text(leak.provider),
        text(leak.provider_sandbox_id),
        text(leak.run_id),
        text(leak.error_message),
        int(leak.failed_at),
    ]
}

/// Appends one effect; answers its op.
fn encode_effect(slots: &mut Vec<Slot>, id: EffectId, effect: Effect) -> u32 {
    match effect {
        Effect::GetInstance { key } => push(slots, op::GET_INSTANCE, id, [text(key)]),
        Effect::DeleteInstance { key } => push(slots, op::DELETE_INSTANCE, id, [text(key)]),
        Effect::DeleteRecordingLeak { key, leak } => push(
            slots,
            op::DELETE_RECORDING_LEAK,
            id,
            [
                text(key),
                text(leak.key),
                text(leak.provider),
                text(leak.provider_sandbox_id),
                text(leak.run_id),
                text(leak.error_message),
                int(leak.failed_at),
            ],
        ),
        Effect::Destroy { provider, provider_sandbox_id, deadline } => push(
            slots,
            op::DESTROY,
            id,
            [int(provider), text(provider_sandbox_id), deadline.map_or(Slot::Nothing, int)],
        ),
        Effect::ListSandboxes { provider, deadline } => {
            push(slots, op::LIST_SANDBOXES, id, [int(provider), deadline.map_or(Slot::Nothing, int)])
        }
        Effect::LookupSandboxes { provider, ids, deadline } => push(
            slots,
            op::LOOKUP_SANDBOXES,
            id,
            [int(provider), text(json_ids(&ids)), deadline.map_or(Slot::Nothing, int)],
        ),
        Effect::SandboxReferences { provider, destroyed_since } => {
            push(slots, op::SANDBOX_REFERENCES, id, [text(provider), int(destroyed_since)])
        }
        Effect::RegisteredSandboxes { provider, since } => {
            push(slots, op::REGISTERED_SANDBOXES, id, [text(provider), int(since)])
        }
        Effect::SweepMark { provider } => push(slots, op::SWEEP_MARK, id, [text(provider)]),
        Effect::ReferencedAmong { provider, ids, destroyed_since, mark } => push(
            slots,
            op::REFERENCED_AMONG,
            id,
            [text(provider), text(json_ids(&ids)), int(destroyed_since), int(mark)],
        ),
        Effect::RegisteredAmong { provider, ids, since } => {
            push(slots, op::REGISTERED_AMONG, id, [text(provider), text(json_ids(&ids)), int(since)])
        }
        Effect::LookupCandidates { provider, since, limit } => {
            push(slots, op::LOOKUP_CANDIDATES, id, [text(provider), int(since), int(limit)])
        }
        Effect::LookupChecked { provider, gone, checked, now } => push(
            slots,
            op::LOOKUP_CHECKED,
            id,
            [text(provider), text(json_ids(&gone)), text(json_ids(&checked)), int(now)],
        ),
        Effect::ListStale { older_than, limit } => push(slots, op::LIST_STALE, id, [int(older_than), int(limit)]),
        Effect::ExpireIdle { key, updated_at, leak } => {
            let mut args = vec![text(key), int(updated_at)];
            args.extend(leak_slots(leak));
            push_all(slots, op::EXPIRE_IDLE, id, args)
        }
        Effect::RecordLeak { leak, reason, next_attempt_at } => {
            let mut args = leak_slots(leak).to_vec();
            args.extend([text(reason.as_str()), int(next_attempt_at)]);
            push_all(slots, op::RECORD_LEAK, id, args)
        }
        Effect::DueLeaks { provider, limit, lease_ms, now } => {
            push(slots, op::DUE_LEAKS, id, [text(provider), int(limit), lease_ms.map_or(Slot::Nothing, int), int(now)])
        }
        Effect::DeferLeak { entry, message, failed_at, next_attempt_at } => push(
            slots,
            op::DEFER_LEAK,
            id,
            [int(entry.effect), int(entry.index), text(message), int(failed_at), int(next_attempt_at)],
        ),
        Effect::ClaimSweep { provider, holder, lease_ms, now } => {
            push(slots, op::CLAIM_SWEEP, id, [text(provider), text(holder), int(lease_ms), int(now)])
        }
        Effect::ReleaseSweep { provider, holder } => push(slots, op::RELEASE_SWEEP, id, [text(provider), text(holder)]),
        Effect::AppendAudit(entries) => {
            push(slots, op::APPEND_AUDIT, id, [text(serde_json::to_string(&entries).unwrap_or_else(|_| "[]".into()))])
        }
        Effect::Progress(event) => push(slots, op::PROGRESS, id, [text(event)]),
        Effect::Prune { provider, registry_before, audit_before } => {
            push(slots, op::PRUNE, id, [text(provider), int(registry_before), int(audit_before)])
        }
        Effect::ClaimLeaks { provider, limit, lease_ms } => {
            push(slots, op::CLAIM_LEAKS, id, [text(provider), int(limit), int(lease_ms)])
        }
        Effect::ResolveLeak { entry } => push(slots, op::RESOLVE_LEAK, id, [int(entry.effect), int(entry.index)]),
        Effect::RecordRetryFailure { entry, message, failed_at } => push(
            slots,
            op::RECORD_RETRY_FAILURE,
            id,
            [int(entry.effect), int(entry.index), text(message), int(failed_at)],
        ),
        Effect::Log(line) => {
            let mut args = vec![text(line.level.as_str()), text(line.message), int(line.meta.len() as u64)];
            for (key, value) in line.meta {
                args.push(text(key));
                match value {
                    MetaValue::Text(value) => args.extend([int(meta::TEXT), text(value)]),
                    MetaValue::HostError(effect) => args.extend([int(meta::HOST_ERROR), int(effect)]),
                    MetaValue::DestroyTimeout { provider_sandbox_id, timeout_ms } => {
                        let message = messages::destroy_timeout_message(&provider_sandbox_id, timeout_ms);
                        args.extend([
                            int(meta::DESTROY_TIMEOUT),
                            text(provider_sandbox_id),
                            int(timeout_ms),
                            text(message),
                        ]);
                    }
                }
            }
            push_all(slots, op::LOG, id, args)
        }
        Effect::Cancel { target } => push(slots, op::CANCEL, id, [int(target)]),
    }
}

/// Ids as the JSON array a host reads.
fn json_ids(ids: &[String]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".into())
}

/// Appends an effect whose operand count varies.
fn push_all(slots: &mut Vec<Slot>, code: u32, id: EffectId, operands: Vec<Slot>) -> u32 {
    slots.extend([int(code), int(id)]);
    slots.extend(operands);
    code
}

/// Appends an effect of `N` operands (no operand vector: an array).
fn push<const N: usize>(slots: &mut Vec<Slot>, code: u32, id: EffectId, operands: [Slot; N]) -> u32 {
    slots.reserve(N + 2);
    slots.extend([int(code), int(id)]);
    slots.extend(operands);
    code
}

/// Reads a host's JSON answer to effect op `op`. A malformed answer is a
/// failure of that effect (a listing then fails closed), never a guess.
fn decode(op: u32, json: &str) -> Completion {
    let failed = |what: String| Completion::Failed { message: format!("{}: {what}", messages::MALFORMED_ANSWER) };
    let value: Value = match serde_json::from_str(json) {
        Ok(value) => value,
        Err(error) => return failed(error.to_string()),
    };
    let items = || value.as_array().cloned().unwrap_or_default();
    let is_array = value.is_array();
    match op {
        op::EXPIRE_IDLE | op::CLAIM_SWEEP | op::RESOLVE_LEAK | op::RECORD_RETRY_FAILURE | op::DEFER_LEAK => {
            match value.as_bool() {
                Some(flag) => Completion::Flag(flag),
                None => failed("expected true or false".into()),
            }
        }
        op::SWEEP_MARK => match whole(&value) {
            Some(mark) => Completion::Mark(mark),
            None => failed("expected a whole number of at least 0".into()),
        },
        _ if !is_array => failed("expected an array".into()),
        op::SANDBOX_REFERENCES
        | op::REGISTERED_SANDBOXES
        | op::REFERENCED_AMONG
        | op::REGISTERED_AMONG
        | op::LOOKUP_CANDIDATES => {
            let ids: Option<Vec<String>> = items().iter().map(|id| id.as_str().map(str::to_owned)).collect();
            ids.map_or_else(|| failed("expected an array of strings".into()), Completion::Ids)
        }
        op::LIST_SANDBOXES | op::LOOKUP_SANDBOXES => {
            let mut sandboxes = Vec::new();
            for (index, item) in items().iter().enumerate() {
                let Some(id) = item.get("id").and_then(Value::as_str) else {
                    return failed(format!("listed sandbox {index} has no string `id`"));
                };
                let deleting = match item.get("deleting") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(deleting)) => *deleting,
                    Some(_) => return failed(format!("listed sandbox {index} has a `deleting` that is not a boolean")),
                };
                sandboxes.push(ListedSandbox {
                    id: id.to_owned(),
                    created_at: item.get("createdAt").and_then(whole),
                    owner: item.get("owner").and_then(Value::as_str).map(str::to_owned),
                    key: item.get("key").and_then(Value::as_str).map(str::to_owned),
                    deleting,
                });
            }
            Completion::Sandboxes(sandboxes)
        }
        op::LIST_STALE => {
            let mut records = Vec::new();
            for (index, item) in items().iter().enumerate() {
                let field = |name: &str| item.get(name).and_then(Value::as_str).map(str::to_owned);
                let (Some(key), Some(provider), Some(provider_sandbox_id), Some(updated_at)) = (
                    field("key"),
                    field("provider"),
                    field("providerSandboxId"),
                    item.get("updatedAt").and_then(whole),
                ) else {
                    return failed(format!("stale record {index} lacks key, provider, providerSandboxId or updatedAt"));
                };
                records.push(StaleRecord { key, provider, provider_sandbox_id, updated_at });
            }
            Completion::Stale(records)
        }
        op::DUE_LEAKS => {
            let mut entries = Vec::new();
            for (index, item) in items().iter().enumerate() {
                let field = |name: &str| item.get(name).and_then(Value::as_str).map(str::to_owned);
                let (Some(provider_sandbox_id), Some(key)) = (field("providerSandboxId"), field("key")) else {
                    return failed(format!("leak entry {index} lacks providerSandboxId or key"));
                };
                let attempts = item.get("attempts").and_then(whole).unwrap_or(1);
                let reason = field("reason").map_or(LeakReason::DestroyFailed, |text| LeakReason::parse(&text));
                entries.push(DueFields {
                    provider_sandbox_id,
                    key,
                    attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
                    reason,
                });
            }
            Completion::Due(entries)
        }
        _ => failed(format!("op {op} is not answered with JSON")),
    }
}

/// A whole, non-negative JSON number (epoch milliseconds, counts).
fn whole(value: &Value) -> Option<u64> {
    value
        .as_u64()
        .or_else(|| value.as_f64().filter(|n| n.fract() == 0.0 && *n >= 0.0 && *n < 9.007e15).map(|n| n as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{Reclaim, ReclaimApi, ReclaimInput};

    fn reclaim(key: Option<&str>) -> BoxedFlow {
        let input = ReclaimInput {
            api: ReclaimApi::ReclaimSandbox,
            run_id: "r".into(),
            sandbox_key: key.map(str::to_owned),
            providers: vec!["docker".into()],
            store_has_ledger: false,
            destroy_timeout_ms: None,
        };
        Box::new(Reclaim::new(input, 0))
    }

    #[test]
    fn a_batch_carries_the_effects_then_the_ending() {
        let mut table = RunTable::new();
        let batch = table.start(reclaim(Some("k")));
        assert_eq!(batch[2], int(ending::RUNNING));
        assert_eq!(batch.len(), HEADER + 3, "a running batch carries no ending operands");
        assert_eq!(&batch[HEADER..], &[int(op::GET_INSTANCE), int(1u32), text("k")]);
        let batch = table.complete(0, 1, completion::NO_INSTANCE, None, None, 0).unwrap();
        assert_eq!(batch[2], int(ending::RESOLVE_STRING));
        assert_eq!(batch[3], text("not-found"));
    }

    #[test]
    fn the_operand_table_matches_what_each_effect_encodes() {
        use crate::machine::effect_table::{slots, EFFECTS};
        use crate::machine::effects::HostRef;
        use crate::machine::effects::LogLine;
        use crate::model::ledger::NewLeak;
        let leak = || NewLeak {
            key: "k".into(),
            provider: "p".into(),
            provider_sandbox_id: "s".into(),
            run_id: "r".into(),
            error_message: "m".into(),
            failed_at: 1,
        };
        let entry = HostRef { effect: 1, index: 0 };
        let effects = vec![
            Effect::GetInstance { key: "k".into() },
            Effect::DeleteInstance { key: "k".into() },
            Effect::DeleteRecordingLeak { key: "k".into(), leak: leak() },
            Effect::Destroy { provider: 0, provider_sandbox_id: "s".into(), deadline: Some(5) },
            Effect::ClaimLeaks { provider: "p".into(), limit: 1, lease_ms: 2 },
            Effect::ResolveLeak { entry },
            Effect::RecordRetryFailure { entry, message: "m".into(), failed_at: 1 },
            Effect::Log(LogLine { level: LogLevel::Warn, message: "m", meta: vec![] }),
            Effect::Cancel { target: 1 },
            Effect::ListSandboxes { provider: 0, deadline: None },
            Effect::SandboxReferences { provider: "p".into(), destroyed_since: 0 },
            Effect::ListStale { older_than: 0, limit: 1 },
            Effect::ExpireIdle { key: "k".into(), updated_at: 0, leak: leak() },
            Effect::RecordLeak { leak: leak(), reason: LeakReason::DestroyFailed, next_attempt_at: 0 },
            Effect::DueLeaks { provider: "p".into(), limit: 1, lease_ms: None, now: 0 },
            Effect::DeferLeak { entry, message: "m".into(), failed_at: 0, next_attempt_at: 0 },
            Effect::ClaimSweep { provider: "p".into(), holder: "h".into(), lease_ms: 1, now: 0 },
            Effect::ReleaseSweep { provider: "p".into(), holder: "h".into() },
            Effect::AppendAudit(vec![]),
            Effect::Progress("{}".into()),
            Effect::RegisteredSandboxes { provider: "p".into(), since: 0 },
            Effect::Prune { provider: "p".into(), registry_before: 0, audit_before: 0 },
            Effect::LookupSandboxes { provider: 0, ids: vec!["s".into()], deadline: None },
            Effect::SweepMark { provider: "p".into() },
            Effect::ReferencedAmong { provider: "p".into(), ids: vec!["s".into()], destroyed_since: 0, mark: 1 },
            Effect::RegisteredAmong { provider: "p".into(), ids: vec!["s".into()], since: 0 },
            Effect::LookupCandidates { provider: "p".into(), since: 0, limit: 1 },
            Effect::LookupChecked { provider: "p".into(), gone: vec![], checked: vec!["s".into()], now: 0 },
        ];
        assert_eq!(effects.len(), EFFECTS.len(), "one sample per op");
        for (index, effect) in effects.into_iter().enumerate() {
            let mut encoded = Vec::new();
            let code = encode_effect(&mut encoded, 9, effect);
            let spec = &EFFECTS[code as usize];
            assert_eq!((spec.op, code), (code, index as u32), "rows are in op order");
            if code == op::LOG {
                continue; // its meta is variable; the driver reads it itself
            }
            let expected: usize = spec.operands.iter().map(|kind| slots(kind)).sum();
            assert_eq!(encoded.len() - 2, expected, "op {code} ({})", spec.method);
        }
    }

    #[test]
    fn every_json_shape_decodes_with_its_required_fields_and_refuses_without_them() {
        use crate::machine::effect_table::EFFECTS;
        for spec in EFFECTS.iter().filter(|spec| spec.shape.is_some_and(|shape| shape.kind == "records")) {
            let shape = spec.shape.unwrap();
            let sample = |skip: Option<&str>| {
                let item: serde_json::Map<String, Value> = shape
                    .fields
                    .iter()
                    .filter(|field| field.required && Some(field.wire) != skip)
                    .map(|field| {
                        let value = if field.kind == "text" { Value::from("x") } else { Value::from(1) };
                        (field.wire.to_owned(), value)
                    })
                    .collect();
                serde_json::to_string(&[item]).unwrap()
            };
            assert!(!matches!(decode(spec.op, &sample(None)), Completion::Failed { .. }), "{}", spec.method);
            for field in shape.fields.iter().filter(|field| field.required) {
                let decoded = decode(spec.op, &sample(Some(field.wire)));
                assert!(matches!(decoded, Completion::Failed { .. }), "{} without {}", spec.method, field.wire);
            }
        }
    }

    #[test]
    fn ended_slots_are_reused_and_unknown_runs_refused() {
        let mut table = RunTable::new();
        table.start(reclaim(None)); // ends at once
        let batch = table.start(reclaim(Some("k")));
        assert_eq!(batch[0], int(0u32), "the ended run's slot is reused");
        assert_eq!(table.timeout(7, 0), Err(WireError::UnknownRun(7)));
        assert!(matches!(table.complete(0, 1, 99, None, None, 0), Err(WireError::UnknownCompletion(99))));
        table.abandon(0);
        assert_eq!(table.timeout(0, 0), Err(WireError::UnknownRun(0)));
        table.abandon(0);
        assert_eq!(table.start(reclaim(Some("a")))[0], int(0u32));
        assert_eq!(table.start(reclaim(Some("b")))[0], int(1u32), "a slot is handed out once");
    }
}
