//! The async Rust driver: runs the [machines](crate::machine) against native
//! providers, stores and loggers.

use std::error::Error as StdError;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;

use crate::errors::{ProviderError, ReclaimerError, StoreError};
use crate::ledger::{LeakLedger, NewLeak};
use crate::machine::{
    DestroyResult, InstanceView, LogLevel, LogLine, MetaValue, Misuse, Reclaim, Reclaimer, SandboxReclaimFailed, Step,
    StepMachine,
};
use crate::model::{ReclaimOutcome, RunRecord, SandboxInstanceRecord};

/// The provider side of a reclaim: a name and a `destroy`.
///
/// `name` is compared exactly (case-sensitive) with the instance record's
/// `provider` before anything is destroyed.
#[async_trait]
pub trait SandboxProvider: Send + Sync {
    /// The name instance records carry in `provider`.
    fn name(&self) -> &str;
    /// Destroys the sandbox with this provider-side id. Should succeed when
    /// the sandbox is already gone.
    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError>;
}

/// Maps sandbox keys to instance records (`SandboxStore` in `@tanstack/ai-sandbox`).
///
/// Contract: `get` of a missing key is `None`; `upsert` fully replaces, so
/// omitted optionals read back absent; deleting a missing key is a no-op.
#[async_trait]
pub trait SandboxInstanceStore: Send + Sync {
    async fn get(&self, key: &str) -> Result<Option<SandboxInstanceRecord>, StoreError>;
    async fn upsert(&self, record: &SandboxInstanceRecord) -> Result<(), StoreError>;
    async fn delete(&self, key: &str) -> Result<(), StoreError>;
    /// The store's leak ledger, if it keeps one. With a ledger, a failed
    /// destroy's delete also records the possibly-running sandbox.
    fn leak_ledger(&self) -> Option<&dyn LeakLedger> {
        None
    }
}

/// A meta value handed to a [`ReclaimLogger`].
#[derive(Debug, Clone, Copy)]
pub enum LogValue<'a> {
    Text(&'a str),
    /// The very error the provider's destroy failed with.
    Error(&'a (dyn StdError + Send + Sync + 'static)),
}

/// Ordered `(key, value)` meta of a log line.
pub type LogMeta<'a> = [(&'static str, LogValue<'a>)];

/// Where reclaim lines go; the method names are TanStack's `InternalLogger`'s.
///
/// Synchronous on purpose: the reference never awaits its logger, so a slow
/// logger cannot reorder or delay the reclaim.
pub trait ReclaimLogger: Send + Sync {
    fn warn(&self, message: &str, meta: &LogMeta<'_>);
    fn errors(&self, message: &str, meta: &LogMeta<'_>);
    fn sandbox(&self, message: &str, meta: &LogMeta<'_>);
}

/// What `reclaim_sandbox` and `sandbox_reclaimer` work with.
#[derive(Clone, Copy)]
pub struct ReclaimOptions<'a> {
    pub provider: &'a dyn SandboxProvider,
    pub instances: &'a dyn SandboxInstanceStore,
    pub logger: Option<&'a dyn ReclaimLogger>,
}

/// Destroys the sandbox a terminal run was bound to, then deletes its record.
///
/// See [`crate::machine`] for the rules and why their order matters. A store
/// error from `get` or `delete` is returned unchanged.
pub async fn reclaim_sandbox(record: &RunRecord, options: ReclaimOptions<'_>) -> Result<ReclaimOutcome, StoreError> {
    let mut machine = Reclaim::new(
        record.run_id.clone(),
        record.sandbox_key.clone(),
        options.provider.name(),
        options.instances.leak_ledger().is_some(),
    );
    match drive(&mut machine, options).await? {
        Ending::Finished(outcome) => Ok(outcome),
        Ending::Failed(_) => unreachable!("reclaimSandbox never fails with SandboxReclaimFailed"),
    }
}

/// `sandboxReclaimer(options)(record)`: reclaims, logs the outcome, and fails
/// with [`ReclaimerError::ReclaimFailed`] on `destroy-failed` so a sweep sees
/// the leak.
pub async fn sandbox_reclaimer(record: &RunRecord, options: ReclaimOptions<'_>) -> Result<(), ReclaimerError> {
    let mut machine = Reclaimer::new(
        record.run_id.clone(),
        record.sandbox_key.clone(),
        options.provider.name(),
        options.instances.leak_ledger().is_some(),
    );
    match drive(&mut machine, options).await? {
        Ending::Finished(_) => Ok(()),
        Ending::Failed(failure) => Err(ReclaimerError::ReclaimFailed(failure)),
    }
}

/// How a driven machine ended.
enum Ending {
    Finished(ReclaimOutcome),
    Failed(SandboxReclaimFailed),
}

async fn drive(machine: &mut impl StepMachine, options: ReclaimOptions<'_>) -> Result<Ending, StoreError> {
    // The destroy error lives here, not in the machine, so the warn line can
    // hand the logger the provider's own error value.
    let mut destroy_error: Option<ProviderError> = None;
    loop {
        let step = machine.poll().ok_or(Misuse::stalled())?;
        match step {
            Step::Log(line) => log(options.logger, &line, destroy_error.as_ref()),
            Step::GetInstance { key } => {
                let instance = options.instances.get(&key).await?;
                let view = instance.as_ref().map(|found| InstanceView {
                    provider: &found.provider,
                    provider_sandbox_id: &found.provider_sandbox_id,
                });
                machine.instance_loaded(view)?;
            }
            Step::Destroy { provider_sandbox_id } => {
                let result = match options.provider.destroy(&provider_sandbox_id).await {
                    Ok(()) => DestroyResult::Succeeded,
                    Err(error) => {
                        let message = error.to_string();
                        destroy_error = Some(error);
                        DestroyResult::Failed { message }
                    }
                };
                machine.destroy_finished(result)?;
            }
            Step::DeleteInstance { key } => {
                options.instances.delete(&key).await?;
                machine.instance_deleted()?;
            }
            Step::DeleteInstanceRecordingLeak { key, leak } => {
                let ledger = options.instances.leak_ledger().ok_or(Misuse::no_ledger())?;
                let leak = NewLeak::from_draft(leak, now_millis());
                ledger.delete_recording_leak(&key, leak).await?;
                machine.instance_deleted()?;
            }
            Step::Finish(outcome) => return Ok(Ending::Finished(outcome)),
            Step::Fail(failure) => return Ok(Ending::Failed(failure)),
        }
    }
}

fn log(logger: Option<&dyn ReclaimLogger>, line: &LogLine, destroy_error: Option<&ProviderError>) {
    let Some(logger) = logger else { return };
    let meta: Vec<(&'static str, LogValue<'_>)> = line
        .meta
        .iter()
        .map(|(key, value)| {
            let value = match (value, destroy_error) {
                (MetaValue::Text(text), _) => LogValue::Text(text),
                (MetaValue::DestroyError, Some(error)) => LogValue::Error(error),
                (MetaValue::DestroyError, None) => LogValue::Text(""),
            };
            (*key, value)
        })
        .collect();
    match line.level {
        LogLevel::Warn => logger.warn(line.message, &meta),
        LogLevel::Errors => logger.errors(line.message, &meta),
        LogLevel::Sandbox => logger.sandbox(line.message, &meta),
    }
}

/// Wall-clock epoch milliseconds, for leak entries.
pub fn now_millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|elapsed| elapsed.as_millis() as u64).unwrap_or(0)
}
