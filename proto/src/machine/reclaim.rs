//! `reclaimSandbox` and `sandboxReclaimer` as one sans-IO machine.
//!
//! # Why the orderings are load-bearing
//!
//! * **Provider check before destroy or delete.** A multi-provider app would
//!   otherwise hand one provider's sandbox id to another provider's `destroy`,
//!   which may match an unrelated sandbox in that id namespace. A mismatch
//!   therefore touches nothing, not even the record the right provider needs.
//! * **Destroy before delete, and delete whatever destroy did.** A record that
//!   points at a dead sandbox breaks the thread's next resume, which is worse
//!   than an orphaned sandbox. But a failed destroy is reported as
//!   `destroy-failed`, never `destroyed`, so an operator can tell "torn down"
//!   from "possibly still billing".
//! * **Leak ledger.** Where the store keeps a ledger, the failed destroy's
//!   record removal and the insertion of a leak entry are one effect
//!   ([`Effect::DeleteRecordingLeak`]), one transaction in the store.
//! * **Deadline.** A destroy that has not settled by its deadline is cancelled
//!   and takes the destroy-failed path with a timeout error; its late settle
//!   changes nothing.
//! * **The reclaimer rejects on `destroy-failed`**: a sweep (TanStack's
//!   `reapDetachedRuns`) only learns that a sandbox was *not* reclaimed from
//!   a rejection.

use crate::machine::effects::{
    Completion, Effect, EffectId, Ending, Flow, InstanceFields, LogLevel, LogLine, MetaValue, Millis, Misuse, Output,
    SandboxReclaimFailed,
};
use crate::machine::outbox::Outbox;
use crate::model::ledger::NewLeak;
use crate::model::ReclaimOutcome;
use crate::report::messages::{self, meta_keys};

/// Which API the machine answers as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReclaimApi {
    /// `reclaimSandbox`: resolves with the outcome.
    ReclaimSandbox,
    /// `sandboxReclaimer(options)(record)`: logs the outcome, resolves with
    /// nothing, rejects with `SandboxReclaimFailedError` on `destroy-failed`.
    SandboxReclaimer,
}

/// Everything a reclaim decides on, read once from the host's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReclaimInput {
    pub api: ReclaimApi,
    pub run_id: String,
    pub sandbox_key: Option<String>,
    /// The providers' names, in order: a record goes to the one whose name
    /// equals its instance's `provider` (a single one for `reclaimSandbox`).
    pub providers: Vec<String>,
    /// Whether the store can record a leak in the same transaction as the delete.
    pub store_has_ledger: bool,
    /// Cancel a destroy that has not settled after this long; `None` waits
    /// as long as it takes (the reference's behaviour).
    pub destroy_timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Getting(EffectId),
    Destroying { effect: EffectId, instance: InstanceFields, deadline: Option<Millis> },
    Deleting { effect: EffectId, destroy_failed: bool },
    Finished,
}

/// The reclaim machine. See the [module docs](self).
#[derive(Debug)]
pub struct Reclaim {
    input: ReclaimInput,
    phase: Phase,
    out: Outbox,
    /// The destroy cancelled at its deadline, whose late settle is ignored.
    cancelled: Option<EffectId>,
}

impl Reclaim {
    pub fn new(input: ReclaimInput, now: Millis) -> Self {
        let _ = now; // nothing before the first answer depends on time
        let mut machine = Self { input, phase: Phase::Finished, out: Outbox::default(), cancelled: None };
        match machine.input.sandbox_key.clone() {
            // Never ran in a sandbox: nothing to look up, no I/O at all.
            None => machine.conclude(ReclaimOutcome::NoSandboxKey),
            Some(key) => machine.phase = Phase::Getting(machine.out.push(Effect::GetInstance { key })),
        }
        machine
    }

