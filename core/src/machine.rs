//! The sans-IO reclaim state machines.
//!
//! [`Reclaim`] is `reclaimSandbox` and [`Reclaimer`] is the `sandboxReclaimer`
//! adapter around it. Neither performs I/O: each says what to do next through
//! [`Reclaim::poll`] and is told what happened through `instance_loaded`,
//! `destroy_finished` and `instance_deleted`. A driver (the async Rust driver
//! in [`crate::driver`], the JavaScript and Python interpreters in the
//! bindings) loops:
//!
//! ```text
//! loop {
//!     match machine.poll() {
//!         Step::Log(line)            => logger.<level>(line.message, meta),
//!         Step::GetInstance { key }  => machine.instance_loaded(store.get(key)?),
//!         Step::Destroy { .. }       => machine.destroy_finished(provider.destroy(id)),
//!         Step::DeleteInstance { .. } | Step::DeleteInstanceRecordingLeak { .. }
//!                                    => { store.delete(..)?; machine.instance_deleted() }
//!         Step::Finish(outcome)      => return outcome,
//!         Step::Fail(failure)        => raise SandboxReclaimFailedError(failure),
//!     }
//! }
//! ```
//!
//! A failing store `get` or `delete` is *not* fed back: the driver propagates
//! the store's error unchanged, exactly as the reference's `await` does.
//!
//! # Why the orderings are load-bearing
//!
//! * **Provider check before destroy or delete.** A multi-provider app would
//!   otherwise hand one provider's sandbox id to another provider's `destroy`,
//!   which may match an unrelated sandbox in that id namespace. A mismatch
//!   therefore touches nothing, not even the record the right provider needs.
//! * **Destroy before delete, and delete whatever destroy did.** A record that
//!   points at a dead sandbox breaks the thread's next resume, which is worse
//!   than an orphaned sandbox the provider will eventually reclaim itself. But
//!   a failed destroy is reported as `destroy-failed`, never `destroyed`, so an
//!   operator can tell "torn down" from "possibly still billing".
//! * **Leak ledger.** Where the store keeps a ledger, the failed destroy's
//!   record removal and the insertion of a leak entry are one step
//!   ([`Step::DeleteInstanceRecordingLeak`]), done in one transaction by the
//!   store, so the possibly-running sandbox is never silently forgotten.

use std::collections::VecDeque;

use crate::messages::{self, meta_keys};
use crate::model::ReclaimOutcome;

/// How loudly a line is logged. The names are TanStack's `InternalLogger` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogLevel {
    /// Something is wrong but the reclaim goes on.
    Warn,
    /// The reclaimer failed its job: a sandbox may be leaking.
    Errors,
    /// Routine sandbox lifecycle news.
    Sandbox,
}

impl LogLevel {
    /// The logger method's name: `warn`, `errors` or `sandbox`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Warn => "warn",
            Self::Errors => "errors",
            Self::Sandbox => "sandbox",
        }
    }
}

/// A value in a log line's meta.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaValue {
    /// A string the machine knows.
    Text(String),
    /// The error the provider's `destroy` failed with. The machine never holds
    /// host values, so the driver substitutes the very error object it caught.
    DestroyError,
}

/// One log line: level, message and meta entries in the reference's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub level: LogLevel,
    pub message: &'static str,
    pub meta: Vec<(&'static str, MetaValue)>,
}

/// The ledger entry a store records when a destroy failed (see
/// [`Step::DeleteInstanceRecordingLeak`]). The driver adds the time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeakDraft {
    pub key: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub run_id: String,
    /// The destroy failure's message, as the driver extracted it.
    pub error_message: String,
}

/// The reclaimer's failure: `SandboxReclaimFailedError` in every binding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", messages::reclaim_failed_message(run_id, sandbox_key.as_deref()))]
pub struct SandboxReclaimFailed {
    pub run_id: String,
    /// Absent only when the record had no key, which cannot reach this arm.
    pub sandbox_key: Option<String>,
}

