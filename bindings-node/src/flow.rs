//! The core's flow machines for the generic JS driver (`lib/driver.cjs`), in
//! the core's batch form ([`sandbox_reclaim::wire`]): a run lives in this
//! thread's table under a number, every call answers one flat array.
//!
//! Strings cross as napi strings, which the driver checks are well-formed
//! UTF-16 first (a lone surrogate would otherwise become U+FFFD here).
//! Batches cross packed in one string ([`packed`]), strings JS holds by handle.

use std::cell::RefCell;

use napi::{Error, Result, Status};
use napi_derive::napi;
use sandbox_reclaim::machine::effects::Millis;
use sandbox_reclaim::machine::start::{self, HostProvider, PassStart};
use sandbox_reclaim::machine::{Reclaim, ReclaimAll, ReclaimApi, ReclaimInput, Reconcile, Retry};
use sandbox_reclaim::options::{self, Dialect, FlowOptions, HostOptionError, HostOptions};
use sandbox_reclaim::report::messages;
use sandbox_reclaim::wire::{self, completion, RunTable, Slot};

use napi::bindgen_prelude::Utf16String;

use crate::packed::{self, answer, pack};

/// A batch, packed ([`packed`]).
type Packed = Utf16String;

thread_local! {
    /// The runs of this JS thread (napi calls arrive on it only).
    static RUNS: RefCell<RunTable> = const { RefCell::new(RunTable::new()) };
}

/// The batch layout and the fixed names the driver checks input against.
#[napi(object)]
pub struct Protocol {
    pub header: u32,
    pub endings: Vec<u32>,
    pub ending_operands: Vec<u32>,
    pub ops: Vec<u32>,
    pub meta_kinds: Vec<u32>,
    pub completions: Vec<u32>,
    /// The logger methods a flow may call.
    pub levels: Vec<String>,
    pub reclaim_failed_error_name: String,
    pub destroy_timeout_error_name: String,
    pub unreadable_error_message: String,
    /// Each op's row of the core's operand table, as JSON (`effect_table.rs`).
    pub effects: String,
    /// The packed batch's slot kinds: number, handle, inline, nothing (`packed.rs`).
    pub packed_kinds: Vec<u32>,
}

/// See [`Protocol`]; read once at load.
#[napi]
pub fn protocol() -> Protocol {
    let protocol = wire::protocol();
    Protocol {
        header: protocol.header,
        endings: protocol.endings.to_vec(),
        ending_operands: protocol.ending_operands.to_vec(),
        ops: protocol.ops.to_vec(),
        meta_kinds: protocol.meta_kinds.to_vec(),
        completions: protocol.completions.to_vec(),
        levels: protocol.levels.iter().map(|level| (*level).to_owned()).collect(),
        reclaim_failed_error_name: protocol.reclaim_failed_error_name.to_owned(),
        destroy_timeout_error_name: protocol.destroy_timeout_error_name.to_owned(),
        unreadable_error_message: protocol.unreadable_error_message.to_owned(),
        effects: serde_json::to_string(protocol.effects).unwrap_or_default(),
        packed_kinds: [packed::KIND_NUMBER, packed::KIND_HANDLE, packed::KIND_INLINE, packed::KIND_NOTHING]
            .map(u32::from)
            .to_vec(),
    }
}

/// The scoped sweep's store methods, in order: a store has all or none.
#[napi]
pub fn scoped_read_methods() -> Vec<&'static str> {
    start::scoped_read_methods(Dialect::Node)
}

/// What the core decides of a store with these of `scopedReadMethods()`.
#[napi(object)]
pub struct ScopedReads {
    /// It has all of them: swept by asking about what it listed.
    pub scoped: bool,
    /// It has some but not all: the `TypeError` text (nothing runs).
    pub refusal: Option<String>,
}

