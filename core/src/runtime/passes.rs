//! Fleet passes on the tokio driver: [`reclaim_all`] (many runs at once) and
//! [`reconcile`] (leaks, orphans, idle records). The rules live in the
//! machines ([`crate::machine::reclaim_all`], [`crate::machine::reconcile`]);
//! their options take the path every host's take ([`start`]: the same
//! checks, defaults and refusals as from Node), and this module runs them.

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::runtime::driver::{run, Host, ProgressCallback, StopSignal};

use crate::contract::errors::ReclaimError;
use crate::contract::FleetStore;
use crate::contract::{ReclaimLogger, SandboxInstanceStore, SandboxProvider};
use crate::machine::effects::{Misuse, Output};
use crate::machine::reclaim_all::{FleetReclaimReport, ReclaimAll};
use crate::machine::reconcile::{Reconcile, ReconcileReport};
use crate::machine::start::{self, HostProvider, PassStart};
use crate::model::RunRecord;
use crate::options::{defaults, Dialect, HostOptions};
use crate::report::messages;
use crate::runtime::clock::{duration_millis, now_millis};

pub use crate::machine::start::{host_name, pass_holder};
pub use crate::options::defaults::OWNER as DEFAULT_OWNER;
pub use crate::options::{HostOptionError, InvalidOption};

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

/// A duration as the host path reads it: whole milliseconds. One beyond
/// `u64` milliseconds saturates, and the check then refuses it as out of
/// range, as it refuses the same value from Node or the command.
fn millis(duration: Option<Duration>) -> Value {
    duration.map_or(Value::Null, |duration| json!(duration_millis(duration)))
}

impl FleetOptions<'_> {
    /// These options as a Node host hands them over: the one path every
    /// host's options take ([`start::reclaim_all`]).
    fn host_options(&self) -> HostOptions {
        let values = json!({
            "concurrency": self.concurrency,
            "perProviderConcurrency": self.per_provider_concurrency,
            "destroyTimeoutMs": millis(self.destroy_timeout),
            "budgetMs": millis(self.budget),
        });
        HostOptions::from_values(object(values), Dialect::Node)
    }
}

impl ReconcileOptions<'_> {
    /// These options as a Node host hands them over: the one path every
    /// host's options take ([`start::reconcile`]).
    fn host_options(&self) -> HostOptions {
        let values = json!({
            "dryRun": self.dry_run,
            "retryLeaks": self.retry_leaks,
            "concurrency": self.concurrency,
            "perProviderConcurrency": self.per_provider_concurrency,
            "destroyTimeoutMs": millis(self.destroy_timeout),
            "budgetMs": millis(self.budget),
            "orphanGraceMs": millis(Some(self.orphan_grace)),
            "maxIdleMs": millis(self.max_idle),
            "limit": self.limit,
            "leaseMs": millis(Some(self.lease)),
            "backoffMs": millis(Some(self.backoff)),
            "maxBackoffMs": millis(Some(self.max_backoff)),
            "registryRetentionMs": millis(Some(self.registry_retention)),
            "auditRetentionMs": millis(Some(self.audit_retention)),
            "owner": self.owner,
            "host": self.host,
        });
        HostOptions::from_values(object(values), Dialect::Node)
    }
}

/// The given options: `None` is left out, as a Node caller leaves out an
/// option it does not set (a JavaScript `null` is a value, and refused).
fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(values) => values.into_iter().filter(|(_, value)| !value.is_null()).collect(),
        _ => Map::new(),
    }
}

fn names(providers: &[&dyn SandboxProvider]) -> Vec<String> {
    providers.iter().map(|provider| provider.name().to_owned()).collect()
}

/// Reclaims many runs side by side, each exactly as [`crate::reclaim_sandbox`]
/// would (see [`crate::machine::reclaim_all`]). Never fails because one record
/// did: a store failure is reported on its record. Its options are checked
/// first, as [`reconcile`]'s are.
pub async fn reclaim_all(records: &[RunRecord], options: FleetOptions<'_>) -> Result<FleetReclaimReport, ReclaimError> {
    let records = records.iter().map(|record| (record.run_id.clone(), record.sandbox_key.clone())).collect();
    let start = PassStart {
        progress: options.on_progress.is_some(),
        stopped: options.stop.is_some_and(StopSignal::is_stopped),
        ..PassStart::default()
    };
    let has_ledger = options.instances.leak_ledger().is_some();
    let input = start::reclaim_all(&options.host_options(), records, names(&options.providers), has_ledger, start)?;
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
///
/// Its options are checked before anything runs, by the checks a Node
/// host's options take: a refusal is [`ReclaimError::InvalidOption`], whose
/// [`HostOptionError`] names the field (Node's spelling) and its `OptionId`.
pub async fn reconcile(options: ReconcileOptions<'_>) -> Result<ReconcileReport, ReclaimError> {
    let providers = options
        .providers
        .iter()
        .map(|provider| HostProvider {
            name: provider.name().to_owned(),
            can_list: provider.can_list(),
            owner: provider.owner().map(str::to_owned),
        })
        .collect();
    // Every store this crate ships keeps the registry and prunes; a Rust
    // store without them answers with the contract's defaults.
    let start = PassStart {
        progress: options.on_progress.is_some(),
        stopped: options.stop.is_some_and(StopSignal::is_stopped),
        host_name: None,
        registry: true,
        prune: true,
    };
    let now = now_millis();
    let input = start::reconcile(&options.host_options(), providers, start, now)?;
    let mut flow = Reconcile::new(input, now);
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
