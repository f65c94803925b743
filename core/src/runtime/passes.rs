//! Fleet passes on the tokio driver: [`reclaim_all`] (many runs at once) and
//! [`reconcile`] (leaks, orphans, idle records). The rules live in the
//! machines ([`crate::machine::reclaim_all`], [`crate::machine::reconcile`]);
//! this module checks options and runs them.

use std::time::Duration;

use crate::runtime::driver::{run, Host, ProgressCallback, StopSignal};

use crate::contract::errors::ReclaimError;
use crate::contract::FleetStore;
use crate::contract::{ReclaimLogger, SandboxInstanceStore, SandboxProvider};
use crate::machine::effects::{Misuse, Output};
use crate::machine::reclaim_all::{FleetReclaimReport, ReclaimAll, ReclaimAllInput};
use crate::machine::reconcile::{ProviderPlan, Reconcile, ReconcileInput, ReconcileReport};
use crate::model::RunRecord;
use crate::options::defaults;
use crate::report::messages;
use crate::runtime::clock::{duration_millis, now_millis};

pub use crate::machine::start::{host_name, pass_holder};
pub use crate::options::defaults::OWNER as DEFAULT_OWNER;
pub use crate::options::InvalidOption;

/// Options of [`reclaim_all`].
#[derive(Clone)]
pub struct FleetOptions<'a> {
    /// Each record goes to the provider whose name its instance names.
    pub providers: Vec<&'a dyn SandboxProvider>,
    pub instances: &'a dyn SandboxInstanceStore,
    pub logger: Option<&'a dyn ReclaimLogger>,
    /// Records in progress at once (default 16). A record writing its outcome
    /// gives its slot to the next one meanwhile, with at most as many such
    /// writes at once.
    pub concurrency: usize,
    /// Destroys in flight per provider (default: `concurrency`).
    pub per_provider_concurrency: Option<usize>,
    pub destroy_timeout: Option<Duration>,
    /// Start no record after this long; the rest is reported `deferred`.
    pub budget: Option<Duration>,
    pub on_progress: Option<ProgressCallback<'a>>,
    pub stop: Option<&'a StopSignal>,
}

impl<'a> FleetOptions<'a> {
    /// Options with the defaults: concurrency 16, no deadline, no budget.
    pub fn new(providers: Vec<&'a dyn SandboxProvider>, instances: &'a dyn SandboxInstanceStore) -> Self {
        Self {
            providers,
            instances,
            logger: None,
            concurrency: defaults::CONCURRENCY as usize,
            per_provider_concurrency: None,
            destroy_timeout: None,
            budget: None,
            on_progress: None,
            stop: None,
        }
    }
}

/// Options of [`reconcile`].
#[derive(Clone)]
pub struct ReconcileOptions<'a> {
    pub providers: Vec<&'a dyn SandboxProvider>,
    pub store: &'a dyn FleetStore,
    /// Plan only: read, change nothing, answer what would be destroyed.
    pub dry_run: bool,
    /// Retry the ledger's due leaks (default true; false: sweep orphans and
    /// expire idle records only).
    pub retry_leaks: bool,
    /// Destroys in flight at once (default 16).
    pub concurrency: usize,
    pub per_provider_concurrency: Option<usize>,
    pub destroy_timeout: Option<Duration>,
    /// Start no destroy after this long.
    pub budget: Option<Duration>,
    /// Spare unreferenced sandboxes younger than this (default 10 minutes).
    pub orphan_grace: Duration,
    /// Expire records idle longer than this (default: no idle expiry).
    pub max_idle: Option<Duration>,
    /// Most ledger entries claimed per provider, and stale records read (default 1000).
    pub limit: usize,
    /// How long claims hold (default 5 minutes).
    pub lease: Duration,
    /// After an entry's n-th failed destroy, its next attempt waits
    /// `backoff × 2^(n−1)` (default 30 s), at most `max_backoff` (default 1 h).
    /// A reclaim's failed destroy is failure 1, so its first failed retry waits 2 × `backoff`.
    pub backoff: Duration,
    pub max_backoff: Duration,
    /// How long after its record was last written or deleted an unlabelled
    /// sandbox the store's registry names still counts as ours (default 30 days).
    pub registry_retention: Duration,
    /// How long the audit log keeps a row: the pass that holds a
    /// provider's sweep prunes older ones, and registry rows past
    /// `registry_retention` (default 90 days).
    pub audit_retention: Duration,
    /// The owner namespace of providers that do not name theirs (default [`DEFAULT_OWNER`]).
    pub owner: Option<String>,
    /// The audit log's host (default: this machine's host name).
    pub host: Option<String>,
    pub on_progress: Option<ProgressCallback<'a>>,
    pub stop: Option<&'a StopSignal>,
}

impl<'a> ReconcileOptions<'a> {
    /// Options with the documented defaults.
    pub fn new(providers: Vec<&'a dyn SandboxProvider>, store: &'a dyn FleetStore) -> Self {
        Self {
            providers,
            store,
            dry_run: false,
            retry_leaks: true,
            concurrency: defaults::CONCURRENCY as usize,
            per_provider_concurrency: None,
            destroy_timeout: None,
            budget: None,
            orphan_grace: Duration::from_millis(defaults::ORPHAN_GRACE_MS),
            max_idle: None,
            limit: defaults::LIMIT as usize,
            lease: Duration::from_millis(defaults::LEASE_MS),
            backoff: Duration::from_millis(defaults::BACKOFF_MS),
            max_backoff: Duration::from_millis(defaults::MAX_BACKOFF_MS),
            registry_retention: Duration::from_millis(defaults::REGISTRY_RETENTION_MS),
            audit_retention: Duration::from_millis(defaults::AUDIT_RETENTION_MS),
            owner: None,
            host: None,
            on_progress: None,
            stop: None,
        }
    }
}