    /// The effect whose completion the machine waits for.
    fn awaited(&self) -> Option<EffectId> {
        match self.phase {
            Phase::Getting(effect) | Phase::Destroying { effect, .. } | Phase::Deleting { effect, .. } => Some(effect),
            Phase::Finished => None,
        }
    }

    fn key(&self) -> String {
        self.input.sandbox_key.clone().unwrap_or_default()
    }

    fn text(value: &str) -> MetaValue {
        MetaValue::Text(value.to_owned())
    }

    fn instance_loaded(&mut self, instance: Option<InstanceFields>, now: Millis) {
        let Some(instance) = instance else { return self.conclude(ReclaimOutcome::NotFound) };
        let route = self.input.providers.iter().position(|name| *name == instance.provider);
        let Some(provider) = route else {
            // The first gate: a mismatch touches nothing, not even the record.
            self.out.log(LogLine {
                level: LogLevel::Warn,
                message: messages::PROVIDER_MISMATCH,
                meta: vec![
                    (meta_keys::RUN_ID, Self::text(&self.input.run_id)),
                    (meta_keys::SANDBOX_KEY, MetaValue::Text(self.key())),
                    (meta_keys::RECORD_PROVIDER, MetaValue::Text(instance.provider)),
                    (meta_keys::RECLAIMER_PROVIDER, MetaValue::Text(self.input.providers.join(", "))),
                ],
            });
            return self.conclude(ReclaimOutcome::ProviderMismatch);
        };
        let deadline = self.input.destroy_timeout_ms.map(|timeout| now.saturating_add(timeout));
        let provider_sandbox_id = instance.provider_sandbox_id.clone();
        let destroy = Effect::Destroy { provider: provider as u32, provider_sandbox_id, deadline };
        self.phase = Phase::Destroying { effect: self.out.push(destroy), instance, deadline };
    }

    /// Destroy settled (or timed out): warn on failure, then delete regardless.
    fn destroy_settled(&mut self, instance: InstanceFields, failure: Option<(MetaValue, String)>, now: Millis) {
        let key = self.key();
        let Some((error, message)) = failure else {
            let effect = self.out.push(Effect::DeleteInstance { key });
            self.phase = Phase::Deleting { effect, destroy_failed: false };
            return;
        };
        self.out.log(LogLine {
            level: LogLevel::Warn,
            message: messages::DESTROY_FAILED_DELETING_ANYWAY,
            meta: vec![
                (meta_keys::RUN_ID, Self::text(&self.input.run_id)),
                (meta_keys::SANDBOX_KEY, MetaValue::Text(key.clone())),
                (meta_keys::PROVIDER_SANDBOX_ID, Self::text(&instance.provider_sandbox_id)),
                (meta_keys::ERROR, error),
            ],
        });
        // Delete regardless: a record pointing at a dead sandbox breaks resume.
        let delete = if self.input.store_has_ledger {
            let leak = NewLeak {
                key: key.clone(),
                provider: instance.provider,
                provider_sandbox_id: instance.provider_sandbox_id,
                run_id: self.input.run_id.clone(),
                error_message: message,
                failed_at: now,
            };
            Effect::DeleteRecordingLeak { key, leak }
        } else {
            Effect::DeleteInstance { key }
        };
        self.phase = Phase::Deleting { effect: self.out.push(delete), destroy_failed: true };
    }

    /// A fleet reclaim held this machine's destroy until its provider had a
    /// free slot and starts it now: the deadline counts from now. Answers it.
    pub fn restart_destroy_clock(&mut self, now: Millis) -> Option<Millis> {
        let timeout = self.input.destroy_timeout_ms?;
        let Phase::Destroying { deadline, .. } = &mut self.phase else { return None };
        *deadline = Some(now.saturating_add(timeout));
        *deadline
    }

