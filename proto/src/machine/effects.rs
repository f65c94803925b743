//! The protocol between a sans-IO flow machine and the driver that runs it.
//!
//! A machine (one per flow, in [`crate::machine`]) never performs I/O and never
//! reads a clock. A driver loops:
//!
//! ```text
//!   start the machine with `now`
//!   loop {
//!       while let Some((id, effect)) = machine.poll_effect() {
//!           start it (store / provider call, keep host values by `id`);
//!           a `Log` or `Cancel` runs at once, in order, and is only
//!           completed if it failed (then the rest of the batch is not started:
//!           a machine that composes runs emits the other runs' part again)
//!       }
//!       if let Some(ending) = machine.poll_done() { return ending }
//!       wait for the first of: an effect settling → machine.complete(id, result, now)
//!                              the machine's poll_timeout() → machine.handle_timeout(now)
//!   }
//! ```
//!
//! Host values (the error a destroy threw, the records a store returned, the
//! logger) never cross into the machine: effects that need them name them by
//! effect id ([`MetaValue::HostError`], [`HostRef`]), and a completion carries
//! only what the machine decides on.

pub use crate::contract::errors::{Misuse, SandboxReclaimFailed};
use crate::model::fleet::{AuditEntry, LeakReason, ListedSandbox};
use crate::model::ledger::{NewLeak, RetrySummary};
use crate::model::ReclaimOutcome;

/// Names one effect of one flow run; ids start at 1 and never repeat.
pub type EffectId = u32;

/// Epoch milliseconds from the driver's clock (a virtual clock in vectors).
pub type Millis = u64;

