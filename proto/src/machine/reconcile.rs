//! `reconcile`: one pass over everything that may still be billing.
//!
//! 1. **Idle expiry** (with `max_idle_ms`): stale records are expired with a
//!    conditional delete that also writes a ledger entry (reason `idle`), in
//!    one store transaction; a record touched meanwhile is skipped
//!    (`touched`). Their destroys then run from the ledger, in step 2.
//! 2. Per provider, side by side:
//!    * **Leaks**: due ledger entries are claimed under a lease and destroyed;
//!      success resolves the entry, failure defers it with exponential
//!      backoff. As in leak retry, no destroy starts or keeps running after
//!      the claim's lease (less its last tenth, kept for the store write),
//!      and the store fences that write by the claim's generation: a write
//!      that comes after another pass took the entry is refused, counted
//!      (`leaseLost`) and audited as `lease-lost`.
//!    * **Orphans**: one host at a time holds a provider's sweep (a lease in
//!      the store). It reads the store's references, *then* lists (see
//!      `Reconcile::sweep` for why). Sandboxes listed under the expected owner,
//!      referenced by no record and no ledger entry, created more than
//!      `orphan_grace_ms` ago, are destroyed; a failed orphan destroy goes to
//!      the ledger. **Fail closed**: if the listing fails, names a sandbox of
//!      unknown creation time or owner, or the store's references cannot be
//!      read, nothing of that provider is destroyed (`unavailable`).
//!    * **Bounded growth**: the sweep's holder also prunes that provider's
//!      registry rows past `registry_retention_ms` and audit rows past
//!      `audit_retention_ms` (with a store that offers it; see
//!      `Reconcile::prune`).
//!
//! Destroys share `concurrency` (and `per_provider_concurrency`) slots and
//! the destroy deadline. After `budget_ms`, on `stop`, or once a store write
//! failed, nothing new starts; what runs settles (or reaches its deadline)
//! and is written down. A store write failure then ends the pass with that
//! error; every started destroy is by then resolved or in the ledger (or,
//! for an orphan, still listed for the next pass). A dry run makes only
//! reads and answers the plan.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::machine::effects::{
    Completion, DueFields, Effect, EffectId, Ending, Flow, HostRef, Millis, Misuse, Output, StaleRecord,
};
use crate::machine::outbox::Outbox;
use crate::model::fleet::{AuditEntry, AuditResult, LeakReason, ListedSandbox};
use crate::model::ledger::NewLeak;
use crate::report::{messages, ActionProgress, ProgressEvent};
pub use crate::report::{
    Action, ActionCounts, ActionReason, ActionResult, IdleCounts, LeakCounts, OrphanCounts, ProviderReport,
    ReconcileReport, ReportScope, SweepStatus,
};

/// One provider of a pass, as the machine sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderPlan {
    pub name: String,
    /// Whether it implements `list` (no list: no orphan sweep).
    pub can_list: bool,
    /// Whether it implements `lookup` (read sandboxes by id): the sweep then
    /// looks up what the store's registry names and the listing did not show.
    pub can_lookup: bool,
    /// The owner namespace its sandboxes must carry to be swept.
    pub owner: String,
}

/// What a reconcile pass decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconcileInput {
    pub providers: Vec<ProviderPlan>,
    /// Who runs the pass: the audit log's `host`.
    pub host: String,
    /// Who holds this pass's sweep leases: unique per pass (two passes on
    /// one host must not both think they hold a sweep).
    pub holder: String,
    pub dry_run: bool,
    /// Retry the ledger's due leaks (false: the orphan sweep and idle expiry only,
    /// as the command's `orphans` runs it).
    pub retry_leaks: bool,
    /// Destroys in flight at once (at least 1).
    pub concurrency: u32,
    /// Destroys in flight per provider; `None`: `concurrency`.
    pub per_provider_concurrency: Option<u32>,
    /// Cancel a destroy (or a listing) that has not settled after this long.
    /// Without it a listing still ends: see [`DEFAULT_LIST_TIMEOUT_MS`].
    pub destroy_timeout_ms: Option<u64>,
    /// Start no destroy after this long.
    pub budget_ms: Option<u64>,
    /// Orphans younger than this (by the provider's creation time) are spared.
    pub orphan_grace_ms: u64,
    /// Expire records idle longer than this; `None`: no idle expiry.
    pub max_idle_ms: Option<u64>,
    /// Most ledger entries claimed per provider, and stale records read.
    pub limit: u32,
    /// How long a claim (ledger entries, a sweep) holds.
    pub lease_ms: u64,
    /// Backoff after a failed attempt: `backoff_ms × 2^(failures − 1)`, at most `max_backoff_ms`.
    pub backoff_ms: u64,
    pub max_backoff_ms: u64,
    /// The store keeps a registry of the sandboxes its records named
    /// ([`Effect::RegisteredSandboxes`]): an unlabelled listed sandbox it
    /// names is ours.
    pub registry: bool,
    /// How far back (after its record was last written or deleted) the registry counts.
    pub registry_retention_ms: u64,
    /// The store answers about what a sweep listed ([`Effect::SweepMark`],
    /// [`Effect::ReferencedAmong`], [`Effect::RegisteredAmong`],
    /// [`Effect::LookupCandidates`], [`Effect::LookupChecked`]): the sweep
    /// then reads only what it listed (see `Reconcile::sweep`). Without,
    /// it reads every reference of the provider before listing.
    pub scoped: bool,
    /// The store offers [`Effect::Prune`]: the pass that takes a provider's
    /// sweep prunes its registry rows past `registry_retention_ms` and its
    /// audit rows past `audit_retention_ms`.
    pub prune: bool,
    /// How long the audit log keeps a row.
    pub audit_retention_ms: u64,
    /// Emit a [`Effect::Progress`] event per settled destroy.
    pub progress: bool,
    /// Stopped before it started (an already-aborted signal): start nothing.
    pub stopped: bool,
}