/// Whether a store is scoped, given which of `scopedReadMethods()` it has.
#[napi]
pub fn scoped_reads(present: Vec<bool>) -> ScopedReads {
    match start::scoped_reads(&present, "options.instances.", Dialect::Node) {
        Ok(scoped) => ScopedReads { scoped, refusal: None },
        Err(refusal) => ScopedReads { scoped: false, refusal: Some(refusal) },
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
    messages::destroy_timeout_message(&provider_sandbox_id, millis(timeout_ms))
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
) -> Packed {
    let api = if reclaimer { ReclaimApi::SandboxReclaimer } else { ReclaimApi::ReclaimSandbox };
    let mut sent = vec![run_id.clone()];
    sent.extend(sandbox_key.clone());
    sent.push(provider_name.clone());
    let input = ReclaimInput {
        api,
        run_id,
        sandbox_key,
        providers: vec![provider_name],
        store_has_ledger,
        destroy_timeout_ms: destroy_timeout_ms.map(millis),
    };
    started(sent, |runs| runs.start(Box::new(Reclaim::new(input, millis(now)))))
}

/// Starts a run: its string table holds `sent` (what JS passed, in its order).
fn started(sent: Vec<String>, start: impl FnOnce(&mut RunTable) -> Vec<Slot>) -> Packed {
    let batch = RUNS.with_borrow_mut(start);
    packed::open(packed::run_of(&batch), sent);
    pack(batch)
}

/// The option names `flow` (`reclaimAll`, `reconcile`, `retryLeaks`) takes,
/// as JS spells them: what the declaration reads from the user's options
/// (each once) and hands to the core as plain values.
#[napi]
pub fn option_names(flow: String) -> Result<Vec<String>> {
    let flow =
        FlowOptions::parse(&flow).ok_or_else(|| Error::new(Status::InvalidArg, messages::unknown_flow(&flow)))?;
    Ok(options::option_names(flow, Dialect::Node).into_iter().map(str::to_owned).collect())
}

/// `flow`'s options as the command's pass plan (JSON) holds them: every
/// option the core names, absent and null ones left out, so the hosted
/// command passes them without a list of its own.
#[napi]
pub fn respell_options(flow: String, plan_json: String) -> Result<String> {
    let flow =
        FlowOptions::parse(&flow).ok_or_else(|| Error::new(Status::InvalidArg, messages::unknown_flow(&flow)))?;
    let plan: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&plan_json).map_err(|error| Error::new(Status::InvalidArg, error.to_string()))?;
    Ok(serde_json::Value::Object(options::respell(flow, &plan, Dialect::Node)).to_string())
}

/// The user's plain option values (JSON), checked by the core: an invalid
/// one is an `InvalidArg` error carrying the core's text (the declaration
/// raises it as a `TypeError`).
fn host_options(options_json: &str) -> Result<HostOptions> {
    HostOptions::parse(options_json, Dialect::Node).map_err(invalid)
}

fn invalid(error: HostOptionError) -> Error {
    Error::new(Status::InvalidArg, error.message)
}

/// A reclaim's destroy deadline (the user's `destroyTimeoutMs`, as plain
/// JSON), checked by the core; called only when one was given.
#[napi]
pub fn reclaim_deadline(options_json: String) -> Result<Option<f64>> {
    let deadline = start::reclaim_deadline(&host_options(&options_json)?).map_err(invalid)?;
    Ok(deadline.map(|ms| ms as f64))
}

/// Starts `retryLeaks` for the provider named `provider_name`.
#[napi]
pub fn start_retry(options_json: String, provider_name: String, now: f64) -> Result<Packed> {
    let sent = vec![provider_name.clone()];
    let input = start::retry(&host_options(&options_json)?, provider_name).map_err(invalid)?;
    Ok(started(sent, |runs| runs.start(Box::new(Retry::new(input, millis(now))))))
}

/// Starts `reclaimAll`: record `i` is `(runIds[i], sandboxKeys[i])`; the
/// providers' names are in the order the declaration numbers them.
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn start_reclaim_all(
    options_json: String,
    run_ids: Vec<String>,
    sandbox_keys: Vec<Option<String>>,
    providers: Vec<String>,
    store_has_ledger: bool,
    progress: bool,
    stopped: bool,
    now: f64,
) -> Result<Packed> {
    if run_ids.len() != sandbox_keys.len() {
        return Err(Error::new(Status::GenericFailure, "runIds and sandboxKeys must have the same length"));
    }
    let mut sent = run_ids.clone();
    sent.extend(sandbox_keys.iter().flatten().cloned());
    sent.extend(providers.iter().cloned());
    let records = run_ids.into_iter().zip(sandbox_keys).collect();
    let pass = PassStart { progress, stopped, host_name: None, registry: false, prune: false, scoped: false };
    let input = start::reclaim_all(&host_options(&options_json)?, records, providers, store_has_ledger, pass)
        .map_err(invalid)?;
    Ok(started(sent, |runs| runs.start(Box::new(ReclaimAll::new(input, millis(now))))))
}

/// One provider of a reconcile pass, as the declaration read it.
#[napi(object)]
pub struct ReconcileProvider {
    pub name: String,
    /// Whether it has a `list` (no list: no orphan sweep).
    pub can_list: bool,
    pub can_lookup: bool,
    /// Its own owner namespace, when it names one.
    pub owner: Option<String>,
}

