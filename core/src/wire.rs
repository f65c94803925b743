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
//! numbers from [`Protocol`], so no driver hard-codes them.

use crate::effects::{
    Completion, Effect, EffectId, Ending, InstanceFields, LogLevel, MetaValue, Millis, Misuse, Output,
};
use crate::flows::BoxedFlow;
use crate::messages;

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

/// Effect ops and their arguments after `op, id`.
pub mod op {
    /// key
    pub const GET_INSTANCE: u32 = 0;
    /// key
    pub const DELETE_INSTANCE: u32 = 1;
    /// key, leak key, provider, providerSandboxId, runId, errorMessage, failedAt
    pub const DELETE_RECORDING_LEAK: u32 = 2;
    /// providerSandboxId, deadline | Nothing
    pub const DESTROY: u32 = 3;
    /// provider, limit, leaseMs
    pub const CLAIM_LEAKS: u32 = 4;
    /// claim effect, entry index
    pub const RESOLVE_LEAK: u32 = 5;
    /// claim effect, entry index, message, failedAt
    pub const RECORD_RETRY_FAILURE: u32 = 6;
    /// level, message, n, then n × (key, meta kind, value...)
    pub const LOG: u32 = 7;
    /// target effect
    pub const CANCEL: u32 = 8;
}

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
}

/// The layout's numbers and the fixed names a driver checks input against.
#[derive(Debug, Clone)]
pub struct Protocol {
    pub header: u32,
    pub endings: [u32; 6],
    /// Operands after each ending kind (indexed by kind).
    pub ending_operands: [u32; 6],
    pub ops: [u32; 9],
    pub meta_kinds: [u32; 3],
    pub completions: [u32; 4],
    /// The logger methods a flow may call.
    pub levels: [&'static str; 3],
    pub reclaim_failed_error_name: &'static str,
    pub destroy_timeout_error_name: &'static str,
    pub unreadable_error_message: &'static str,
}

/// See [`Protocol`].
pub fn protocol() -> Protocol {
    use ending::*;
    Protocol {
        header: HEADER as u32,
        endings: [RUNNING, RESOLVE_NOTHING, RESOLVE_STRING, RESOLVE_JSON, REJECT_HOST_ERROR, REJECT_RECLAIM_FAILED],
        ending_operands: OPERANDS,
        ops: [
            op::GET_INSTANCE,
            op::DELETE_INSTANCE,
            op::DELETE_RECORDING_LEAK,
            op::DESTROY,
            op::CLAIM_LEAKS,
            op::RESOLVE_LEAK,
            op::RECORD_RETRY_FAILURE,
            op::LOG,
            op::CANCEL,
        ],
        meta_kinds: [meta::TEXT, meta::HOST_ERROR, meta::DESTROY_TIMEOUT],
        completions: [completion::OK, completion::FAILED, completion::INSTANCE, completion::NO_INSTANCE],
        levels: LogLevel::ALL.map(LogLevel::as_str),
        reclaim_failed_error_name: messages::RECLAIM_FAILED_ERROR_NAME,
        destroy_timeout_error_name: messages::DESTROY_TIMEOUT_ERROR_NAME,
        unreadable_error_message: messages::UNREADABLE_ERROR,
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
        let entry = Some(Run { flow, ended: false });
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
        let (slots, ended) = encode(run, &mut entry.flow);
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

/// The batch of `flow`: its deadline or its ending, then its effects.
fn encode(run: u32, flow: &mut BoxedFlow) -> (Vec<Slot>, bool) {
    let mut effects = Vec::new();
    while let Some((id, effect)) = flow.poll_effect() {
        encode_effect(&mut effects, id, effect);
    }
    let Some(end) = flow.poll_done() else {
        let deadline = flow.poll_timeout().map_or(Slot::Nothing, int);
        let mut slots = Vec::with_capacity(HEADER + effects.len());
        slots.extend([int(run), deadline, int(ending::RUNNING)]);
        slots.extend(effects);
        return (slots, false);
    };
    let (kind, operands) = match end {
        Ending::Resolved(Output::Nothing) => (ending::RESOLVE_NOTHING, vec![]),
        Ending::Resolved(Output::Outcome(outcome)) => (ending::RESOLVE_STRING, vec![text(outcome.as_str())]),
        Ending::Resolved(Output::Retry(summary)) => {
            (ending::RESOLVE_JSON, vec![text(serde_json::to_string(&summary).unwrap_or_default())])
        }
        Ending::HostError(id) => (ending::REJECT_HOST_ERROR, vec![int(id)]),
        Ending::ReclaimFailed(failure) => {
            let message = failure.message();
            let key = failure.sandbox_key.map_or(Slot::Nothing, text);
            (ending::REJECT_RECLAIM_FAILED, vec![text(failure.run_id), key, text(message)])
        }
    };
    debug_assert_eq!(operands.len(), ending::OPERANDS[kind as usize] as usize);
    let mut slots = vec![int(run), Slot::Nothing, int(kind)];
    slots.extend(operands);
    slots.extend(effects);
    (slots, true)
}

fn encode_effect(slots: &mut Vec<Slot>, id: EffectId, effect: Effect) {
    let (code, args) = match effect {
        Effect::GetInstance { key } => (op::GET_INSTANCE, vec![text(key)]),
        Effect::DeleteInstance { key } => (op::DELETE_INSTANCE, vec![text(key)]),
        Effect::DeleteRecordingLeak { key, leak } => (
            op::DELETE_RECORDING_LEAK,
            vec![
                text(key),
                text(leak.key),
                text(leak.provider),
                text(leak.provider_sandbox_id),
                text(leak.run_id),
                text(leak.error_message),
                int(leak.failed_at),
            ],
        ),
        Effect::Destroy { provider_sandbox_id, deadline } => {
            (op::DESTROY, vec![text(provider_sandbox_id), deadline.map_or(Slot::Nothing, int)])
        }
        Effect::ClaimLeaks { provider, limit, lease_ms } => {
            (op::CLAIM_LEAKS, vec![text(provider), int(limit), int(lease_ms)])
        }
        Effect::ResolveLeak { entry } => (op::RESOLVE_LEAK, vec![int(entry.effect), int(entry.index)]),
        Effect::RecordRetryFailure { entry, message, failed_at } => {
            (op::RECORD_RETRY_FAILURE, vec![int(entry.effect), int(entry.index), text(message), int(failed_at)])
        }
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
            (op::LOG, args)
        }
        Effect::Cancel { target } => (op::CANCEL, vec![int(target)]),
    };
    slots.push(int(code));
    slots.push(int(id));
    slots.extend(args);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flows::{Reclaim, ReclaimApi, ReclaimInput};

    fn reclaim(key: Option<&str>) -> BoxedFlow {
        let input = ReclaimInput {
            api: ReclaimApi::ReclaimSandbox,
            run_id: "r".into(),
            sandbox_key: key.map(str::to_owned),
            provider_name: "docker".into(),
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