impl ReconcileInput {
    /// A pass over `providers` with the documented defaults.
    /// With every option at the core's default (`options::defaults`, the one place a default lives).
    pub fn new(providers: Vec<ProviderPlan>, host: impl Into<String>, holder: impl Into<String>) -> Self {
        use crate::options::defaults;
        Self {
            providers,
            host: host.into(),
            holder: holder.into(),
            dry_run: false,
            retry_leaks: true,
            concurrency: defaults::CONCURRENCY,
            per_provider_concurrency: None,
            destroy_timeout_ms: None,
            budget_ms: None,
            orphan_grace_ms: defaults::ORPHAN_GRACE_MS,
            max_idle_ms: None,
            limit: defaults::LIMIT,
            lease_ms: defaults::LEASE_MS,
            backoff_ms: defaults::BACKOFF_MS,
            max_backoff_ms: defaults::MAX_BACKOFF_MS,
            registry: false,
            registry_retention_ms: defaults::REGISTRY_RETENTION_MS,
            scoped: false,
            prune: false,
            audit_retention_ms: defaults::AUDIT_RETENTION_MS,
            progress: false,
            stopped: false,
        }
    }
}

/// Where a destroy job came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Leak { entry: HostRef, attempts: u32 },
    Orphan,
}

#[derive(Debug)]
struct Job {
    provider: usize,
    sandbox_id: String,
    key: Option<String>,
    origin: Origin,
    reason: ActionReason,
    /// No destroy may run from here on (the claim's lease less its last tenth).
    lease_ends: Millis,
    /// Index into the report's actions.
    action: usize,
}

/// What an effect in flight is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Stale,
    Expire {
        stale: usize,
    },
    Due {
        provider: usize,
        asked_at: Millis,
    },
    Sweep {
        provider: usize,
        asked_at: Millis,
    },
    List {
        provider: usize,
        deadline: Option<Millis>,
    },
    Lookup {
        provider: usize,
        deadline: Option<Millis>,
    },
    References {
        provider: usize,
    },
    Registered {
        provider: usize,
    },
    /// A scoped sweep's mark, read before it lists.
    Mark {
        provider: usize,
    },
    /// The registry's candidates for a lookup by id.
    Candidates {
        provider: usize,
    },
    /// A batch of the scoped sweep's reads about what it listed.
    Among {
        provider: usize,
        registered: bool,
    },
    /// What a lookup learned, written back (a failure is ignored).
    Checked,
    Destroy {
        job: usize,
        deadline: Option<Millis>,
        lease_cut: bool,
    },
    /// The write after a destroy (resolve, defer, record).
    Write {
        job: usize,
    },
    Audit,
    Release,
    Prune,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Idle,
    Providers,
}

/// The reconcile machine. See the [module docs](self).
#[derive(Debug)]
pub struct Reconcile {
    input: ReconcileInput,
    out: Outbox,
    started_at: Millis,
    stage: Stage,
    pending: HashMap<EffectId, Pending>,
    cancelled: HashSet<EffectId>,
    stale: Vec<StaleRecord>,
    expire_queue: VecDeque<usize>,
    references: Vec<HashSet<String>>,
    /// Per provider, what the store's registry names as ours.
    registered: Vec<HashSet<String>>,
    /// Per provider, the listing while its lookup is out.
    listed: Vec<Vec<ListedSandbox>>,
    /// Per provider, the ids its lookup asked for.
    looked_up: Vec<HashSet<String>>,
    /// Per provider (scoped sweeps): when its sweep began, the store's mark,
    /// the registry's lookup candidates, and the reads still out.
    sweep_started: Vec<Millis>,
    marks: Vec<u64>,
    candidates: Vec<Vec<String>>,
    reads_out: Vec<usize>,
    /// Per provider, every sandbox this pass has an action for (a leak
    /// retry, an idle expiry): the sweep never takes it for an orphan.
    acted_on: Vec<HashSet<String>>,
    sweep_lease_ends: Vec<Option<Millis>>,
    jobs: Vec<Job>,
    queues: Vec<VecDeque<usize>>,
    next_queue: usize,
    running: u32,
    running_per_provider: Vec<u32>,
    audit: Vec<AuditEntry>,
    settled_jobs: u64,
    stopped: bool,
    cut_short: bool,
    store_failure: Option<EffectId>,
    released: bool,
    finished: bool,
    report: ReconcileReport,
}

impl Reconcile {
    pub fn new(input: ReconcileInput, now: Millis) -> Self {
        let providers = input.providers.len();
        let report = ReconcileReport {
            dry_run: input.dry_run,
            host: input.host.clone(),
            started_at: now,
            elapsed_ms: 0,
            cut_short: false,
            idle: IdleCounts { enabled: input.max_idle_ms.is_some(), ..IdleCounts::default() },
            providers: input
                .providers
                .iter()
                .map(|provider| ProviderReport {
                    name: provider.name.clone(),
                    leaks: LeakCounts::default(),
                    orphans: OrphanCounts::with_status(SweepStatus::Skipped),
                })
                .collect(),
            counts: ActionCounts::default(),
            actions: Vec::new(),
            still_leaking: false,
        };
        let mut machine = Self {
            input,
            out: Outbox::default(),
            started_at: now,
            stage: Stage::Idle,
            pending: HashMap::new(),
            cancelled: HashSet::new(),
            stale: Vec::new(),
            expire_queue: VecDeque::new(),
            references: vec![HashSet::new(); providers],
            registered: vec![HashSet::new(); providers],
            listed: vec![Vec::new(); providers],
            looked_up: vec![HashSet::new(); providers],
            sweep_started: vec![now; providers],
            marks: vec![0; providers],
            candidates: vec![Vec::new(); providers],
            reads_out: vec![0; providers],
            acted_on: vec![HashSet::new(); providers],
            sweep_lease_ends: vec![None; providers],
            jobs: Vec::new(),
            queues: vec![VecDeque::new(); providers],
            next_queue: 0,
            running: 0,
            running_per_provider: vec![0; providers],
            audit: Vec::new(),
            settled_jobs: 0,
            stopped: false,
            cut_short: false,
            store_failure: None,
            released: false,
            finished: false,
            report,
        };
        machine.stopped = machine.input.stopped;
        match machine.input.max_idle_ms {
            Some(max_idle) if !machine.stopped => {
                let older_than = now.saturating_sub(max_idle);
                machine.ask(Effect::ListStale { older_than, limit: machine.input.limit }, Pending::Stale);
            }
            _ => machine.start_providers(now),
        }
        machine.advance(now);
        machine
    }

