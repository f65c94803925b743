//! The core's flow machines, for the generic JS driver (`lib/driver.cjs`).
//!
//! A run lives in this thread's table under a small number (no JS object per
//! run). Every call answers with a *batch*: one flat array that carries the
//! run's number, its next deadline, its ending (if it ended) and the effects
//! to start, so a reclaim crosses the boundary only once per host call:
//!
//! ```text
//! [run, deadline | -1, ending, endA, endB, endC, op, id, args..., op, id, args..., ...]
//! ```
//!
//! The layout's constants are exported by [`protocol`] so the driver never
//! hard-codes them. Strings cross as napi strings, which the driver checks
//! are well-formed UTF-16 first (a lone surrogate would become U+FFFD here).

use std::cell::RefCell;

use napi::bindgen_prelude::Either3;
use napi::{Error, Result, Status};
use napi_derive::napi;
use sandbox_reclaim::effects::{
    Completion, Effect, EffectId, Ending, InstanceFields, LogLevel, MetaValue, Millis, Output,
};
use sandbox_reclaim::flows::{BoxedFlow, Reclaim, ReclaimApi, ReclaimInput, Retry, RetryInput};
use sandbox_reclaim::messages;

/// One slot of a batch: a number, a string or `undefined`.
type Slot = Either3<f64, String, ()>;

/// Batch header: run, deadline, ending kind and its three operands.
const HEADER: usize = 6;

// Ending kinds.
const RUNNING: u32 = 0;
const RESOLVE_UNDEFINED: u32 = 1;
const RESOLVE_STRING: u32 = 2;
const RESOLVE_JSON: u32 = 3;
const REJECT_HOST_ERROR: u32 = 4;
const REJECT_RECLAIM_FAILED: u32 = 5;

// Effect ops.
const GET_INSTANCE: u32 = 0;
const DELETE_INSTANCE: u32 = 1;
const DELETE_RECORDING_LEAK: u32 = 2;
const DESTROY: u32 = 3;
const CLAIM_LEAKS: u32 = 4;
const RESOLVE_LEAK: u32 = 5;
const RECORD_RETRY_FAILURE: u32 = 6;
const LOG: u32 = 7;
const CANCEL: u32 = 8;

// Meta value kinds inside a LOG effect.
const META_TEXT: u32 = 0;
const META_HOST_ERROR: u32 = 1;
const META_DESTROY_TIMEOUT: u32 = 2;

// Completion kinds.
const COMPLETE_OK: u32 = 0;
const COMPLETE_FAILED: u32 = 1;
const COMPLETE_INSTANCE: u32 = 2;
const COMPLETE_NO_INSTANCE: u32 = 3;

/// The batch layout and the names the driver checks input against.
#[napi(object)]
pub struct Protocol {
    pub header: u32,
    pub endings: Vec<u32>,
    pub ops: Vec<u32>,
    pub meta_kinds: Vec<u32>,
    pub completions: Vec<u32>,
    /// The logger methods a flow may call.
    pub levels: Vec<String>,
    pub reclaim_failed_error_name: String,
    pub destroy_timeout_error_name: String,
    pub unreadable_error_message: String,
}

/// See [`Protocol`]; read once at load.
#[napi]
pub fn protocol() -> Protocol {
    Protocol {
        header: HEADER as u32,
        endings: vec![RUNNING, RESOLVE_UNDEFINED, RESOLVE_STRING, RESOLVE_JSON, REJECT_HOST_ERROR, REJECT_RECLAIM_FAILED],
        ops: vec![
            GET_INSTANCE,
            DELETE_INSTANCE,
            DELETE_RECORDING_LEAK,
            DESTROY,
            CLAIM_LEAKS,
            RESOLVE_LEAK,
            RECORD_RETRY_FAILURE,
            LOG,
            CANCEL,
        ],
        meta_kinds: vec![META_TEXT, META_HOST_ERROR, META_DESTROY_TIMEOUT],
        completions: vec![COMPLETE_OK, COMPLETE_FAILED, COMPLETE_INSTANCE, COMPLETE_NO_INSTANCE],
        levels: LogLevel::ALL.iter().map(|level| level.as_str().to_owned()).collect(),
        reclaim_failed_error_name: messages::RECLAIM_FAILED_ERROR_NAME.to_owned(),
        destroy_timeout_error_name: messages::DESTROY_TIMEOUT_ERROR_NAME.to_owned(),
        unreadable_error_message: messages::UNREADABLE_ERROR.to_owned(),
    }
}

/// `SandboxReclaimFailedError`'s message, built by the core.
#[napi]
pub fn reclaim_failed_message(run_id: String, sandbox_key: Option<String>) -> String {
    messages::reclaim_failed_message(&run_id, sandbox_key.as_deref())
}

/// `SandboxDestroyTimeoutError`'s message, built by the core.
#[napi]
pub fn destroy_timeout_message(provider_sandbox_id: String, timeout_ms: f64) -> String {
    messages::destroy_timeout_message(&provider_sandbox_id, timeout_ms as u64)
}