impl SandboxReclaimFailed {
    /// The error's message, built by [`messages::reclaim_failed_message`].
    pub fn message(&self) -> String {
        messages::reclaim_failed_message(&self.run_id, self.sandbox_key.as_deref())
    }
}

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Call the store's `get(key)`, then [`Reclaim::instance_loaded`].
    GetInstance { key: String },
    /// Call the provider's `destroy({ id })`, then [`Reclaim::destroy_finished`].
    Destroy { provider_sandbox_id: String },
    /// Call the store's `delete(key)`, then [`Reclaim::instance_deleted`].
    DeleteInstance { key: String },
    /// Delete the record *and* record the leak, in one transaction, then
    /// [`Reclaim::instance_deleted`]. Only emitted when the store has a ledger.
    DeleteInstanceRecordingLeak { key: String, leak: LeakDraft },
    /// Log this line; no answer needed.
    Log(LogLine),
    /// Done: resolve with this outcome (the reclaimer resolves with nothing).
    Finish(ReclaimOutcome),
    /// Done: fail with `SandboxReclaimFailedError` (reclaimer only).
    Fail(SandboxReclaimFailed),
}

/// Where the machine stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Steps are queued; poll them.
    Ready,
    AwaitingInstance,
    AwaitingDestroy,
    AwaitingDelete {
        destroy_failed: bool,
    },
    Finished,
}

/// A driver fed an answer the machine did not ask for (or asked for none).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("reclaim state machine misused: {0}")]
pub struct Misuse(&'static str);

impl Misuse {
    /// The driver polled nothing although the machine waits for no answer.
    pub fn stalled() -> Self {
        Self("no step to take and no answer awaited")
    }

    /// A ledger step reached a store that keeps no ledger.
    pub fn no_ledger() -> Self {
        Self("a leak-recording delete was asked of a store without a ledger")
    }
}

/// The instance fields the reclaim decision reads.
#[derive(Debug, Clone, Copy)]
pub struct InstanceView<'a> {
    pub provider: &'a str,
    pub provider_sandbox_id: &'a str,
}

/// The result of the provider's `destroy`, as the machine needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DestroyResult {
    /// Returned or resolved (with any value).
    Succeeded,
    /// Threw or rejected. The message feeds the leak ledger only; the error
    /// object itself stays with the driver (see [`MetaValue::DestroyError`]).
    Failed { message: String },
}

/// What every reclaim machine offers a driver: steps out, answers in.
///
/// Implemented by [`Reclaim`] and [`Reclaimer`], so one driver loop (Rust's,
/// or the [program compiler](crate::program)) serves both APIs.
pub trait StepMachine {
    /// The next step, or `None` while waiting for an answer or once finished.
    fn poll(&mut self) -> Option<Step>;
    /// Feeds the store's answer to [`Step::GetInstance`].
    fn instance_loaded(&mut self, instance: Option<InstanceView<'_>>) -> Result<(), Misuse>;
    /// Feeds the provider's answer to [`Step::Destroy`].
    fn destroy_finished(&mut self, result: DestroyResult) -> Result<(), Misuse>;
    /// Feeds the store's successful answer to a delete step.
    fn instance_deleted(&mut self) -> Result<(), Misuse>;
}

/// `reclaimSandbox` as a state machine. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct Reclaim {
    run_id: String,
    sandbox_key: Option<String>,
    provider_name: String,
    store_has_ledger: bool,
    phase: Phase,
    queue: VecDeque<Step>,
    /// Kept from the loaded instance for the destroy-failed warning and the leak.
    instance: Option<(String, String)>,
}

impl Reclaim {
    /// Starts a reclaim of `run_id`'s sandbox `sandbox_key` for the provider
    /// named `provider_name`. `store_has_ledger` says whether the store can
    /// record a leak in the same transaction as the delete.
    pub fn new(
        run_id: impl Into<String>,
        sandbox_key: Option<String>,
        provider_name: impl Into<String>,
        store_has_ledger: bool,
    ) -> Self {
        let mut machine = Self {
            run_id: run_id.into(),
            sandbox_key,
            provider_name: provider_name.into(),
            store_has_ledger,
            phase: Phase::Ready,
            queue: VecDeque::with_capacity(2),
            instance: None,
        };
        match machine.sandbox_key.clone() {
            // Never ran in a sandbox: nothing to look up, no I/O at all.
            None => machine.finish(ReclaimOutcome::NoSandboxKey),
            Some(key) => machine.ask(Step::GetInstance { key }, Phase::AwaitingInstance),
        }
        machine
    }

