//! The objects a host hands a flow, as data: each member a flow reads or
//! calls, its parameters and its answer, in each host's spelling:
//!
//! - the instance store every reclaim works on ([`INSTANCE_STORE`], TanStack's
//!   `SandboxStore`) and its leak-recording delete ([`LEDGER_INSTANCE_STORE`]);
//! - the provider ([`SANDBOX_PROVIDER`]) and what an orphan sweep also reads of it
//!   ([`FLEET_PROVIDER`]);
//! - the logger ([`LOGGER`], TanStack's `InternalLogger`);
//! - the fleet store of a reconcile pass ([`FLEET_STORE`]) and the leak
//!   ledger a leak retry works on ([`RETRY_LEDGER`]).
//!
//! The traits of `contract` are the Rust side of this contract; a JavaScript
//! or Python object is called through the effect table
//! (`machine::effect_table`), and these tables are what its declarations say:
//! `scripts/gen_declarations.py` writes the TypeScript interfaces
//! (`index.d.ts`) and the Python protocols (`_protocols.py`) from them, and a
//! test in `machine::effect_table` checks every row against the effect that
//! calls it (method names, operand count and kinds) and the logger's against
//! the log levels.
//!
//! Write one member per `method(...)` or `property(...)` call (one two tables
//! list is a named `const`), its doc a plain string literal: the generator
//! reads them with a pattern.

/// What one parameter or answer is, for a host's declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    Text,
    /// A whole number (epoch or lease milliseconds, a count).
    Number,
    /// A claim's lease: milliseconds in Node, seconds (a float) in Python.
    Lease,
    /// A number, or absent (Node `undefined`, Python `None`).
    MaybeNumber,
    /// A bool.
    Flag,
    /// A new leak (`SandboxLeak` / `NewLeak`).
    NewLeak,
    /// A ledger entry as the store handed it out (`SandboxLeakEntry` / `LeakEntry`).
    Entry,
    /// A leak reason.
    Reason,
    /// Audit rows (`AuditEntry[]`).
    AuditRows,
    /// Nothing (the answer is not read).
    Nothing,
    /// A fenced write's answer: `false` when the claim no longer held.
    Held,
    /// `providerSandboxId`s.
    Ids,
    /// Instance records.
    Records,
    /// Due entries (`DueLeakEntry[]` / `DueLeak`s).
    DueEntries,
    /// Claimed entries (`SandboxLeakEntry[]` / `LeakEntry`s).
    Entries,
    /// An instance record (`SandboxInstanceRecord`).
    Record,
    /// What a store's `get` answers: a record or none (Python also takes its wire-form mapping).
    Instance,
    /// What `destroy` is handed: Node's `{ id, signal? }` (`ReclaimDestroyInput`), Python's sandbox id.
    Destroy,
    /// What `list` is handed: Node's `{ signal? }` (`FleetListInput`), nothing in Python.
    ListInput,
    /// What `lookup` is handed: Node's `{ ids, signal? }` (`FleetLookupInput`), Python's list of ids.
    LookupInput,
    /// What `list` answers: the provider's sandboxes (`ListedSandbox`es).
    Listed,
    /// A log line's meta: a fresh object of the reference's camelCase keys.
    Meta,
    /// Anything: the answer is awaited when it can be, then ignored (a throw is the failure).
    Anything,
    /// Nothing, and never awaited: the call is synchronous (the logger's).
    Unread,
}

/// One parameter: its name in each host's contract and its kind.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub node: &'static str,
    pub python: &'static str,
    pub kind: Kind,
}

/// One member of a host object: a method, or (with `property`) a property
/// whose kind is `answer`.
#[derive(Debug, Clone, Copy)]
pub struct Method {
    pub node: &'static str,
    pub python: &'static str,
    pub params: &'static [Param],
    pub answer: Kind,
    /// A property read once, not a method.
    pub property: bool,
    /// A store may leave it out (the pass then does without).
    pub optional: bool,
    /// What it does (both hosts' declarations say it).
    pub doc: &'static str,
}