/// A run in this thread's table.
struct Run {
    flow: BoxedFlow,
    /// Its ending was sent. It stays answerable until its slot is reused,
    /// because the driver may still report that a log of the final batch
    /// threw (which changes the ending); JS runs that batch before starting
    /// anything else, so the slot cannot be reused first.
    ended: bool,
}

thread_local! {
    /// Runs on this JS thread, by number (ended and abandoned slots are reused).
    static RUNS: RefCell<Vec<Option<Run>>> = const { RefCell::new(Vec::new()) };
}

fn misuse(message: &str) -> Error {
    Error::new(Status::GenericFailure, format!("{}: {message}", messages::MISUSE))
}

fn millis(value: f64) -> Millis {
    if value.is_finite() && value > 0.0 {
        value as Millis
    } else {
        0
    }
}

fn optional_millis(value: Option<f64>) -> Option<u64> {
    value.map(millis)
}

/// Starts `reclaimSandbox` (`reclaimer` false) or `sandboxReclaimer(o)(r)`.
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn start_reclaim(
    reclaimer: bool,
    run_id: String,
    sandbox_key: Option<String>,
    provider_name: String,
    store_has_ledger: bool,
    destroy_timeout_ms: Option<f64>,
    now: f64,
) -> Result<Vec<Slot>> {
    let api = if reclaimer { ReclaimApi::SandboxReclaimer } else { ReclaimApi::ReclaimSandbox };
    let input = ReclaimInput {
        api,
        run_id,
        sandbox_key,
        provider_name,
        store_has_ledger,
        destroy_timeout_ms: optional_millis(destroy_timeout_ms),
    };
    admit(Box::new(Reclaim::new(input, millis(now))))
}

/// Starts `retryLeaks`.
#[napi]
pub fn start_retry(
    provider_name: String,
    limit: u32,
    lease_ms: f64,
    destroy_timeout_ms: Option<f64>,
    now: f64,
) -> Result<Vec<Slot>> {
    let input = RetryInput {
        provider_name,
        limit,
        lease_ms: millis(lease_ms).max(1),
        destroy_timeout_ms: optional_millis(destroy_timeout_ms),
    };
    admit(Box::new(Retry::new(input, millis(now))))
}

/// Feeds how effect `id` of run `run` settled: `kind` is a completion kind;
/// `a` is a failure's message or an instance's provider, `b` its sandbox id.
#[napi]
pub fn complete(run: u32, id: u32, kind: u32, a: Option<String>, b: Option<String>, now: f64) -> Result<Vec<Slot>> {
    let completion = match kind {
        COMPLETE_OK => Completion::Ok,
        COMPLETE_FAILED => Completion::Failed { message: a.unwrap_or_default() },
        COMPLETE_INSTANCE => Completion::Instance(Some(InstanceFields {
            provider: a.unwrap_or_default(),
            provider_sandbox_id: b.unwrap_or_default(),
        })),
        COMPLETE_NO_INSTANCE => Completion::Instance(None),
        _ => return Err(misuse("unknown completion kind")),
    };
    advance(run, |flow| flow.complete(id, completion, millis(now)).map_err(|error| misuse(&error.to_string())))
}

/// Feeds a `claimLeaks` answer: the provider sandbox id of each entry.
#[napi]
pub fn complete_leaks(run: u32, id: u32, sandbox_ids: Vec<String>, now: f64) -> Result<Vec<Slot>> {
    advance(run, |flow| {
        flow.complete(id, Completion::Leaks(sandbox_ids), millis(now)).map_err(|error| misuse(&error.to_string()))
    })
}

/// Tells run `run` the time (its deadline was reached).
#[napi]
pub fn timeout(run: u32, now: f64) -> Result<Vec<Slot>> {
    advance(run, |flow| {
        flow.handle_timeout(millis(now));
        Ok(())
    })
}

/// Forgets run `run` (the driver gave up on it: its input threw).
#[napi]
pub fn abandon(run: u32) {
    RUNS.with_borrow_mut(|runs| {
        if let Some(slot) = runs.get_mut(run as usize) {
            *slot = None;
        }
    });
}

fn admit(flow: BoxedFlow) -> Result<Vec<Slot>> {
    let entry = Run { flow, ended: false };
    let run = RUNS.with_borrow_mut(|runs| match runs.iter().position(|slot| slot.as_ref().is_none_or(|run| run.ended)) {
        Some(free) => {
            runs[free] = Some(entry);
            free
        }
        None => {
            runs.push(Some(entry));
            runs.len() - 1
        }
    });
    advance(run as u32, |_| Ok(()))
}