/// What a machine asks its driver to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// The store's `get(key)`; complete with [`Completion::Instance`].
    GetInstance { key: String },
    /// The store's `delete(key)`; complete with [`Completion::Ok`].
    DeleteInstance { key: String },
    /// The ledger store's `deleteRecordingLeak(key, leak)`: delete the record
    /// and record the leak in one transaction; complete with [`Completion::Ok`].
    DeleteRecordingLeak { key: String, leak: NewLeak },
    /// Provider number `provider`'s `destroy({ id })` (providers are numbered
    /// in the order the flow was given them); complete with [`Completion::Ok`].
    /// With a `deadline`, the host gets a cancellation handle (an
    /// `AbortSignal`, a cancellable task) that a later [`Effect::Cancel`] fires.
    Destroy { provider: u32, provider_sandbox_id: String, deadline: Option<Millis> },
    /// Provider number `provider`'s `list()`; complete with
    /// [`Completion::Sandboxes`]. Cancellable like a destroy.
    ListSandboxes { provider: u32, deadline: Option<Millis> },
    /// Provider number `provider`'s `lookup({ ids })` (Python `lookup(ids)`):
    /// each registered sandbox whose record is gone and the listing did not
    /// show, read by id (the vendor's get); complete with
    /// [`Completion::Sandboxes`] (an id it does not answer is gone).
    /// Cancellable like a listing.
    LookupSandboxes { provider: u32, ids: Vec<String>, deadline: Option<Millis> },
    /// The store's `sandboxReferences(provider, destroyedSince)`: what the
    /// store's records and ledger entries reference, and what a pass (on any
    /// host, by the audit log) destroyed at or after `destroyed_since`;
    /// complete with [`Completion::Ids`].
    SandboxReferences { provider: String, destroyed_since: Millis },
    /// The store's `registeredSandboxes(provider, since)`: the ids of
    /// `provider` its registry names (every sandbox an instance record named,
    /// whose record still exists or was last written or deleted at or after
    /// `since`); complete with [`Completion::Ids`].
    RegisteredSandboxes { provider: String, since: Millis },
    /// The store's `sweepMark(provider)`: a mark of the store's record
    /// deletions, taken before the sweep lists (a store that answers about
    /// listed ids, [`crate::machine::reconcile::ReconcileInput::scoped`]);
    /// complete with [`Completion::Mark`].
    SweepMark { provider: String },
    /// The store's `referencedAmong(provider, ids, destroyedSince, mark)`:
    /// those of `ids` a record or leak entry references now, that a pass
    /// destroyed or a leak retry resolved at or after `destroyed_since`, or
    /// whose record was deleted after `mark`; complete with [`Completion::Ids`].
    ReferencedAmong { provider: String, ids: Vec<String>, destroyed_since: Millis, mark: u64 },
    /// The store's `registeredAmong(provider, ids, since)`: those of `ids`
    /// its registry names (a record names it, or one last written or deleted
    /// at or after `since` did); complete with [`Completion::Ids`].
    RegisteredAmong { provider: String, ids: Vec<String>, since: Millis },
    /// The store's `lookupCandidates(provider, since, limit)`: at most
    /// `limit` registered ids whose record is gone and that no lookup
    /// answered gone yet, least recently checked first; complete with
    /// [`Completion::Ids`].
    LookupCandidates { provider: String, since: Millis, limit: u32 },
    /// The store's `lookupChecked(provider, gone, checked, now)`: what a
    /// lookup learned (`gone`: resolved for good; `checked`: to the back of
    /// the queue); complete with [`Completion::Ok`] (a failure is ignored).
    LookupChecked { provider: String, gone: Vec<String>, checked: Vec<String>, now: Millis },
    /// The store's `listStale(olderThan, limit)`; complete with [`Completion::Stale`].
    ListStale { older_than: Millis, limit: u32 },
    /// The store's `expireIdle(key, updatedAt, leak)`; complete with [`Completion::Flag`].
    ExpireIdle { key: String, updated_at: u64, leak: NewLeak },
    /// The store's `recordLeak(leak, reason, nextAttemptAt)`; complete with [`Completion::Ok`].
    RecordLeak { leak: NewLeak, reason: LeakReason, next_attempt_at: Millis },
    /// The store's `dueLeaks(provider, limit, leaseMs, now)` (no lease: a dry
    /// listing); complete with [`Completion::Due`]. The driver keeps the entries.
    DueLeaks { provider: String, limit: u32, lease_ms: Option<u64>, now: Millis },
    /// The store's `deferLeak(entry, message, failedAt, nextAttemptAt)`.
    DeferLeak { entry: HostRef, message: String, failed_at: Millis, next_attempt_at: Millis },
    /// The store's `claimSweep(provider, holder, leaseMs, now)`; complete with [`Completion::Flag`].
    ClaimSweep { provider: String, holder: String, lease_ms: u64, now: Millis },
    /// The store's `releaseSweep(provider, holder)`.
    ReleaseSweep { provider: String, holder: String },
    /// The store's `appendAudit(entries)`.
    AppendAudit(Vec<AuditEntry>),
    /// The store's optional `prune(provider, registryBefore, auditBefore)`:
    /// delete `provider`'s registry rows last seen before `registry_before`
    /// and its audit rows from before `audit_before`; complete with
    /// [`Completion::Ok`] (a failure is ignored: the next holder prunes).
    Prune { provider: String, registry_before: Millis, audit_before: Millis },
    /// Call the progress callback now with this JSON event; never completed
    /// (a throwing callback is ignored: progress never changes a pass).
    Progress(String),
    /// The ledger store's `claimLeaks(provider, limit, leaseMs)`; complete with
    /// [`Completion::Leaks`]. The driver keeps the entries it got.
    ClaimLeaks { provider: String, limit: u32, lease_ms: u64 },
    /// The ledger store's `resolveLeak(entry)`; complete with [`Completion::Ok`].
    ResolveLeak { entry: HostRef },
    /// The ledger store's `recordRetryFailure(entry, message, failedAt)`.
    RecordRetryFailure { entry: HostRef, message: String, failed_at: Millis },
    /// Call the logger now; completed only if it threw.
    Log(LogLine),
    /// Abort the effect `target` now (its deadline passed) and ignore its
    /// late settle; never completed.
    Cancel { target: EffectId },
}

impl Effect {
    /// Whether the driver runs it synchronously, in order, and completes it
    /// only when it failed.
    pub fn is_immediate(&self) -> bool {
        matches!(self, Self::Log(_) | Self::Cancel { .. } | Self::Progress(_))
    }
}

/// A host value the driver keeps: item `index` of what effect `effect`
/// answered (an entry of a `ClaimLeaks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostRef {
    pub effect: EffectId,
    pub index: u32,
}