    /// Ends with `outcome`; the reclaimer first logs it and fails on `destroy-failed`.
    fn conclude(&mut self, outcome: ReclaimOutcome) {
        self.phase = Phase::Finished;
        if self.input.api == ReclaimApi::ReclaimSandbox {
            return self.out.finish(Ending::Resolved(Output::Outcome(outcome)));
        }
        let mut meta = vec![(meta_keys::RUN_ID, Self::text(&self.input.run_id))];
        if let Some(key) = &self.input.sandbox_key {
            meta.push((meta_keys::SANDBOX_KEY, Self::text(key)));
        }
        if outcome == ReclaimOutcome::DestroyFailed {
            self.out.log(LogLine { level: LogLevel::Errors, message: messages::RECLAIMER_DESTROY_FAILED, meta });
            let failure =
                SandboxReclaimFailed { run_id: self.input.run_id.clone(), sandbox_key: self.input.sandbox_key.clone() };
            self.out.finish(Ending::ReclaimFailed(failure));
        } else {
            let message = messages::reclaimer_outcome_line(outcome);
            self.out.log(LogLine { level: LogLevel::Sandbox, message, meta });
            self.out.finish(Ending::Resolved(Output::Nothing));
        }
    }
}

impl Flow for Reclaim {
    fn poll_effect(&mut self) -> Option<(EffectId, Effect)> {
        self.out.poll_effect()
    }

    fn complete(&mut self, id: EffectId, completion: Completion, now: Millis) -> Result<(), Misuse> {
        if matches!(completion, Completion::Failed { .. }) && self.out.log_threw(id) {
            self.phase = Phase::Finished;
            return Ok(());
        }
        if self.awaited() != Some(id) {
            // A destroy settling after its deadline was cancelled: it changes nothing.
            return if self.cancelled == Some(id) { Ok(()) } else { Err(Misuse(messages::MISUSE_UNKNOWN_EFFECT)) };
        }
        match (std::mem::replace(&mut self.phase, Phase::Finished), completion) {
            (Phase::Getting(_), Completion::Instance(instance)) => self.instance_loaded(instance, now),
            // A store call failed: the reference lets its error propagate unchanged.
            (Phase::Getting(_) | Phase::Deleting { .. }, Completion::Failed { .. }) => {
                self.out.finish(Ending::HostError(id));
            }
            (Phase::Destroying { instance, .. }, Completion::Ok) => self.destroy_settled(instance, None, now),
            (Phase::Destroying { instance, .. }, Completion::Failed { message }) => {
                self.destroy_settled(instance, Some((MetaValue::HostError(id), message)), now);
            }
            (Phase::Deleting { destroy_failed, .. }, Completion::Ok) => {
                self.conclude(if destroy_failed { ReclaimOutcome::DestroyFailed } else { ReclaimOutcome::Destroyed });
            }
            (phase, _) => {
                self.phase = phase;
                return Err(Misuse(messages::MISUSE_WRONG_COMPLETION));
            }
        }
        Ok(())
    }

    fn poll_timeout(&self) -> Option<Millis> {
        match &self.phase {
            Phase::Destroying { deadline, .. } => *deadline,
            _ => None,
        }
    }

    fn handle_timeout(&mut self, now: Millis) {
        let Phase::Destroying { effect, deadline: Some(deadline), .. } = self.phase else { return };
        if now < deadline {
            return;
        }
        let Phase::Destroying { instance, .. } = std::mem::replace(&mut self.phase, Phase::Finished) else {
            return;
        };
        self.out.push(Effect::Cancel { target: effect });
        self.cancelled = Some(effect);
        let timeout_ms = self.input.destroy_timeout_ms.unwrap_or_default();
        let message = messages::destroy_timeout_message(&instance.provider_sandbox_id, timeout_ms);
        let error = MetaValue::DestroyTimeout { provider_sandbox_id: instance.provider_sandbox_id.clone(), timeout_ms };
        self.destroy_settled(instance, Some((error, message)), now);
    }

    fn poll_done(&mut self) -> Option<Ending> {
        self.out.poll_done()
    }
}
