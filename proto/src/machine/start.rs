//! A flow's input from the options a host handed over ([`HostOptions`]):
//! every default, range and derived value (the pass's host name, its sweep
//! holder, each provider's owner) is decided here, for every binding alike.
//! The host keeps its callables (providers, store, logger, signal) and
//! passes only what it read of them: names, whether each can list, owners.

use crate::machine::effects::Millis;
use crate::machine::reconcile::ProviderPlan;
use crate::machine::{ReclaimAllInput, ReconcileInput, RetryInput};
use crate::options::flows::{reclaim, reclaim_all, reconcile as pass, retry_leaks};
use crate::options::{Dialect, HostOptionError, HostOptions};
use crate::report::messages;

/// A provider of a reconcile pass, as the host read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostProvider {
    pub name: String,
    /// Whether it has a listing method (no listing: no orphan sweep).
    pub can_list: bool,
    /// Whether it has a lookup method (reads sandboxes by id).
    pub can_lookup: bool,
    /// Its own owner namespace, when it names one.
    pub owner: Option<String>,
}

/// What every fleet pass is told beyond its options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassStart {
    /// The host passed a progress callback.
    pub progress: bool,
    /// Its stop signal was already raised: start nothing.
    pub stopped: bool,
    /// The machine's host name as the host language's platform knows it
    /// (`os.hostname()`, `socket.gethostname()`): the pass's `host` unless
    /// the options name one. `None`: [`host_name`].
    pub host_name: Option<String>,
    /// The store offers `registeredSandboxes` (the registry of sandboxes its
    /// records named): the sweep also takes unlabelled sandboxes it names.
    pub registry: bool,
    /// The store offers `prune` (bounded growth): the sweep's holder prunes
    /// the registry and the audit log past their retention.
    pub prune: bool,
    /// The store answers about what a sweep listed (`sweepMark`,
    /// `referencedAmong`, `registeredAmong`, `lookupCandidates`,
    /// `lookupChecked`): see [`crate::machine::reconcile::ReconcileInput::scoped`].
    pub scoped: bool,
}

/// The store methods of a scoped sweep (effect ops 23–27), in the host's
/// spelling (`sweepMark` ... / `sweep_mark` ...): a store has all or none.
pub fn scoped_read_methods(dialect: Dialect) -> Vec<&'static str> {
    use crate::machine::effect_table::{op, EFFECTS};
    EFFECTS[op::SWEEP_MARK as usize..=op::LOOKUP_CHECKED as usize]
        .iter()
        .map(|row| if dialect == Dialect::Node { row.method } else { row.python })
        .collect()
}

/// Whether a host store is scoped, given which of [`scoped_read_methods`]
/// it has (in that order): all → `true`, none → `false`; some → the
/// `TypeError` text naming the first missing one (each name after `prefix`,
/// `options.instances.` / `instances.`).
pub fn scoped_reads(present: &[bool], prefix: &str, dialect: Dialect) -> Result<bool, String> {
    let names = scoped_read_methods(dialect);
    let has = |index: usize| present.get(index).copied().unwrap_or(false);
    let first_present = (0..names.len()).find(|&index| has(index));
    let first_missing = (0..names.len()).find(|&index| !has(index));
    match (first_present, first_missing) {
        (None, _) => Ok(false),
        (Some(_), None) => Ok(true),
        (Some(present), Some(missing)) => Err(messages::scoped_reads_partial(
            &format!("{prefix}{}", names[missing]),
            &format!("{prefix}{}", names[present]),
            &names,
        )),
    }
}

