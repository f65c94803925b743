//! The async Rust API of the one-record flows: `reclaim_sandbox`,
//! `sandbox_reclaimer` and `retry_leaks`, each one machine run by the
//! [driver](super::driver).

use std::time::Duration;

use crate::contract::errors::{ReclaimError, ReclaimerError};
use crate::contract::{LeakLedger, ReclaimLogger, SandboxInstanceStore, SandboxProvider};
use crate::machine::effects::{Misuse, Output};
use crate::machine::{Reclaim, ReclaimApi, ReclaimInput, Retry, RetryInput};
use crate::model::ledger::RetrySummary;
use crate::model::{ReclaimOutcome, RunRecord};
use crate::options::RetryOptions;
use crate::report::messages;
use crate::runtime::clock::{duration_millis, now_millis};
use crate::runtime::driver::{run, Host};

/// What `reclaim_sandbox` and `sandbox_reclaimer` work with.
#[derive(Clone, Copy)]
pub struct ReclaimOptions<'a> {
    pub provider: &'a dyn SandboxProvider,
    pub instances: &'a dyn SandboxInstanceStore,
    pub logger: Option<&'a dyn ReclaimLogger>,
    /// Cancel a destroy that has not settled after this long and take the
    /// destroy-failed path; `None` waits as long as it takes (the reference).
    pub destroy_timeout: Option<Duration>,
}

impl<'a> ReclaimOptions<'a> {
    /// Options without logger and without a destroy deadline.
    pub fn new(provider: &'a dyn SandboxProvider, instances: &'a dyn SandboxInstanceStore) -> Self {
        Self { provider, instances, logger: None, destroy_timeout: None }
    }

    pub fn with_logger(self, logger: &'a dyn ReclaimLogger) -> Self {
        Self { logger: Some(logger), ..self }
    }

    pub fn with_destroy_timeout(self, timeout: Duration) -> Self {
        Self { destroy_timeout: Some(timeout), ..self }
    }

    fn input(&self, api: ReclaimApi, record: &RunRecord) -> ReclaimInput {
        ReclaimInput {
            api,
            run_id: record.run_id.clone(),
            sandbox_key: record.sandbox_key.clone(),
            providers: vec![self.provider.name().to_owned()],
            store_has_ledger: self.instances.leak_ledger().is_some(),
            destroy_timeout_ms: self.destroy_timeout.map(duration_millis),
        }
    }

    fn host(&self) -> Host<'a> {
        Host {
            providers: vec![self.provider],
            instances: Some(self.instances),
            ledger: self.instances.leak_ledger(),
            logger: self.logger,
            ..Host::default()
        }
    }
}

/// Destroys the sandbox a terminal run was bound to, then deletes its record.
///
/// See [`crate::machine::reclaim`] for the rules and why their order matters. A
/// store error from `get` or `delete` is returned unchanged.
pub async fn reclaim_sandbox(record: &RunRecord, options: ReclaimOptions<'_>) -> Result<ReclaimOutcome, ReclaimError> {
    let mut flow = Reclaim::new(options.input(ReclaimApi::ReclaimSandbox, record), now_millis());
    match run(&mut flow, options.host()).await? {
        Ok(Output::Outcome(outcome)) => Ok(outcome),
        _ => Err(Misuse(messages::MISUSE_WRONG_COMPLETION).into()),
    }
}

/// `sandboxReclaimer(options)(record)`: reclaims, logs the outcome, and fails
/// with [`ReclaimerError::ReclaimFailed`] on `destroy-failed` so a sweep sees
/// the leak.
pub async fn sandbox_reclaimer(record: &RunRecord, options: ReclaimOptions<'_>) -> Result<(), ReclaimerError> {
    let mut flow = Reclaim::new(options.input(ReclaimApi::SandboxReclaimer, record), now_millis());
    match run(&mut flow, options.host()).await? {
        Ok(_) => Ok(()),
        Err(failure) => Err(ReclaimerError::ReclaimFailed(failure)),
    }
}

/// Retries the destroy of `provider`'s pending leaks (see [`crate::machine::retry`]).
pub async fn retry_leaks(
    provider: &dyn SandboxProvider,
    ledger: &dyn LeakLedger,
    options: RetryOptions,
) -> Result<RetrySummary, ReclaimError> {
    let input = RetryInput {
        provider_name: provider.name().to_owned(),
        limit: u32::try_from(options.limit).unwrap_or(u32::MAX),
        lease_ms: duration_millis(options.lease).max(1),
        destroy_timeout_ms: options.destroy_timeout.map(duration_millis),
    };
    let mut flow = Retry::new(input, now_millis());
    let host = Host { providers: vec![provider], ledger: Some(ledger), ..Host::default() };
    match run(&mut flow, host).await? {
        Ok(Output::Retry(summary)) => Ok(summary),
        _ => Err(Misuse(messages::MISUSE_WRONG_COMPLETION).into()),
    }
}