const fn param(node: &'static str, python: &'static str, kind: Kind) -> Param {
    Param { node, python, kind }
}

const fn method(
    node: &'static str,
    python: &'static str,
    params: &'static [Param],
    answer: Kind,
    optional: bool,
    doc: &'static str,
) -> Method {
    Method { node, python, params, answer, property: false, optional, doc }
}

const fn property(node: &'static str, python: &'static str, kind: Kind, optional: bool, doc: &'static str) -> Method {
    Method { node, python, params: &[], answer: kind, property: true, optional, doc }
}

use Kind::*;

const PROVIDER: Param = param("provider", "provider", Text);
const KEY: Param = param("key", "key", Text);
const LIMIT: Param = param("limit", "limit", Number);
const NOW: Param = param("now", "now", Number);
const HOLDER: Param = param("holder", "holder", Text);
const LEASE: Param = param("leaseMs", "lease_ms", Number);
const ENTRY: Param = param("entry", "entry", Entry);
const LEAK: Param = param("leak", "leak", NewLeak);
const MESSAGE: Param = param("message", "message", Text);
const FAILED_AT: Param = param("failedAt", "failed_at", Number);
const META: Param = param("meta", "meta", Meta);
const NEXT_ATTEMPT_AT: Param = param("nextAttemptAt", "next_attempt_at", Number);
const IDS: Param = param("ids", "ids", Ids);

/// What every reclaim calls on its instance store (TanStack's `SandboxStore`), in the order the declarations list
/// them; `upsert` is the app's (a flow never writes a record).
pub const INSTANCE_STORE: [Method; 3] = [
    method("get", "get", &[KEY], Instance, false, "The record under `key`, or `null` when there is none."),
    method(
        "upsert",
        "upsert",
        &[param("record", "record", Record)],
        Nothing,
        false,
        "Stores `record`, replacing any record under its key.",
    ),
    method("delete", "delete", &[KEY], Nothing, false, "Removes the record under `key`; a missing key is a no-op."),
];

/// What makes an instance store one with a leak ledger: a reclaim whose destroy failed calls it instead of `delete`.
pub const LEDGER_INSTANCE_STORE: [Method; 1] = [method(
    "deleteRecordingLeak",
    "delete_recording_leak",
    &[KEY, LEAK],
    Nothing,
    false,
    "Deletes the record under `key` and records `leak`, in one transaction.",
)];

/// The part of a provider every flow uses.
pub const SANDBOX_PROVIDER: [Method; 2] = [
    property(
        "name",
        "name",
        Text,
        false,
        "Compared exactly (case-sensitive) with the instance record's `provider` before anything is destroyed; read \
         once per flow.",
    ),
    method(
        "destroy",
        "destroy",
        &[param("input", "sandbox_id", Destroy)],
        Anything,
        false,
        "Destroys the sandbox with this provider-side id; an already-gone sandbox should count as destroyed. A \
         throw (or a rejected answer) is the `destroy-failed` path.",
    ),
];

/// What a reconcile pass also reads of a provider: both optional.
pub const FLEET_PROVIDER: [Method; 3] = [
    property("owner", "owner", Text, true, "The owner namespace its sandboxes carry; wins over the pass's `owner`."),
    method(
        "list",
        "list",
        &[param("input", "", ListInput)],
        Listed,
        true,
        "Its sandboxes, for the orphan sweep; a throw (or a rejected answer) makes the sweep `unavailable`, and \
         a provider without it gets no sweep (reported `unavailable`).",
    ),
    method(
        "lookup",
        "lookup",
        &[param("input", "ids", LookupInput)],
        Listed,
        true,
        "The sandboxes of `ids` that still exist, read by id (the vendor's get): what the store's registry names \
         and the listing did not show, so what an unlabelled app created is found without listing the whole \
         account. An id it leaves out is gone; a throw makes the sweep `unavailable`.",
    ),
];