/// `reclaimAll`'s input: `records` are `(runId, sandboxKey)`, `providers` the names in order.
pub fn reclaim_all(
    options: &HostOptions,
    records: Vec<(String, Option<String>)>,
    providers: Vec<String>,
    store_has_ledger: bool,
    start: PassStart,
) -> Result<ReclaimAllInput, HostOptionError> {
    options.provider_names(&providers)?;
    Ok(ReclaimAllInput {
        records,
        providers,
        store_has_ledger,
        concurrency: options.count_of(reclaim_all::CONCURRENCY)?,
        per_provider_concurrency: options.maybe_count_of(reclaim_all::PER_PROVIDER_CONCURRENCY)?,
        destroy_timeout_ms: options.maybe_millis_of(reclaim_all::DESTROY_TIMEOUT)?,
        budget_ms: options.maybe_millis_of(reclaim_all::BUDGET)?,
        progress: start.progress,
        stopped: start.stopped,
    })
}

/// `reconcile`'s input.
pub fn reconcile(
    options: &HostOptions,
    providers: Vec<HostProvider>,
    start: PassStart,
    now: Millis,
) -> Result<ReconcileInput, HostOptionError> {
    let names: Vec<String> = providers.iter().map(|provider| provider.name.clone()).collect();
    options.provider_names(&names)?;
    let dry_run = options.flag_of(pass::DRY_RUN)?;
    let retry_leaks = options.flag_of(pass::RETRY_LEAKS)?;
    let concurrency = options.count_of(pass::CONCURRENCY)?;
    let per_provider_concurrency = options.maybe_count_of(pass::PER_PROVIDER_CONCURRENCY)?;
    let destroy_timeout_ms = options.maybe_millis_of(pass::DESTROY_TIMEOUT)?;
    let budget_ms = options.maybe_millis_of(pass::BUDGET)?;
    let orphan_grace_ms = options.millis_of(pass::ORPHAN_GRACE)?;
    let max_idle_ms = options.maybe_millis_of(pass::MAX_IDLE)?;
    let limit = options.count_of(pass::LIMIT)?;
    let lease_ms = options.millis_of(pass::LEASE)?;
    let backoff_ms = options.millis_of(pass::BACKOFF)?;
    let max_backoff_ms = options.millis_of(pass::MAX_BACKOFF)?;
    let registry_retention_ms = options.millis_of(pass::REGISTRY_RETENTION)?;
    let audit_retention_ms = options.millis_of(pass::AUDIT_RETENTION)?;
    let owner = options.text_of(pass::OWNER)?;
    let host = match options.maybe_text_of(pass::HOST)? {
        Some(host) => host,
        None => start.host_name.clone().filter(|name| !name.is_empty()).unwrap_or_else(host_name),
    };
    let plans = providers
        .into_iter()
        .map(|provider| ProviderPlan {
            name: provider.name,
            can_list: provider.can_list,
            can_lookup: provider.can_lookup,
            owner: provider.owner.unwrap_or_else(|| owner.clone()),
        })
        .collect();
    let holder = pass_holder(&host, now);
    let mut input = ReconcileInput::new(plans, host, holder);
    input.dry_run = dry_run;
    input.retry_leaks = retry_leaks;
    input.concurrency = concurrency;
    input.per_provider_concurrency = per_provider_concurrency;
    input.destroy_timeout_ms = destroy_timeout_ms;
    input.budget_ms = budget_ms;
    input.orphan_grace_ms = orphan_grace_ms;
    input.max_idle_ms = max_idle_ms;
    input.limit = limit;
    input.lease_ms = lease_ms;
    input.backoff_ms = backoff_ms;
    input.max_backoff_ms = max_backoff_ms;
    input.registry_retention_ms = registry_retention_ms;
    input.audit_retention_ms = audit_retention_ms;
    input.registry = start.registry;
    input.prune = start.prune;
    input.scoped = start.scoped;
    input.progress = start.progress;
    input.stopped = start.stopped;
    Ok(input)
}

/// A reclaim's destroy deadline (`reclaimSandbox`, `sandboxReclaimer`), in
/// milliseconds. A binding asks only when the caller gave one, so a plain
/// reclaim crosses no extra native call.
pub fn reclaim_deadline(options: &HostOptions) -> Result<Option<u64>, HostOptionError> {
    options.maybe_millis_of(reclaim::DESTROY_TIMEOUT)
}