    fn ask(&mut self, effect: Effect, pending: Pending) -> EffectId {
        let id = self.out.push(effect);
        self.pending.insert(id, pending);
        id
    }

    fn may_start(&self, now: Millis) -> bool {
        let over_budget = self.input.budget_ms.is_some_and(|budget| now >= self.started_at.saturating_add(budget));
        !(over_budget || self.stopped || self.store_failure.is_some())
    }

    fn lease_end(&self, asked_at: Millis) -> Millis {
        asked_at.saturating_add(self.input.lease_ms - self.input.lease_ms / 10)
    }

    fn backoff(&self, failures: u32) -> u64 {
        let doublings = failures.saturating_sub(1).min(40);
        self.input.backoff_ms.saturating_mul(1 << doublings).min(self.input.max_backoff_ms)
    }

    fn action(&mut self, reason: ActionReason, provider: usize, sandbox_id: &str, key: Option<String>) -> usize {
        self.acted_on[provider].insert(sandbox_id.to_owned());
        self.report.actions.push(Action {
            reason,
            provider: self.input.providers[provider].name.clone(),
            provider_sandbox_id: sandbox_id.to_owned(),
            key,
            result: ActionResult::Planned,
            error: None,
        });
        self.report.actions.len() - 1
    }

    fn provider_index(&self, name: &str) -> Option<usize> {
        self.input.providers.iter().position(|provider| provider.name == name)
    }

    // ---- stage 1: idle expiry ----

    fn stale_listed(&mut self, records: Vec<StaleRecord>, now: Millis) {
        self.report.idle.stale = records.len() as u64;
        for (index, record) in records.iter().enumerate() {
            let Some(provider) = self.provider_index(&record.provider) else {
                self.report.idle.skipped += 1;
                continue;
            };
            if self.input.dry_run {
                self.report.idle.expired += 1;
                self.action(ActionReason::Idle, provider, &record.provider_sandbox_id, Some(record.key.clone()));
                self.report.counts.planned += 1;
            } else {
                self.expire_queue.push_back(index);
            }
        }
        self.stale = records;
        self.pump_expiry(now);
    }

    fn pump_expiry(&mut self, now: Millis) {
        let in_flight = self.pending.values().filter(|pending| matches!(pending, Pending::Expire { .. })).count();
        let mut room = (self.input.concurrency.max(1) as usize).saturating_sub(in_flight);
        while room > 0 {
            if !self.may_start(now) {
                self.cut_short |= !self.expire_queue.is_empty();
                self.expire_queue.clear();
                break;
            }
            let Some(index) = self.expire_queue.pop_front() else { break };
            let record = &self.stale[index];
            let leak = NewLeak {
                key: record.key.clone(),
                provider: record.provider.clone(),
                provider_sandbox_id: record.provider_sandbox_id.clone(),
                run_id: String::new(),
                error_message: messages::IDLE_EXPIRED.to_owned(),
                failed_at: now,
            };
            let effect = Effect::ExpireIdle { key: record.key.clone(), updated_at: record.updated_at, leak };
            self.ask(effect, Pending::Expire { stale: index });
            room -= 1;
        }
    }

    // ---- stage 2: per provider ----

    fn start_providers(&mut self, now: Millis) {
        self.stage = Stage::Providers;
        if !self.may_start(now) {
            self.cut_short = true;
            return; // every sweep stays `skipped`
        }
        for provider in 0..self.input.providers.len() {
            let name = self.input.providers[provider].name.clone();
            if self.input.retry_leaks {
                let lease_ms = (!self.input.dry_run).then_some(self.input.lease_ms);
                let due = Effect::DueLeaks { provider: name.clone(), limit: self.input.limit, lease_ms, now };
                self.ask(due, Pending::Due { provider, asked_at: now });
            }
            if !self.input.providers[provider].can_list {
                self.unavailable(provider, messages::PROVIDER_CANNOT_LIST.to_owned());
            } else if self.input.dry_run {
                self.sweep(provider, now);
            } else {
                let holder = self.input.holder.clone();
                let claim = Effect::ClaimSweep { provider: name, holder, lease_ms: self.input.lease_ms, now };
                self.ask(claim, Pending::Sweep { provider, asked_at: now });
            }
        }
    }

    fn unavailable(&mut self, provider: usize, error: String) {
        let orphans = &mut self.report.providers[provider].orphans;
        orphans.status = SweepStatus::Unavailable;
        orphans.error = Some(error);
    }

    fn list(&mut self, provider: usize, now: Millis) {
        let deadline = Some(now.saturating_add(self.list_timeout()));
        self.ask(Effect::ListSandboxes { provider: provider as u32, deadline }, Pending::List { provider, deadline });
    }

    /// A listing's deadline: the destroy timeout, or the default one.
    fn list_timeout(&self) -> u64 {
        self.input.destroy_timeout_ms.unwrap_or(DEFAULT_LIST_TIMEOUT_MS)
    }

    fn due_listed(&mut self, provider: usize, asked_at: Millis, claim: EffectId, entries: Vec<DueFields>) {
        self.report.providers[provider].leaks.due = entries.len() as u64;
        let lease_ends = self.lease_end(asked_at);
        for (index, entry) in entries.into_iter().enumerate() {
            let reason = if entry.reason == LeakReason::Idle { ActionReason::Idle } else { ActionReason::LeakRetry };
            let action = self.action(reason, provider, &entry.provider_sandbox_id, Some(entry.key));
            if self.input.dry_run {
                self.report.counts.planned += 1;
                continue;
            }
            let origin =
                Origin::Leak { entry: HostRef { effect: claim, index: index as u32 }, attempts: entry.attempts };
            self.enqueue(Job {
                provider,
                sandbox_id: entry.provider_sandbox_id,
                key: self.report.actions[action].key.clone(),
                origin,
                reason,
                lease_ends,
                action,
            });
        }
    }