/// Starts `reconcile`. `registry`: the store has `registeredSandboxes`;
/// `prune`: it has `prune`; `scoped`: it has `sweepMark`, `referencedAmong`,
/// `registeredAmong`, `lookupCandidates` and `lookupChecked` (a sweep then
/// reads only what it listed).
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn start_reconcile(
    options_json: String,
    providers: Vec<ReconcileProvider>,
    host_name: String,
    progress: bool,
    stopped: bool,
    registry: bool,
    prune: bool,
    scoped: bool,
    now: f64,
) -> Result<Packed> {
    let mut sent = Vec::new();
    for provider in &providers {
        sent.push(provider.name.clone());
        sent.extend(provider.owner.clone());
    }
    sent.push(host_name.clone());
    let providers = providers
        .into_iter()
        .map(|provider| HostProvider {
            name: provider.name,
            can_list: provider.can_list,
            can_lookup: provider.can_lookup,
            owner: provider.owner,
        })
        .collect();
    let now = millis(now);
    let pass = PassStart { progress, stopped, host_name: Some(host_name), registry, prune, scoped };
    let input = start::reconcile(&host_options(&options_json)?, providers, pass, now).map_err(invalid)?;
    Ok(started(sent, |runs| runs.start(Box::new(Reconcile::new(input, now)))))
}

// How effect `id` of run `run` settled, one function per kind (see
// `wire::completion`), so each call converts only what its kind carries.

/// The effect succeeded with nothing to report.
#[napi]
pub fn complete_ok(run: u32, id: u32, now: f64) -> Result<Packed> {
    settle(run, id, completion::OK, None, None, now)
}

/// The effect failed with `message` (the error itself stays with the driver).
#[napi]
pub fn complete_failed(run: u32, id: u32, message: String, now: f64) -> Result<Packed> {
    settle(run, id, completion::FAILED, Some(message), None, now)
}

/// `get` found an instance; its two strings join the run's string table
/// (the driver pushes them too).
#[napi]
pub fn complete_instance(run: u32, id: u32, provider: String, provider_sandbox_id: String, now: f64) -> Result<Packed> {
    packed::add(run, [provider.clone(), provider_sandbox_id.clone()]);
    settle(run, id, completion::INSTANCE, Some(provider), Some(provider_sandbox_id), now)
}

/// `get` found no instance.
#[napi]
pub fn complete_no_instance(run: u32, id: u32, now: f64) -> Result<Packed> {
    settle(run, id, completion::NO_INSTANCE, None, None, now)
}

/// The host answered with `json` (the core reads it by the op's shape).
#[napi]
pub fn complete_json(run: u32, id: u32, json: String, now: f64) -> Result<Packed> {
    settle(run, id, completion::JSON, Some(json), None, now)
}

fn settle(run: u32, id: u32, kind: u32, a: Option<String>, b: Option<String>, now: f64) -> Result<Packed> {
    answer(RUNS.with_borrow_mut(|runs| runs.complete(run, id, kind, a, b, millis(now))))
}

/// Feeds a `claimLeaks` answer: the provider sandbox id of each entry (each
/// joins the run's string table).
#[napi]
pub fn complete_leaks(run: u32, id: u32, sandbox_ids: Vec<String>, now: f64) -> Result<Packed> {
    packed::add(run, sandbox_ids.iter().cloned());
    answer(RUNS.with_borrow_mut(|runs| runs.complete_leaks(run, id, sandbox_ids, millis(now))))
}

/// Tells run `run` the time (its deadline was reached).
#[napi]
pub fn timeout(run: u32, now: f64) -> Result<Packed> {
    answer(RUNS.with_borrow_mut(|runs| runs.timeout(run, millis(now))))
}

/// Tells run `run` its caller cancelled it (an `AbortSignal`): nothing new
/// starts; answers a batch like [`timeout`].
#[napi]
pub fn stop(run: u32, now: f64) -> Result<Packed> {
    answer(RUNS.with_borrow_mut(|runs| runs.stop(run, millis(now))))
}

/// Forgets run `run` (the driver gave up on it: a host answer broke its contract).
#[napi]
pub fn abandon(run: u32) {
    RUNS.with_borrow_mut(|runs| runs.abandon(run));
    packed::close(run);
}

/// Epoch milliseconds from a JS number (negative or not finite: 0).
fn millis(value: f64) -> Millis {
    if value.is_finite() && value > 0.0 {
        value as Millis
    } else {
        0
    }
}