/// `retryLeaks`' input for the provider named `provider_name`.
pub fn retry(options: &HostOptions, provider_name: String) -> Result<RetryInput, HostOptionError> {
    Ok(RetryInput {
        provider_name,
        limit: options.count_of(retry_leaks::LIMIT)?,
        lease_ms: options.millis_of(retry_leaks::LEASE)?,
        destroy_timeout_ms: options.maybe_millis_of(retry_leaks::DESTROY_TIMEOUT)?,
    })
}

/// This machine's host name (`/proc/sys/kernel/hostname`, `HOSTNAME`), or
/// `unknown-host`: the audit log's `host` unless a pass names one.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|name| !name.is_empty()))
        .unwrap_or_else(|| "unknown-host".to_owned())
}

/// A sweep-lease holder unique to this pass: host, process, start time and
/// a counter (two passes on one host must not both think they hold a sweep).
pub fn pass_holder(host: &str, now: Millis) -> String {
    static PASSES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let pass = PASSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{host}/{}/{now}/{pass}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{defaults, Dialect};

    #[test]
    fn reconcile_defaults_come_from_the_core() {
        let options = HostOptions::parse(r#"{"host": "h"}"#, Dialect::Node).unwrap();
        let provider = HostProvider { name: "p".into(), can_list: true, can_lookup: false, owner: None };
        let input = reconcile(&options, vec![provider], PassStart::default(), 5).unwrap();
        assert_eq!(input.providers[0].owner, defaults::OWNER);
        assert_eq!((input.concurrency, input.limit, input.lease_ms), (16, 1000, 300_000));
        assert_eq!((input.orphan_grace_ms, input.backoff_ms, input.max_backoff_ms), (600_000, 30_000, 3_600_000));
        assert!(input.retry_leaks && !input.dry_run);
        assert!(input.holder.starts_with(&format!("h/{}/5/", std::process::id())), "{}", input.holder);
    }

    #[test]
    fn python_seconds_become_milliseconds() {
        let options =
            HostOptions::parse(r#"{"lease": 2, "orphan_grace": 0.5, "retry_leaks": false}"#, Dialect::Python).unwrap();
        let provider =
            HostProvider { name: "p".into(), can_list: false, can_lookup: false, owner: Some("team".into()) };
        let input = reconcile(&options, vec![provider], PassStart::default(), 0).unwrap();
        assert_eq!((input.lease_ms, input.orphan_grace_ms, input.retry_leaks), (2000, 500, false));
        assert_eq!(input.providers[0].owner, "team");
    }

    #[test]
    fn retry_takes_a_limit_of_zero() {
        let options = HostOptions::parse(r#"{"limit": 0}"#, Dialect::Node).unwrap();
        let input = retry(&options, "p".into()).unwrap();
        assert_eq!((input.limit, input.lease_ms, input.destroy_timeout_ms), (0, 300_000, None));
    }

    /// A store has all of the scoped reads or none; with some, the core's
    /// refusal names the first missing one and the first present one.
    #[test]
    fn a_store_has_all_of_the_scoped_reads_or_none() {
        assert_eq!(scoped_read_methods(Dialect::Node)[0], "sweepMark");
        assert_eq!(scoped_read_methods(Dialect::Python)[4], "lookup_checked");
        assert_eq!(scoped_reads(&[true; 5], "i.", Dialect::Node), Ok(true));
        assert_eq!(scoped_reads(&[false; 5], "i.", Dialect::Node), Ok(false));
        let refusal = scoped_reads(&[false, true, true, true, true], "instances.", Dialect::Python).unwrap_err();
        assert!(refusal.starts_with("instances.sweep_mark must be a function when instances.referenced_among is"));
        assert!(refusal.ends_with("lookup_candidates, lookup_checked or none)"), "{refusal}");
    }
}