    /// The sweep reads the store's references *before* listing: a sandbox
    /// unreferenced then and still listed after is nobody's work in
    /// progress (a destroy always ends before its entry is resolved or its
    /// record deleted). Listing first would let a destroy that finished in
    /// between look like an orphan and be destroyed twice. The references
    /// include what any pass destroyed within the orphan grace (the audit
    /// log): a lagging listing still shows it, and it is nobody's orphan.
    ///
    /// A scoped sweep (a store that answers about listed ids) turns this
    /// around, so that its store work follows what it lists: it takes the
    /// store's deletion mark, lists, and only then asks the store about the
    /// listed ids, in batches. Nothing is lost by listing first: a record or
    /// ledger entry that exists when the store answers is read then; one
    /// deleted since the mark is counted through the registry's deletion
    /// mark (whatever the clocks say); a destroy a pass or a leak retry
    /// confirmed within the grace, through the audit log and the registry's
    /// `resolved_at`, as before. So a sandbox whose record or ledger entry
    /// existed at any moment from the mark to the decision is never an
    /// orphan, and one created meanwhile is seen too (the older order could
    /// not see it).
    fn sweep(&mut self, provider: usize, now: Millis) {
        let provider_name = self.input.providers[provider].name.clone();
        if self.input.scoped {
            self.sweep_started[provider] = now;
            self.ask(Effect::SweepMark { provider: provider_name }, Pending::Mark { provider });
            return;
        }
        let destroyed_since = now.saturating_sub(self.input.orphan_grace_ms);
        let effect = Effect::SandboxReferences { provider: provider_name, destroyed_since };
        self.ask(effect, Pending::References { provider });
    }

    /// Then, with a registry, what it names as ours (read before the listing
    /// for the same reason), then the listing.
    fn references_read(&mut self, provider: usize, references: Vec<String>, now: Millis) {
        self.references[provider] = references.into_iter().collect();
        if self.input.registry {
            let since = now.saturating_sub(self.input.registry_retention_ms);
            let effect = Effect::RegisteredSandboxes { provider: self.input.providers[provider].name.clone(), since };
            self.ask(effect, Pending::Registered { provider });
        } else {
            self.list(provider, now);
            self.prune(provider, now);
        }
    }

    /// A scoped sweep's mark is in: list (and prune alongside, as below).
    fn mark_read(&mut self, provider: usize, mark: u64, now: Millis) {
        self.marks[provider] = mark;
        self.list(provider, now);
        self.prune(provider, now);
    }

    fn registered_read(&mut self, provider: usize, registered: Vec<String>, now: Millis) {
        self.registered[provider] = registered.into_iter().collect();
        self.list(provider, now);
        self.prune(provider, now);
    }

    /// Bounded growth: the pass that took a provider's sweep prunes its
    /// registry rows and audit rows past their retention, once, alongside
    /// the listing. Only after the sweep's store reads: the references
    /// include audit rows of recent destroys (within the orphan grace),
    /// which a short audit retention must not take from this pass's sweep;
    /// the registry read is bounded by the same retention anyway. Alongside
    /// the listing, so no destroy waits for it (the sweep's destroys start
    /// after the listing, the leaks' independently). A failed prune is
    /// ignored, like a failed release: the next holder prunes. Never in a
    /// dry run (it takes no sweep), nor once nothing new may start.
    fn prune(&mut self, provider: usize, now: Millis) {
        if !self.input.prune || self.input.dry_run || self.sweep_lease_ends[provider].is_none() || !self.may_start(now)
        {
            return;
        }
        // Never an audit row the sweep still counts (destroyed within the
        // grace): a scoped sweep reads them after this prune runs.
        let audit_before = now
            .saturating_sub(self.input.audit_retention_ms)
            .min(self.sweep_started[provider].saturating_sub(self.input.orphan_grace_ms));
        let effect = Effect::Prune {
            provider: self.input.providers[provider].name.clone(),
            registry_before: now.saturating_sub(self.input.registry_retention_ms),
            audit_before,
        };
        self.ask(effect, Pending::Prune);
    }

    /// The listing is in. A provider that can read sandboxes by id is then
    /// asked for what the store's registry names and the listing did not
    /// show (nor a record or ledger entry references, nor this pass acted
    /// on): the sandboxes TanStack's providers created without labels whose
    /// records are gone, found without listing the whole account. At most
    /// `limit` a pass, from an offset that moves with the pass's start, so a
    /// long registry is covered over passes at a bounded cost each. Once
    /// nothing new may start, the listing is judged alone.
    fn listing_read(&mut self, provider: usize, listed: Vec<ListedSandbox>, now: Millis) {
        if self.input.scoped {
            if self.input.providers[provider].can_lookup && self.may_start(now) {
                self.listed[provider] = listed;
                let effect = Effect::LookupCandidates {
                    provider: self.input.providers[provider].name.clone(),
                    since: self.sweep_started[provider].saturating_sub(self.input.registry_retention_ms),
                    limit: self.input.limit.max(1),
                };
                self.ask(effect, Pending::Candidates { provider });
            } else {
                self.read_among(provider, listed, now);
            }
            return;
        }
        if self.input.providers[provider].can_lookup && self.may_start(now) {
            let shown: HashSet<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
            let (references, acted_on) = (&self.references[provider], &self.acted_on[provider]);
            let mut ids: Vec<String> = self.registered[provider]
                .iter()
                .filter(|id| !shown.contains(id.as_str()) && !references.contains(*id) && !acted_on.contains(*id))
                .cloned()
                .collect();
            if !ids.is_empty() {
                ids.sort();
                let limit = (self.input.limit as usize).max(1);
                if ids.len() > limit {
                    let offset = (self.started_at / 1000) as usize % ids.len();
                    ids.rotate_left(offset);
                    ids.truncate(limit);
                    ids.sort();
                }
                self.looked_up[provider] = ids.iter().cloned().collect();
                self.listed[provider] = listed;
                let deadline = Some(now.saturating_add(self.list_timeout()));
                let effect = Effect::LookupSandboxes { provider: provider as u32, ids, deadline };
                self.ask(effect, Pending::Lookup { provider, deadline });
                return;
            }
        }
        self.sandboxes_listed(provider, listed, now);
    }