/// How an effect settled, as far as the machine needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// Returned or resolved (any value the machine does not read).
    Ok,
    /// `get` answered: the two fields the rules read, or none.
    Instance(Option<InstanceFields>),
    /// `claimLeaks` answered: the provider sandbox id of each entry, in order.
    Leaks(Vec<String>),
    /// Threw or rejected. `message` is the failure's text (a destroy's goes
    /// to the leak ledger, any goes into fleet reports); the error itself
    /// stays with the driver under the effect's id.
    Failed { message: String },
    /// `list()` answered.
    Sandboxes(Vec<ListedSandbox>),
    /// `sandboxReferences` / `registeredSandboxes` (and their scoped forms,
    /// `lookupCandidates`) answered.
    Ids(Vec<String>),
    /// `sweepMark` answered.
    Mark(u64),
    /// `listStale` answered.
    Stale(Vec<StaleRecord>),
    /// `dueLeaks` answered, in order. The driver keeps the entries.
    Due(Vec<DueFields>),
    /// `expireIdle` / `claimSweep` answered.
    Flag(bool),
}

/// The fields of a stale instance record idle expiry decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleRecord {
    pub key: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub updated_at: u64,
}

/// The fields of a due leak entry a pass decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueFields {
    pub provider_sandbox_id: String,
    pub key: String,
    pub attempts: u32,
    pub reason: LeakReason,
}

/// The instance record fields a reclaim decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceFields {
    pub provider: String,
    pub provider_sandbox_id: String,
}

/// How loudly a line is logged. The names are TanStack's `InternalLogger` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogLevel {
    /// Something is wrong but the flow goes on.
    Warn,
    /// The flow failed its job: a sandbox may be leaking.
    Errors,
    /// Routine sandbox lifecycle news.
    Sandbox,
}

impl LogLevel {
    /// Every level, in the order bindings check a logger's methods.
    pub const ALL: [LogLevel; 3] = [Self::Warn, Self::Errors, Self::Sandbox];

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
    /// The very value effect `id` threw (the driver keeps it).
    HostError(EffectId),
    /// A `SandboxDestroyTimeoutError` for this destroy, which the driver
    /// builds in its host's error class.
    DestroyTimeout { provider_sandbox_id: String, timeout_ms: u64 },
}

/// One log line: level, message and meta entries in the reference's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub level: LogLevel,
    pub message: &'static str,
    pub meta: Vec<(&'static str, MetaValue)>,
}

/// What a finished flow resolves with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Nothing (`sandboxReclaimer`'s `undefined` / `None`).
    Nothing,
    /// A reclaim's outcome.
    Outcome(ReclaimOutcome),
    /// A leak retry's summary.
    Retry(RetrySummary),
    /// A fleet reclaim's report.
    FleetReclaim(Box<crate::report::FleetReclaimReport>),
    /// A reconcile pass's report.
    Reconcile(Box<crate::report::ReconcileReport>),
}

/// How a flow ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// Resolve with this.
    Resolved(Output),
    /// Reject with the very value effect `id` threw (a failing store call,
    /// a throwing logger): the reference lets those propagate unchanged.
    HostError(EffectId),
    /// Reject with `SandboxReclaimFailedError`.
    ReclaimFailed(SandboxReclaimFailed),
}

/// A sans-IO flow: effects out, completions and time in.
pub trait Flow {
    /// The next effect to start, or `None` until something completes or times out.
    fn poll_effect(&mut self) -> Option<(EffectId, Effect)>;
    /// Feeds how effect `id` settled. A settle the machine no longer waits for
    /// (a destroy it cancelled) is ignored.
    fn complete(&mut self, id: EffectId, completion: Completion, now: Millis) -> Result<(), Misuse>;
    /// When the machine next needs [`Flow::handle_timeout`], if ever.
    fn poll_timeout(&self) -> Option<Millis>;
    /// Tells the machine the time is now `now` (at or after its timeout).
    fn handle_timeout(&mut self, now: Millis);
    /// The ending, once the effects before it have been polled; taken once.
    fn poll_done(&mut self) -> Option<Ending>;
    /// The caller cancelled (an `AbortSignal`, a task cancel, a stop handle):
    /// start nothing new, let what runs settle or reach its deadline. Flows
    /// that cannot stop part-way ignore it.
    fn stop(&mut self, now: Millis) {
        let _ = now;
    }
}