/// Applies `step` to run `run` and answers with its batch.
fn advance(run: u32, step: impl FnOnce(&mut BoxedFlow) -> Result<()>) -> Result<Vec<Slot>> {
    RUNS.with_borrow_mut(|runs| {
        let slot = runs.get_mut(run as usize).and_then(Option::as_mut).ok_or_else(|| misuse("unknown run"))?;
        step(&mut slot.flow)?;
        let batch = encode(run, &mut slot.flow);
        slot.ended = batch.ended;
        Ok(batch.slots)
    })
}

struct Batch {
    slots: Vec<Slot>,
    ended: bool,
}

fn num(value: impl Into<f64>) -> Slot {
    Either3::A(value.into())
}

fn text(value: impl Into<String>) -> Slot {
    Either3::B(value.into())
}

fn id(effect: EffectId) -> Slot {
    num(effect)
}

fn encode(run: u32, flow: &mut BoxedFlow) -> Batch {
    let mut slots = Vec::with_capacity(HEADER + 4);
    slots.extend([num(run), num(-1.0), num(RUNNING), Either3::C(()), Either3::C(()), Either3::C(())]);
    while let Some((effect_id, effect)) = flow.poll_effect() {
        encode_effect(&mut slots, effect_id, effect);
    }
    let ending = flow.poll_done();
    if ending.is_none() {
        if let Some(deadline) = flow.poll_timeout() {
            slots[1] = num(deadline as f64);
        }
    }
    let ended = ending.is_some();
    let (kind, a, b, c) = match ending {
        None => (RUNNING, Either3::C(()), Either3::C(()), Either3::C(())),
        Some(Ending::Resolved(Output::Nothing)) => (RESOLVE_UNDEFINED, Either3::C(()), Either3::C(()), Either3::C(())),
        Some(Ending::Resolved(Output::Outcome(outcome))) => {
            (RESOLVE_STRING, text(outcome.as_str()), Either3::C(()), Either3::C(()))
        }
        Some(Ending::Resolved(Output::Retry(summary))) => {
            let json = serde_json::to_string(&summary).unwrap_or_default();
            (RESOLVE_JSON, text(json), Either3::C(()), Either3::C(()))
        }
        Some(Ending::HostError(effect_id)) => (REJECT_HOST_ERROR, id(effect_id), Either3::C(()), Either3::C(())),
        Some(Ending::ReclaimFailed(failure)) => {
            let message = failure.message();
            let key = failure.sandbox_key.map_or(Either3::C(()), text);
            (REJECT_RECLAIM_FAILED, text(failure.run_id), key, text(message))
        }
    };
    slots[2] = num(kind);
    slots[3] = a;
    slots[4] = b;
    slots[5] = c;
    Batch { slots, ended }
}

fn encode_effect(slots: &mut Vec<Slot>, effect_id: EffectId, effect: Effect) {
    let mut push = |op: u32, args: Vec<Slot>| {
        slots.push(num(op));
        slots.push(id(effect_id));
        slots.extend(args);
    };
    match effect {
        Effect::GetInstance { key } => push(GET_INSTANCE, vec![text(key)]),
        Effect::DeleteInstance { key } => push(DELETE_INSTANCE, vec![text(key)]),
        Effect::DeleteRecordingLeak { key, leak } => push(
            DELETE_RECORDING_LEAK,
            vec![
                text(key),
                text(leak.key),
                text(leak.provider),
                text(leak.provider_sandbox_id),
                text(leak.run_id),
                text(leak.error_message),
                num(leak.failed_at as f64),
            ],
        ),
        Effect::Destroy { provider_sandbox_id, deadline } => {
            push(DESTROY, vec![text(provider_sandbox_id), num(deadline.map_or(-1.0, |at| at as f64))])
        }
        Effect::ClaimLeaks { provider, limit, lease_ms } => {
            push(CLAIM_LEAKS, vec![text(provider), num(limit), num(lease_ms as f64)])
        }
        Effect::ResolveLeak { entry } => push(RESOLVE_LEAK, vec![id(entry.effect), num(entry.index)]),
        Effect::RecordRetryFailure { entry, message, failed_at } => push(
            RECORD_RETRY_FAILURE,
            vec![id(entry.effect), num(entry.index), text(message), num(failed_at as f64)],
        ),
        Effect::Log(line) => {
            let mut args = vec![text(line.level.as_str()), text(line.message), num(line.meta.len() as u32)];
            for (key, value) in line.meta {
                args.push(text(key));
                match value {
                    MetaValue::Text(value) => args.extend([num(META_TEXT), text(value)]),
                    MetaValue::HostError(effect) => args.extend([num(META_HOST_ERROR), id(effect)]),
                    MetaValue::DestroyTimeout { provider_sandbox_id, timeout_ms } => {
                        let message = messages::destroy_timeout_message(&provider_sandbox_id, timeout_ms);
                        args.extend([
                            num(META_DESTROY_TIMEOUT),
                            text(provider_sandbox_id),
                            num(timeout_ms as f64),
                            text(message),
                        ]);
                    }
                }
            }
            push(LOG, args)
        }
        Effect::Cancel { target } => push(CANCEL, vec![id(target)]),
    }
}