    /// A scoped sweep's lookup candidates are in (the store's page of
    /// registered ids whose record is gone, least recently checked first):
    /// those the listing did not show, nor this pass acted on, are looked
    /// up by id, sorted; the rest were seen anyway and count as checked.
    fn candidates_read(&mut self, provider: usize, candidates: Vec<String>, now: Millis) {
        let listed = std::mem::take(&mut self.listed[provider]);
        let shown: HashSet<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
        let acted_on = &self.acted_on[provider];
        let mut ids: Vec<String> =
            candidates.iter().filter(|id| !shown.contains(id.as_str()) && !acted_on.contains(*id)).cloned().collect();
        ids.sort();
        ids.dedup();
        self.candidates[provider] = candidates;
        if ids.is_empty() || !self.may_start(now) {
            self.lookup_checked(provider, &HashSet::new(), now);
            return self.read_among(provider, listed, now);
        }
        self.looked_up[provider] = ids.iter().cloned().collect();
        self.listed[provider] = listed;
        let deadline = Some(now.saturating_add(self.list_timeout()));
        let effect = Effect::LookupSandboxes { provider: provider as u32, ids, deadline };
        self.ask(effect, Pending::Lookup { provider, deadline });
    }

    /// Writes back what a scoped sweep's lookup learned (never in a dry
    /// run): the asked ids it did not answer are gone; every other
    /// candidate was checked now and goes to the back of the store's queue.
    fn lookup_checked(&mut self, provider: usize, gone: &HashSet<String>, now: Millis) {
        let candidates = std::mem::take(&mut self.candidates[provider]);
        if self.input.dry_run || candidates.is_empty() || !self.may_start(now) {
            return;
        }
        let mut gone: Vec<String> = gone.iter().cloned().collect();
        gone.sort();
        let mut checked: Vec<String> = candidates.into_iter().filter(|id| gone.binary_search(id).is_err()).collect();
        checked.sort();
        checked.dedup();
        let effect = Effect::LookupChecked {
            provider: self.input.providers[provider].name.clone(),
            gone,
            checked,
            now: self.sweep_started[provider],
        };
        self.ask(effect, Pending::Checked);
    }

    /// A scoped sweep asks the store about everything it will judge (the
    /// listing and what the lookup found), in batches of [`AMONG_BATCH`]
    /// ids, all at once: what references them, and what the registry names.
    fn read_among(&mut self, provider: usize, listed: Vec<ListedSandbox>, now: Millis) {
        let mut ids: Vec<String> = listed.iter().map(|sandbox| sandbox.id.clone()).collect();
        ids.sort();
        ids.dedup();
        self.listed[provider] = listed;
        if ids.is_empty() {
            let listed = std::mem::take(&mut self.listed[provider]);
            return self.sandboxes_listed(provider, listed, now);
        }
        let name = self.input.providers[provider].name.clone();
        let started = self.sweep_started[provider];
        let destroyed_since = started.saturating_sub(self.input.orphan_grace_ms);
        let since = started.saturating_sub(self.input.registry_retention_ms);
        for batch in ids.chunks(AMONG_BATCH) {
            let (provider_name, mark) = (name.clone(), self.marks[provider]);
            let referenced =
                Effect::ReferencedAmong { provider: provider_name, ids: batch.to_vec(), destroyed_since, mark };
            self.ask(referenced, Pending::Among { provider, registered: false });
            let registered = Effect::RegisteredAmong { provider: name.clone(), ids: batch.to_vec(), since };
            self.ask(registered, Pending::Among { provider, registered: true });
            self.reads_out[provider] += 2;
        }
    }

    /// One batch of a scoped sweep's reads is in; the last one judges.
    fn among_read(&mut self, provider: usize, registered: bool, ids: Vec<String>, now: Millis) {
        let set = if registered { &mut self.registered[provider] } else { &mut self.references[provider] };
        set.extend(ids);
        self.among_settled(provider, now);
    }

    fn among_settled(&mut self, provider: usize, now: Millis) {
        self.reads_out[provider] -= 1;
        if self.reads_out[provider] > 0 {
            return;
        }
        let listed = std::mem::take(&mut self.listed[provider]);
        if self.report.providers[provider].orphans.status != SweepStatus::Unavailable {
            self.sandboxes_listed(provider, listed, now);
        }
    }

    /// The lookup is in: what it found is judged with the listing. A
    /// sandbox it found without a label is the registry's, so unlabelled
    /// (owner `""`); one labelled for another owner stays theirs; an id it
    /// was not asked for is ignored; one it did not answer is gone.
    fn looked_up(&mut self, provider: usize, found: Vec<ListedSandbox>, now: Millis) {
        let asked = std::mem::take(&mut self.looked_up[provider]);
        let mut listed = std::mem::take(&mut self.listed[provider]);
        let mut gone = asked.clone();
        listed.extend(found.into_iter().filter(|sandbox| asked.contains(&sandbox.id)).map(|mut sandbox| {
            gone.remove(&sandbox.id);
            sandbox.owner.get_or_insert_with(String::new);
            sandbox
        }));
        if self.input.scoped {
            self.lookup_checked(provider, &gone, now);
            return self.read_among(provider, listed, now);
        }
        self.sandboxes_listed(provider, listed, now);
    }

    /// Ours: listed under our owner label, or listed without a label
    /// (owner `""`) and named by the store's registry. A sandbox labelled
    /// for another owner is never ours, whatever the registry says.
    fn is_ours(&self, provider: usize, sandbox: &ListedSandbox) -> bool {
        match sandbox.owner.as_deref() {
            Some(owner) if owner == self.input.providers[provider].owner => true,
            Some("") => self.registered[provider].contains(&sandbox.id),
            _ => false,
        }
    }