    /// Whether the machine emitted its `Finish`/`Fail` step.
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    fn key(&self) -> &str {
        self.sandbox_key.as_deref().unwrap_or_default()
    }

    fn ask(&mut self, step: Step, phase: Phase) {
        self.queue.push_back(step);
        self.phase = phase;
    }

    fn finish(&mut self, outcome: ReclaimOutcome) {
        self.queue.push_back(Step::Finish(outcome));
        self.phase = Phase::Finished;
    }

    fn expect_phase(&self, phase: Phase, misuse: &'static str) -> Result<(), Misuse> {
        // Answers are only accepted once the question has been polled.
        if self.phase == phase && self.queue.is_empty() {
            Ok(())
        } else {
            Err(Misuse(misuse))
        }
    }
}

impl StepMachine for Reclaim {
    /// The next step, or `None` while the machine waits for an answer or after
    /// it has finished.
    fn poll(&mut self) -> Option<Step> {
        self.queue.pop_front()
    }

    /// Feeds the store's answer to [`Step::GetInstance`].
    fn instance_loaded(&mut self, instance: Option<InstanceView<'_>>) -> Result<(), Misuse> {
        self.expect_phase(Phase::AwaitingInstance, "instance_loaded without a GetInstance step")?;
        let Some(instance) = instance else {
            self.finish(ReclaimOutcome::NotFound);
            return Ok(());
        };
        if instance.provider != self.provider_name {
            // The first gate: a mismatch touches nothing, not even the record.
            let line = LogLine {
                level: LogLevel::Warn,
                message: messages::PROVIDER_MISMATCH,
                meta: vec![
                    (meta_keys::RUN_ID, MetaValue::Text(self.run_id.clone())),
                    (meta_keys::SANDBOX_KEY, MetaValue::Text(self.key().to_owned())),
                    (meta_keys::RECORD_PROVIDER, MetaValue::Text(instance.provider.to_owned())),
                    (meta_keys::RECLAIMER_PROVIDER, MetaValue::Text(self.provider_name.clone())),
                ],
            };
            self.queue.push_back(Step::Log(line));
            self.finish(ReclaimOutcome::ProviderMismatch);
            return Ok(());
        }
        let id = instance.provider_sandbox_id.to_owned();
        self.instance = Some((instance.provider.to_owned(), id.clone()));
        self.ask(Step::Destroy { provider_sandbox_id: id }, Phase::AwaitingDestroy);
        Ok(())
    }

    /// Feeds the provider's answer to [`Step::Destroy`].
    fn destroy_finished(&mut self, result: DestroyResult) -> Result<(), Misuse> {
        self.expect_phase(Phase::AwaitingDestroy, "destroy_finished without a Destroy step")?;
        let (provider, provider_sandbox_id) = self.instance.clone().unwrap_or_default();
        let key = self.key().to_owned();
        let DestroyResult::Failed { message } = result else {
            self.ask(Step::DeleteInstance { key }, Phase::AwaitingDelete { destroy_failed: false });
            return Ok(());
        };
        self.queue.push_back(Step::Log(LogLine {
            level: LogLevel::Warn,
            message: messages::DESTROY_FAILED_DELETING_ANYWAY,
            meta: vec![
                (meta_keys::RUN_ID, MetaValue::Text(self.run_id.clone())),
                (meta_keys::SANDBOX_KEY, MetaValue::Text(key.clone())),
                (meta_keys::PROVIDER_SANDBOX_ID, MetaValue::Text(provider_sandbox_id.clone())),
                (meta_keys::ERROR, MetaValue::DestroyError),
            ],
        }));
        // Delete regardless: a record pointing at a dead sandbox breaks resume.
        let delete = if self.store_has_ledger {
            let leak = LeakDraft {
                key: key.clone(),
                provider,
                provider_sandbox_id,
                run_id: self.run_id.clone(),
                error_message: message,
            };
            Step::DeleteInstanceRecordingLeak { key, leak }
        } else {
            Step::DeleteInstance { key }
        };
        self.ask(delete, Phase::AwaitingDelete { destroy_failed: true });
        Ok(())
    }