fn count(value: usize, field: &'static str) -> Result<u32, InvalidOption> {
    if value == 0 {
        return Err(InvalidOption { field, reason: "must be at least 1" });
    }
    u32::try_from(value).map_err(|_| InvalidOption { field, reason: "must be below 2^32" })
}

fn positive(value: Option<Duration>, field: &'static str) -> Result<Option<u64>, InvalidOption> {
    match value.map(duration_millis) {
        Some(0) => Err(InvalidOption { field, reason: "must be at least 1 ms" }),
        other => Ok(other),
    }
}

fn provider_names(providers: &[&dyn SandboxProvider]) -> Result<Vec<String>, InvalidOption> {
    if providers.is_empty() {
        return Err(InvalidOption { field: "providers", reason: "must name at least one provider" });
    }
    let names: Vec<String> = providers.iter().map(|provider| provider.name().to_owned()).collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    if unique.len() != names.len() {
        return Err(InvalidOption { field: "providers", reason: "two providers share a name" });
    }
    Ok(names)
}

/// Reclaims many runs side by side, each exactly as [`crate::reclaim_sandbox`]
/// would (see [`crate::machine::reclaim_all`]). Never fails because one record
/// did: a store failure is reported on its record.
pub async fn reclaim_all(records: &[RunRecord], options: FleetOptions<'_>) -> Result<FleetReclaimReport, ReclaimError> {
    let input = ReclaimAllInput {
        records: records.iter().map(|record| (record.run_id.clone(), record.sandbox_key.clone())).collect(),
        providers: provider_names(&options.providers)?,
        store_has_ledger: options.instances.leak_ledger().is_some(),
        concurrency: count(options.concurrency, "concurrency")?,
        per_provider_concurrency: options
            .per_provider_concurrency
            .map(|limit| count(limit, "perProviderConcurrency"))
            .transpose()?,
        destroy_timeout_ms: positive(options.destroy_timeout, "destroyTimeoutMs")?,
        budget_ms: positive(options.budget, "budgetMs")?,
        progress: options.on_progress.is_some(),
        stopped: options.stop.is_some_and(StopSignal::is_stopped),
    };
    let mut flow = ReclaimAll::new(input, now_millis());
    let host = Host {
        providers: options.providers.clone(),
        instances: Some(options.instances),
        ledger: options.instances.leak_ledger(),
        logger: options.logger,
        progress: options.on_progress,
        stop: options.stop,
        ..Host::default()
    };
    match run(&mut flow, host).await? {
        Ok(Output::FleetReclaim(report)) => Ok(*report),
        _ => Err(Misuse(messages::MISUSE_WRONG_COMPLETION).into()),
    }
}

/// One reconcile pass (see [`crate::machine::reconcile`]).
pub async fn reconcile(options: ReconcileOptions<'_>) -> Result<ReconcileReport, ReclaimError> {
    let names = provider_names(&options.providers)?;
    let owner = options.owner.clone().unwrap_or_else(|| DEFAULT_OWNER.to_owned());
    let plans = options
        .providers
        .iter()
        .zip(names)
        .map(|(provider, name)| ProviderPlan {
            name,
            can_list: provider.can_list(),
            owner: provider.owner().map_or_else(|| owner.clone(), str::to_owned),
        })
        .collect();
    let host = options.host.clone().unwrap_or_else(host_name);
    let holder = pass_holder(&host, now_millis());
    let mut input = ReconcileInput::new(plans, host, holder);
    input.dry_run = options.dry_run;
    input.retry_leaks = options.retry_leaks;
    input.concurrency = count(options.concurrency, "concurrency")?;
    input.per_provider_concurrency =
        options.per_provider_concurrency.map(|limit| count(limit, "perProviderConcurrency")).transpose()?;
    input.destroy_timeout_ms = positive(options.destroy_timeout, "destroyTimeoutMs")?;
    input.budget_ms = positive(options.budget, "budgetMs")?;
    input.orphan_grace_ms = duration_millis(options.orphan_grace);
    input.max_idle_ms = positive(options.max_idle, "maxIdleMs")?;
    input.limit = count(options.limit, "limit")?;
    input.lease_ms = positive(Some(options.lease), "leaseMs")?.unwrap_or(1);
    input.backoff_ms = duration_millis(options.backoff);
    input.max_backoff_ms = duration_millis(options.max_backoff);
    input.registry_retention_ms = duration_millis(options.registry_retention);
    input.audit_retention_ms = duration_millis(options.audit_retention);
    input.registry = true;
    input.prune = true;
    input.progress = options.on_progress.is_some();
    input.stopped = options.stop.is_some_and(StopSignal::is_stopped);
    let mut flow = Reconcile::new(input, now_millis());
    let host = Host {
        providers: options.providers.clone(),
        fleet: Some(options.store),
        progress: options.on_progress,
        stop: options.stop,
        ..Host::default()
    };
    match run(&mut flow, host).await? {
        Ok(Output::Reconcile(report)) => Ok(*report),
        _ => Err(Misuse(messages::MISUSE_WRONG_COMPLETION).into()),
    }
}