    fn sandboxes_listed(&mut self, provider: usize, mut listed: Vec<ListedSandbox>, now: Millis) {
        // A listing is not a set (offset pages repeat an item when the fleet
        // changes between pages): each sandbox counts, and is acted on, once.
        let mut seen = HashSet::new();
        listed.retain(|sandbox| seen.insert(sandbox.id.clone()));
        // Fail closed: one sandbox we cannot judge spares them all. A sandbox
        // the sweep never destroys anyway (one the vendor is already
        // deleting, one a record references, one this pass acted on) needs
        // no judging, so what else it lacks does not matter: a listing taken
        // while this pass destroys a sandbox may show it half-deleted (a
        // LocalProvider directory whose owner file is already gone).
        let referenced = std::mem::take(&mut self.references[provider]);
        let acted_on = &self.acted_on[provider];
        let spared = |sandbox: &ListedSandbox| {
            sandbox.deleting || referenced.contains(&sandbox.id) || acted_on.contains(&sandbox.id)
        };
        let unknown = listed.iter().filter(|sandbox| !spared(sandbox)).find_map(|sandbox| {
            if sandbox.created_at.is_none() {
                Some(messages::unknown_created_at(&sandbox.id))
            } else if sandbox.owner.is_none() {
                Some(messages::unknown_owner(&sandbox.id))
            } else {
                None
            }
        });
        self.report.providers[provider].orphans.listed = listed.len() as u64;
        if let Some(error) = unknown {
            return self.unavailable(provider, error);
        }
        let grace = self.input.orphan_grace_ms;
        let lease_ends = self.sweep_lease_ends[provider].unwrap_or(Millis::MAX);
        self.report.providers[provider].orphans.status = SweepStatus::Swept;
        for sandbox in listed {
            // An unknown owner got this far only as a spared sandbox: counted
            // as what spares it, not as another owner's.
            let foreign = sandbox.owner.is_some() && !self.is_ours(provider, &sandbox);
            let orphans = &mut self.report.providers[provider].orphans;
            if foreign {
                orphans.foreign += 1;
            } else if sandbox.deleting {
                orphans.deleting += 1;
            } else if referenced.contains(&sandbox.id) || self.acted_on[provider].contains(&sandbox.id) {
                orphans.referenced += 1;
            } else if sandbox.created_at.unwrap_or(Millis::MAX).saturating_add(grace) > now {
                orphans.young += 1;
            } else {
                orphans.found += 1;
                let action = self.action(ActionReason::Orphan, provider, &sandbox.id, sandbox.key.clone());
                if self.input.dry_run {
                    self.report.counts.planned += 1;
                    continue;
                }
                let job = Job {
                    provider,
                    sandbox_id: sandbox.id,
                    key: sandbox.key,
                    origin: Origin::Orphan,
                    reason: ActionReason::Orphan,
                    lease_ends,
                    action,
                };
                self.enqueue(job);
            }
        }
    }

    // ---- destroys ----

    fn enqueue(&mut self, job: Job) {
        let provider = job.provider;
        self.jobs.push(job);
        self.queues[provider].push_back(self.jobs.len() - 1);
    }

    /// Starts queued destroys while slots are free, round-robin over providers.
    fn pump_jobs(&mut self, now: Millis) {
        if !self.may_start(now) {
            for provider in 0..self.queues.len() {
                while let Some(job) = self.queues[provider].pop_front() {
                    self.cut_short = true;
                    self.job_deferred(job, now);
                }
            }
            return;
        }
        let per_provider = self.input.per_provider_concurrency.unwrap_or(self.input.concurrency).max(1);
        let providers = self.queues.len();
        let mut idle_rounds = 0;
        while self.running < self.input.concurrency.max(1) && idle_rounds < providers {
            let provider = self.next_queue;
            self.next_queue = (self.next_queue + 1) % providers.max(1);
            if self.running_per_provider[provider] >= per_provider {
                idle_rounds += 1;
                continue;
            }
            let Some(job) = self.queues[provider].pop_front() else {
                idle_rounds += 1;
                continue;
            };
            idle_rounds = 0;
            if now >= self.jobs[job].lease_ends {
                // The claim may be another host's by now: leave the sandbox to it.
                self.job_deferred(job, now);
                continue;
            }
            let timeout_deadline = self.input.destroy_timeout_ms.map(|timeout| now.saturating_add(timeout));
            let lease_ends = self.jobs[job].lease_ends;
            let lease_cut = timeout_deadline.is_none_or(|at| at > lease_ends) && lease_ends != Millis::MAX;
            let deadline = match timeout_deadline {
                Some(at) => Some(at.min(lease_ends)),
                None => (lease_ends != Millis::MAX).then_some(lease_ends),
            };
            let effect = Effect::Destroy {
                provider: provider as u32,
                provider_sandbox_id: self.jobs[job].sandbox_id.clone(),
                deadline,
            };
            self.ask(effect, Pending::Destroy { job, deadline, lease_cut });
            self.running += 1;
            self.running_per_provider[provider] += 1;
        }
    }

    fn destroy_ended(&mut self, job: usize) {
        self.running -= 1;
        self.running_per_provider[self.jobs[job].provider] -= 1;
    }

    fn destroyed(&mut self, job: usize, now: Millis) {
        if let Origin::Leak { entry, .. } = self.jobs[job].origin {
            self.ask(Effect::ResolveLeak { entry }, Pending::Write { job });
        }
        self.audit_row(job, AuditResult::Destroyed, None, now);
        self.job_result(job, ActionResult::Destroyed, None, now);
    }

    fn destroy_failed(&mut self, job: usize, message: String, timed_out: bool, now: Millis) {
        match self.jobs[job].origin {
            Origin::Leak { entry, attempts } => {
                let next_attempt_at = now.saturating_add(self.backoff(attempts.saturating_add(1)));
                let effect = Effect::DeferLeak { entry, message: message.clone(), failed_at: now, next_attempt_at };
                self.ask(effect, Pending::Write { job });
            }
            Origin::Orphan => {
                let sandbox = &self.jobs[job];
                let leak = NewLeak {
                    key: sandbox.key.clone().unwrap_or_else(|| sandbox.sandbox_id.clone()),
                    provider: self.input.providers[sandbox.provider].name.clone(),
                    provider_sandbox_id: sandbox.sandbox_id.clone(),
                    run_id: String::new(),
                    error_message: message.clone(),
                    failed_at: now,
                };
                let next_attempt_at = now.saturating_add(self.backoff(1));
                let effect = Effect::RecordLeak { leak, reason: LeakReason::Orphan, next_attempt_at };
                self.ask(effect, Pending::Write { job });
            }
        }
        let result = if timed_out { AuditResult::Timeout } else { AuditResult::Failed };
        self.audit_row(job, result, Some(message.clone()), now);
        self.job_result(job, ActionResult::Failed, Some(message), now);
    }