    /// Feeds the store's successful answer to a delete step.
    fn instance_deleted(&mut self) -> Result<(), Misuse> {
        let Phase::AwaitingDelete { destroy_failed } = self.phase else {
            return Err(Misuse("instance_deleted without a delete step"));
        };
        self.finish(if destroy_failed { ReclaimOutcome::DestroyFailed } else { ReclaimOutcome::Destroyed });
        Ok(())
    }
}

/// `sandboxReclaimer(options)(record)` as a state machine: runs a [`Reclaim`],
/// then logs the outcome and turns `destroy-failed` into [`Step::Fail`].
///
/// It must fail rather than resolve on `destroy-failed`: a sweep (TanStack's
/// `reapDetachedRuns`) only learns that a sandbox was *not* reclaimed from a
/// rejection, and would otherwise count the leak as finalized.
#[derive(Debug, Clone)]
pub struct Reclaimer {
    inner: Reclaim,
    done: bool,
}

impl Reclaimer {
    /// See [`Reclaim::new`].
    pub fn new(
        run_id: impl Into<String>,
        sandbox_key: Option<String>,
        provider_name: impl Into<String>,
        store_has_ledger: bool,
    ) -> Self {
        Self { inner: Reclaim::new(run_id, sandbox_key, provider_name, store_has_ledger), done: false }
    }

    /// Whether the reclaimer has emitted its final step.
    pub fn is_finished(&self) -> bool {
        self.done && self.inner.queue.is_empty()
    }

    /// Emits the outcome's log line now and queues the final step behind it.
    fn conclude(&mut self, outcome: ReclaimOutcome) -> Step {
        let mut meta = vec![(meta_keys::RUN_ID, MetaValue::Text(self.inner.run_id.clone()))];
        if let Some(key) = &self.inner.sandbox_key {
            meta.push((meta_keys::SANDBOX_KEY, MetaValue::Text(key.clone())));
        }
        let (line, last) = if outcome == ReclaimOutcome::DestroyFailed {
            let failure =
                SandboxReclaimFailed { run_id: self.inner.run_id.clone(), sandbox_key: self.inner.sandbox_key.clone() };
            let line = LogLine { level: LogLevel::Errors, message: messages::RECLAIMER_DESTROY_FAILED, meta };
            (line, Step::Fail(failure))
        } else {
            let message = messages::reclaimer_outcome_line(outcome);
            (LogLine { level: LogLevel::Sandbox, message, meta }, Step::Finish(outcome))
        };
        self.inner.queue.push_back(last);
        Step::Log(line)
    }
}

impl StepMachine for Reclaimer {
    /// The next step; `Finish` and `Fail` come after the reclaimer's own log line.
    fn poll(&mut self) -> Option<Step> {
        match self.inner.poll()? {
            // The inner reclaim's own Finish becomes log line + final step;
            // the final step queued by `conclude` then passes straight through.
            Step::Finish(outcome) if !self.done => {
                self.done = true;
                Some(self.conclude(outcome))
            }
            step => Some(step),
        }
    }

    /// See [`Reclaim::instance_loaded`].
    fn instance_loaded(&mut self, instance: Option<InstanceView<'_>>) -> Result<(), Misuse> {
        self.inner.instance_loaded(instance)
    }

    /// See [`Reclaim::destroy_finished`].
    fn destroy_finished(&mut self, result: DestroyResult) -> Result<(), Misuse> {
        self.inner.destroy_finished(result)
    }

    /// See [`Reclaim::instance_deleted`].
    fn instance_deleted(&mut self) -> Result<(), Misuse> {
        self.inner.instance_deleted()
    }
}