/// Where reclaim lines go: TanStack's `InternalLogger` methods, one per log level, called synchronously (never
/// awaited) with the message and a fresh meta object; a logger that throws changes nothing.
pub const LOGGER: [Method; 3] = [
    method("warn", "warn", &[MESSAGE, META], Unread, false, "Something is wrong but the flow goes on."),
    method("errors", "errors", &[MESSAGE, META], Unread, false, "The flow failed its job: a sandbox may be leaking."),
    method("sandbox", "sandbox", &[MESSAGE, META], Unread, false, "Routine sandbox lifecycle news."),
];

/// A method both flows call (a reconcile pass's leak retries and a leak retry).
const RESOLVE_LEAK: Method = method(
    "resolveLeak",
    "resolve_leak",
    &[ENTRY],
    Held,
    false,
    "Removes a claimed leak whose sandbox is now destroyed, only while the entry's `claim` still holds. `false`: \
     another retrier took the entry after the lease ran out, and nothing was written (any other answer counts \
     as written).",
);

/// What a reconcile pass calls on its store beyond the leak ledger, in the order the declarations list them.
///
/// The five `sweepMark` ... `lookupChecked` go together (a store has all or none): with them a sweep asks about
/// what it listed instead of reading every reference, so its cost follows what it lists, not what the store holds.
pub const FLEET_STORE: [Method; 17] = [
    method(
        "listStale",
        "list_stale",
        &[param("olderThan", "older_than", Number), LIMIT],
        Records,
        false,
        "Instance records last updated before `olderThan`, oldest first, at most `limit`.",
    ),
    method(
        "expireIdle",
        "expire_idle",
        &[KEY, param("updatedAt", "updated_at", Number), LEAK],
        Flag,
        false,
        "In one transaction: deletes record `key` only if its `updatedAt` is still `updatedAt`, and records `leak` \
         (reason `idle`, due at once). `false`: the record was touched or is gone, and nothing was written.",
    ),
    method(
        "sandboxReferences",
        "sandbox_references",
        &[PROVIDER, param("destroyedSince", "destroyed_since", Number)],
        Ids,
        false,
        "Every `providerSandboxId` of `provider` that a record or a leak entry references, and every one an audit \
         row says was destroyed at or after `destroyedSince` (epoch ms): a listing lags, and what a pass just \
         destroyed is nobody's orphan.",
    ),
    method(
        "registeredSandboxes",
        "registered_sandboxes",
        &[PROVIDER, param("since", "since", Number)],
        Ids,
        true,
        "The registry of every sandbox an instance record of `provider` named, kept after the record is deleted: \
         the `providerSandboxId`s whose record still exists or was last written or deleted at or after `since` \
         (epoch ms). With it, the orphan sweep also takes a sandbox listed without an owner label (owner `''`) \
         for ours when this names it; a store without it names none (an unlabelled sandbox is never destroyed).",
    ),
    method(
        "prune",
        "prune",
        &[PROVIDER, param("registryBefore", "registry_before", Number), param("auditBefore", "audit_before", Number)],
        Nothing,
        true,
        "Bounded growth: deletes `provider`'s registry rows last seen before `registryBefore` and its audit rows \
         from before `auditBefore` (epoch ms). A pass calls it once per provider from the pass that took that \
         provider's sweep (never in a dry run); a failure is ignored (the next holder prunes). A store without it \
         keeps every row.",
    ),
    method(
        "sweepMark",
        "sweep_mark",
        &[PROVIDER],
        Number,
        true,
        "A mark of the store's record deletions, taken before a sweep lists: a record deleted (or pointed at \
         another sandbox) after this call is counted by `referencedAmong` with this mark. Any whole number that \
         never goes down (a counter, a transaction id).",
    ),
    method(
        "referencedAmong",
        "referenced_among",
        &[PROVIDER, IDS, param("destroyedSince", "destroyed_since", Number), param("mark", "mark", Number)],
        Ids,
        true,
        "Those of `ids` (what a sweep listed of `provider`, a batch at a time) that a record or a leak entry \
         references now, that an audit row says was destroyed (or a leak retry resolved) at or after \
         `destroyedSince` (epoch ms), or whose record was deleted after `mark` (see `sweepMark`): the sweep spares \
         them all.",
    ),
    method(
        "registeredAmong",
        "registered_among",
        &[PROVIDER, IDS, param("since", "since", Number)],
        Ids,
        true,
        "Those of `ids` the registry names: a record of `provider` names it now, or one last written or deleted \
         at or after `since` (epoch ms) did.",
    ),
    method(
        "lookupCandidates",
        "lookup_candidates",
        &[PROVIDER, param("since", "since", Number), LIMIT],
        Ids,
        true,
        "At most `limit` registered `providerSandboxId`s of `provider` for a lookup by id: last written or deleted \
         at or after `since` (epoch ms), named by no record or leak entry now, and not known gone; never checked \
         first (most recently deleted first), then least recently checked first.",
    ),
    method(
        "lookupChecked",
        "lookup_checked",
        &[PROVIDER, param("gone", "gone", Ids), param("checked", "checked", Ids), NOW],
        Nothing,
        true,
        "What a lookup learned: the sandboxes of `gone` are gone (never a candidate again until a record names \
         them again), those of `checked` were checked at `now` (epoch ms) and go to the back of the queue. A \
         failure is ignored.",
    ),
    method(
        "recordLeak",
        "record_leak",
        &[LEAK, param("reason", "reason", Reason), NEXT_ATTEMPT_AT],
        Nothing,
        false,
        "Records a leak without touching any record; a known sandbox's attempts are bumped.",
    ),
    method(
        "dueLeaks",
        "due_leaks",
        &[PROVIDER, LIMIT, param("leaseMs", "lease_ms", MaybeNumber), NOW],
        DueEntries,
        false,
        "`provider`'s entries due at `now` and not claimed by another pass, oldest first, at most `limit`; with \
         `leaseMs`, claims them until `now + leaseMs` (without: a dry run's listing).",
    ),
    method(
        "deferLeak",
        "defer_leak",
        &[ENTRY, MESSAGE, FAILED_AT, NEXT_ATTEMPT_AT],
        Held,
        false,
        "A claimed entry's destroy failed again: attempts + 1, keep `message`, due at `nextAttemptAt`, claim \
         released; only while the entry's `claim` still holds (`false` when it does not).",
    ),
    RESOLVE_LEAK,
    method(
        "claimSweep",
        "claim_sweep",
        &[PROVIDER, HOLDER, LEASE, NOW],
        Flag,
        false,
        "Takes `provider`'s orphan sweep for `holder` until `now + leaseMs`, unless another holder's lease runs.",
    ),
    method(
        "releaseSweep",
        "release_sweep",
        &[PROVIDER, HOLDER],
        Nothing,
        false,
        "Gives `provider`'s sweep back, if `holder` still holds it.",
    ),
    method(
        "appendAudit",
        "append_audit",
        &[param("entries", "entries", AuditRows)],
        Nothing,
        false,
        "Appends audit rows, in order.",
    ),
];

/// What a leak retry (`retryLeaks` / `retry_leaks`) calls on its store, in the order the declarations list them.
pub const RETRY_LEDGER: [Method; 3] = [
    method(
        "claimLeaks",
        "claim_leaks",
        &[PROVIDER, LIMIT, param("leaseMs", "lease", Lease)],
        Entries,
        false,
        "Claims up to `limit` of `provider`'s leaks for the lease: an entry claimed by another retrier whose lease \
         has not ended is skipped. Each entry comes back with its `claim`; a lease of 0 claims with a lease that \
         has already ended.",
    ),
    RESOLVE_LEAK,
    method(
        "recordRetryFailure",
        "record_retry_failure",
        &[ENTRY, MESSAGE, FAILED_AT],
        Held,
        false,
        "Bumps a claimed leak's attempts, keeps `message` and releases the claim; `false` as for `resolveLeak`.",
    ),
];