    fn job_deferred(&mut self, job: usize, now: Millis) {
        self.job_result(job, ActionResult::Deferred, None, now);
    }

    fn job_result(&mut self, job: usize, result: ActionResult, error: Option<String>, now: Millis) {
        let Job { provider, action, origin, .. } = self.jobs[job];
        let action = &mut self.report.actions[action];
        action.result = result;
        action.error = error;
        let counts = &mut self.report.counts;
        let (leaks, orphans) = {
            let report = &mut self.report.providers[provider];
            (&mut report.leaks, &mut report.orphans)
        };
        let (count, provider_count) = match (result, origin) {
            (ActionResult::Destroyed, Origin::Orphan) => (&mut counts.destroyed, &mut orphans.destroyed),
            (ActionResult::Destroyed, _) => (&mut counts.destroyed, &mut leaks.destroyed),
            (ActionResult::Failed, Origin::Orphan) => (&mut counts.failed, &mut orphans.failed),
            (ActionResult::Failed, _) => (&mut counts.failed, &mut leaks.failed),
            (_, Origin::Orphan) => (&mut counts.deferred, &mut orphans.deferred),
            (_, _) => (&mut counts.deferred, &mut leaks.deferred),
        };
        *count += 1;
        *provider_count += 1;
        self.settled_jobs += 1;
        if self.input.progress {
            let action = &self.report.actions[self.jobs[job].action];
            let event = ProgressEvent::Action(ActionProgress {
                done: self.settled_jobs,
                total: self.jobs.len() as u64,
                reason: action.reason,
                provider: action.provider.clone(),
                provider_sandbox_id: action.provider_sandbox_id.clone(),
                result: action.result,
                elapsed_ms: now.saturating_sub(self.started_at),
            });
            self.out.push(Effect::Progress(event.to_json()));
        }
    }

    fn audit_row(&mut self, job: usize, result: AuditResult, error: Option<String>, now: Millis) {
        let job = &self.jobs[job];
        self.audit.push(AuditEntry {
            at: now,
            host: self.input.host.clone(),
            provider: self.input.providers[job.provider].name.clone(),
            provider_sandbox_id: job.sandbox_id.clone(),
            key: job.key.clone(),
            reason: job.reason.as_str().to_owned(),
            result: result.as_str().to_owned(),
            error,
        });
    }

    /// The store refused a leak's resolve or deferral: another pass took
    /// its claim after the lease ran out (this write came late), so the
    /// entry is that pass's now. Counted and audited, never hidden.
    fn lease_lost(&mut self, job: usize, now: Millis) {
        self.report.providers[self.jobs[job].provider].leaks.lease_lost += 1;
        self.audit_row(job, AuditResult::LeaseLost, Some(messages::LEASE_LOST.to_owned()), now);
    }

    /// Writes audit rows in groups (one transaction each), and the rest
    /// whenever no destroy is running.
    fn flush_audit(&mut self) {
        if self.audit.len() >= AUDIT_BATCH || (self.running == 0 && !self.audit.is_empty()) {
            let rows = std::mem::take(&mut self.audit);
            self.ask(Effect::AppendAudit(rows), Pending::Audit);
        }
    }

    fn store_failed(&mut self, id: EffectId) {
        self.store_failure.get_or_insert(id);
    }

    /// After every step: start what may start, write what is due, end when done.
    fn advance(&mut self, now: Millis) {
        if self.stage == Stage::Idle {
            self.pump_expiry(now);
            let expiring =
                self.pending.values().any(|pending| matches!(pending, Pending::Stale | Pending::Expire { .. }));
            if !expiring {
                self.start_providers(now);
            }
        }
        if self.stage == Stage::Providers {
            self.pump_jobs(now);
        }
        self.flush_audit();
        if !self.pending.is_empty() || self.stage != Stage::Providers || self.finished {
            return;
        }
        if !self.released && !self.input.dry_run {
            self.released = true;
            for provider in 0..self.input.providers.len() {
                if self.sweep_lease_ends[provider].is_some() {
                    let release = Effect::ReleaseSweep {
                        provider: self.input.providers[provider].name.clone(),
                        holder: self.input.holder.clone(),
                    };
                    self.ask(release, Pending::Release);
                }
            }
            if !self.pending.is_empty() {
                return;
            }
        }
        self.report.elapsed_ms = now.saturating_sub(self.started_at);
        self.report.cut_short = self.cut_short;
        self.report.still_leaking = self.report.still_leaking();
        let ending = match self.store_failure {
            Some(id) => Ending::HostError(id),
            None => Ending::Resolved(Output::Reconcile(Box::new(self.report.clone()))),
        };
        self.out.finish(ending);
        self.finished = true;
    }
}

/// Audit rows written per store transaction.
const AUDIT_BATCH: usize = 64;

/// Listed ids a scoped sweep asks the store about per call: bounded
/// statements (SQLite binds at most 32,766 parameters) and answers.
pub const AMONG_BATCH: usize = 500;

/// How long a listing may take when no `destroyTimeoutMs` is given: a pass
/// must end even when a vendor's listing hangs (then its sweep is
/// `unavailable`, nothing swept). Two minutes lists thousands of pages.
pub const DEFAULT_LIST_TIMEOUT_MS: u64 = 120_000;

impl Flow for Reconcile {
    fn poll_effect(&mut self) -> Option<(EffectId, Effect)> {
        self.out.poll_effect()
    }

    fn complete(&mut self, id: EffectId, completion: Completion, now: Millis) -> Result<(), Misuse> {
        let Some(pending) = self.pending.remove(&id) else {
            return if self.cancelled.remove(&id) { Ok(()) } else { Err(Misuse(messages::MISUSE_UNKNOWN_EFFECT)) };
        };
        let wrong = || Err(Misuse(messages::MISUSE_WRONG_COMPLETION));
        match (pending, completion) {
            (Pending::Stale, Completion::Stale(records)) => self.stale_listed(records, now),
            (Pending::Expire { .. }, Completion::Flag(true)) => self.report.idle.expired += 1,
            (Pending::Expire { stale }, Completion::Flag(false)) => {
                self.report.idle.touched += 1;
                self.report.counts.touched += 1;
                let record = self.stale[stale].clone();
                if let Some(provider) = self.provider_index(&record.provider) {
                    let action =
                        self.action(ActionReason::Idle, provider, &record.provider_sandbox_id, Some(record.key));
                    self.report.actions[action].result = ActionResult::Touched;
                }
            }
            (Pending::Due { provider, asked_at }, Completion::Due(entries)) => {
                self.due_listed(provider, asked_at, id, entries);
            }
            (Pending::Sweep { provider, asked_at }, Completion::Flag(true)) => {
                self.sweep_lease_ends[provider] = Some(self.lease_end(asked_at));
                self.sweep(provider, now);
            }
            (Pending::Sweep { provider, .. }, Completion::Flag(false)) => {
                self.report.providers[provider].orphans.status = SweepStatus::HeldElsewhere;
            }
            (Pending::List { provider, .. }, Completion::Sandboxes(sandboxes)) => {
                self.listing_read(provider, sandboxes, now);
            }
            (Pending::Lookup { provider, .. }, Completion::Sandboxes(found)) => {
                self.looked_up(provider, found, now);
            }
            (Pending::References { provider }, Completion::Ids(ids)) => self.references_read(provider, ids, now),
            (Pending::Mark { provider }, Completion::Mark(mark)) => self.mark_read(provider, mark, now),
            (Pending::Candidates { provider }, Completion::Ids(ids)) => self.candidates_read(provider, ids, now),
            (Pending::Among { provider, registered }, Completion::Ids(ids)) => {
                self.among_read(provider, registered, ids, now);
            }
            (Pending::Among { provider, .. }, Completion::Failed { message }) => {
                if self.report.providers[provider].orphans.status != SweepStatus::Unavailable {
                    self.unavailable(provider, message);
                }
                self.among_settled(provider, now);
            }
            (Pending::Registered { provider }, Completion::Ids(ids)) => self.registered_read(provider, ids, now),
            // Reads that feed the sweep fail closed: that provider destroys nothing.
            (
                Pending::Sweep { provider, .. }
                | Pending::List { provider, .. }
                | Pending::Lookup { provider, .. }
                | Pending::References { provider }
                | Pending::Registered { provider }
                | Pending::Mark { provider }
                | Pending::Candidates { provider },
                Completion::Failed { message },
            ) => {
                self.unavailable(provider, message);
            }
            (Pending::Destroy { job, .. }, Completion::Ok) => {
                self.destroy_ended(job);
                self.destroyed(job, now);
            }
            (Pending::Destroy { job, .. }, Completion::Failed { message }) => {
                self.destroy_ended(job);
                self.destroy_failed(job, message, false, now);
            }
            (
                Pending::Write { .. } | Pending::Audit | Pending::Release | Pending::Prune | Pending::Checked,
                Completion::Ok,
            ) => {}
            (Pending::Write { .. }, Completion::Flag(true)) => {}
            (Pending::Write { job }, Completion::Flag(false)) => self.lease_lost(job, now),
            // A lapsed sweep lease expires by itself; what a failed prune
            // left, the next sweep's holder prunes.
            (Pending::Release | Pending::Prune | Pending::Checked, Completion::Failed { .. }) => {}
            (
                Pending::Stale | Pending::Expire { .. } | Pending::Due { .. } | Pending::Write { .. } | Pending::Audit,
                Completion::Failed { .. },
            ) => self.store_failed(id),
            (pending, _) => {
                self.pending.insert(id, pending);
                return wrong();
            }
        }
        self.advance(now);
        Ok(())
    }

    fn poll_timeout(&self) -> Option<Millis> {
        self.pending
            .values()
            .filter_map(|pending| match pending {
                Pending::Destroy { deadline, .. }
                | Pending::List { deadline, .. }
                | Pending::Lookup { deadline, .. } => *deadline,
                _ => None,
            })
            .min()
    }

    fn handle_timeout(&mut self, now: Millis) {
        let mut due: Vec<(EffectId, Pending)> = self
            .pending
            .iter()
            .filter(|(_, pending)| match pending {
                Pending::Destroy { deadline, .. }
                | Pending::List { deadline, .. }
                | Pending::Lookup { deadline, .. } => deadline.is_some_and(|at| at <= now),
                _ => false,
            })
            .map(|(id, pending)| (*id, *pending))
            .collect();
        due.sort_by_key(|(id, _)| *id);
        for (id, pending) in due {
            self.pending.remove(&id);
            self.cancelled.insert(id);
            self.out.push(Effect::Cancel { target: id });
            let timeout = self.input.destroy_timeout_ms.unwrap_or_default();
            match pending {
                Pending::List { provider, .. } => {
                    let message =
                        messages::list_timeout_message(&self.input.providers[provider].name, self.list_timeout());
                    self.unavailable(provider, message);
                }
                Pending::Lookup { provider, .. } => {
                    let message =
                        messages::lookup_timeout_message(&self.input.providers[provider].name, self.list_timeout());
                    self.unavailable(provider, message);
                }
                Pending::Destroy { job, lease_cut, .. } => {
                    self.destroy_ended(job);
                    if lease_cut {
                        // The claim lapsed mid-destroy: the sandbox is its next holder's.
                        self.job_deferred(job, now);
                    } else {
                        let message = messages::destroy_timeout_message(&self.jobs[job].sandbox_id, timeout);
                        self.destroy_failed(job, message, true, now);
                    }
                }
                _ => {}
            }
        }
        self.advance(now);
    }

    fn poll_done(&mut self) -> Option<Ending> {
        self.out.poll_done()
    }

    fn stop(&mut self, now: Millis) {
        self.stopped = true;
        self.advance(now);
    }
}
