//! `InMemorySandboxInstanceStore`'s native half: the core's in-memory store,
//! with synchronous methods that the JS class (`lib/memory.cjs`) wraps in
//! promise-returning ones. A flow calls it like any other store.

use std::sync::Arc;

use napi::bindgen_prelude::{FromNapiValue, ToNapiValue, TypeName, Unknown, ValidateNapiValue};
use napi::{sys, Error, Result, Status, ValueType};
use napi_derive::napi;
use sandbox_reclaim::contract::FleetStore;
use sandbox_reclaim::contract::LeakLedger;
use sandbox_reclaim::model::fleet::{AuditEntry, DueLeak, LeakReason};
use sandbox_reclaim::model::ledger::{LeakEntry, NewLeak};
use sandbox_reclaim::options::arguments::{self, HostNumber, Whole, COUNT, MILLIS};
use sandbox_reclaim::options::defaults;
use sandbox_reclaim::options::Dialect;
use sandbox_reclaim::{InMemorySandboxInstanceStore, SandboxInstanceRecord, SandboxInstanceStore, StoreError};

use sandbox_reclaim::stores::checks::now_or_never;

/// A `SandboxInstanceRecord` in its JavaScript (camelCase) form.
#[napi(object)]
pub struct InstanceRecord {
    pub key: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub latest_snapshot_id: Option<String>,
    pub thread_id: String,
    pub latest_run_id: Option<String>,
    /// Epoch milliseconds, a whole number in `0..=2^53-1`.
    pub updated_at: f64,
}

impl From<SandboxInstanceRecord> for InstanceRecord {
    fn from(record: SandboxInstanceRecord) -> Self {
        Self {
            key: record.key,
            provider: record.provider,
            provider_sandbox_id: record.provider_sandbox_id,
            latest_snapshot_id: record.latest_snapshot_id,
            thread_id: record.thread_id,
            latest_run_id: record.latest_run_id,
            updated_at: record.updated_at as f64,
        }
    }
}

impl TryFrom<InstanceRecord> for SandboxInstanceRecord {
    type Error = Error;

    fn try_from(record: InstanceRecord) -> Result<Self> {
        let whole = record.updated_at.fract() == 0.0 && record.updated_at >= 0.0;
        if !whole || record.updated_at > sandbox_reclaim::model::MAX_SAFE_INTEGER as f64 {
            return Err(type_error("record.updatedAt must be a whole number between 0 and 2^53-1"));
        }
        Ok(Self {
            key: record.key,
            provider: record.provider,
            provider_sandbox_id: record.provider_sandbox_id,
            latest_snapshot_id: record.latest_snapshot_id,
            thread_id: record.thread_id,
            latest_run_id: record.latest_run_id,
            updated_at: record.updated_at as u64,
        })
    }
}

/// A leak as `deleteRecordingLeak(key, leak)` receives it.
#[napi(object)]
pub struct LeakInput {
    pub key: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub run_id: String,
    pub error_message: String,
    /// Epoch milliseconds.
    pub failed_at: f64,
}

/// A pending leak-ledger entry.
#[napi(object)]
pub struct LeakRecord {
    pub key: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub run_id: String,
    pub last_error: String,
    /// Epoch milliseconds of the latest failure.
    pub failed_at: f64,
    /// Retries so far: a whole number below 2^32 (the core checks one JS gives).
    pub attempts: JsNumber,
    /// The claim it was handed out under (`claimLeaks`, `dueLeaks`): pass
    /// the entry back as it came, and a write lands only while that claim
    /// still holds.
    pub claim: Option<JsNumber>,
}

impl From<LeakEntry> for LeakRecord {
    fn from(entry: LeakEntry) -> Self {
        Self {
            key: entry.key,
            provider: entry.provider,
            provider_sandbox_id: entry.provider_sandbox_id,
            run_id: entry.run_id,
            last_error: entry.last_error,
            failed_at: entry.failed_at as f64,
            attempts: JsNumber::Number(f64::from(entry.attempts)),
            claim: entry.claim.map(|claim| JsNumber::Number(claim as f64)),
        }
    }
}

impl TryFrom<LeakInput> for NewLeak {
    type Error = Error;

    fn try_from(leak: LeakInput) -> Result<Self> {
        Ok(NewLeak {
            failed_at: epoch_millis("leak.failedAt", leak.failed_at)?,
            key: leak.key,
            provider: leak.provider,
            provider_sandbox_id: leak.provider_sandbox_id,
            run_id: leak.run_id,
            error_message: leak.error_message,
        })
    }
}

impl TryFrom<LeakRecord> for LeakEntry {
    type Error = Error;

    fn try_from(entry: LeakRecord) -> Result<Self> {
        let attempts = whole("entry.attempts", entry.attempts, COUNT)? as u32;
        let claim = entry.claim.map(|claim| whole("entry.claim", claim, MILLIS)).transpose()?;
        Ok(LeakEntry {
            failed_at: epoch_millis("entry.failedAt", entry.failed_at)?,
            key: entry.key,
            provider: entry.provider,
            provider_sandbox_id: entry.provider_sandbox_id,
            run_id: entry.run_id,
            last_error: entry.last_error,
            attempts,
            claim,
        })
    }
}

/// A ledger entry a fleet pass may retry now (`dueLeaks`): the entry's
/// fields plus why it is in the ledger and when it is due.
#[napi(object)]
pub struct DueLeakRecord {
    pub key: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub run_id: String,
    pub last_error: String,
    pub failed_at: f64,
    pub attempts: u32,
    /// `destroy-failed`, `orphan` or `idle`.
    pub reason: String,
    /// Epoch milliseconds before which no retry is due.
    pub next_attempt_at: f64,
    /// The claim it was handed out under (see `LeakRecord.claim`).
    pub claim: Option<f64>,
}

impl From<DueLeak> for DueLeakRecord {
    fn from(due: DueLeak) -> Self {
        let entry = due.entry;
        Self {
            key: entry.key,
            provider: entry.provider,
            provider_sandbox_id: entry.provider_sandbox_id,
            run_id: entry.run_id,
            last_error: entry.last_error,
            failed_at: entry.failed_at as f64,
            attempts: entry.attempts,
            reason: due.reason.as_str().to_owned(),
            next_attempt_at: due.next_attempt_at as f64,
            claim: entry.claim.map(|claim| claim as f64),
        }
    }
}

/// One audit row: a destroy attempt made by a fleet pass.
#[napi(object)]
pub struct AuditRecord {
    /// Epoch milliseconds when the attempt settled (the core checks one JS gives).
    pub at: JsNumber,
    pub host: String,
    pub provider: String,
    pub provider_sandbox_id: String,
    pub key: Option<String>,
    /// `leak-retry`, `orphan` or `idle`.
    pub reason: String,
    /// `destroyed`, `failed` or `timeout`.
    pub result: String,
    pub error: Option<String>,
}

impl From<AuditEntry> for AuditRecord {
    fn from(entry: AuditEntry) -> Self {
        Self {
            at: JsNumber::Number(entry.at as f64),
            host: entry.host,
            provider: entry.provider,
            provider_sandbox_id: entry.provider_sandbox_id,
            key: entry.key,
            reason: entry.reason,
            result: entry.result,
            error: entry.error,
        }
    }
}

/// Audit row `index` from JS (`entries[index]`), its time checked by the core.
fn audit_entry(index: usize, entry: AuditRecord) -> Result<AuditEntry> {
    Ok(AuditEntry {
        at: whole(&format!("entries[{index}].at"), entry.at, MILLIS)?,
        host: entry.host,
        provider: entry.provider,
        provider_sandbox_id: entry.provider_sandbox_id,
        key: entry.key,
        reason: entry.reason,
        result: entry.result,
        error: entry.error,
    })
}

/// Audit rows from JS, each checked.
pub fn audit_entries(entries: Vec<AuditRecord>) -> Result<Vec<AuditEntry>> {
    entries.into_iter().enumerate().map(|(index, entry)| audit_entry(index, entry)).collect()
}

/// `listAudit`'s `{ since, limit }` as JS read them: `since` absent when
/// `undefined` or `null`, `limit` when `undefined` (then the core's default).
pub fn audit_query(since: JsNumber, limit: JsNumber) -> Result<(Option<u64>, usize)> {
    let since = whole_unless_nullish("options.since", since, MILLIS)?;
    let limit = whole_if_given("options.limit", limit, COUNT)?;
    Ok((since, limit.map_or(defaults::AUDIT_LIMIT, |limit| limit as usize)))
}

/// A leak reason from its string form; anything else is refused (`TypeError`).
pub fn leak_reason(reason: &str) -> Result<LeakReason> {
    LeakReason::ALL
        .into_iter()
        .find(|known| known.as_str() == reason)
        .ok_or_else(|| type_error("reason must be 'destroy-failed', 'orphan' or 'idle'"))
}

/// A JS value where a number is expected, as it crossed (napi converts
/// nothing): the core checks it ([`whole`]), so a string or `null` is refused
/// with the same text as a number out of range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JsNumber {
    Undefined,
    Null,
    Number(f64),
    /// Any other type.
    Other,
}

impl JsNumber {
    fn host(self) -> HostNumber {
        match self {
            Self::Number(number) => HostNumber::Float(number),
            Self::Undefined => HostNumber::Other("undefined".to_owned()),
            Self::Null => HostNumber::Other("null".to_owned()),
            Self::Other => HostNumber::Other("object".to_owned()),
        }
    }
}

impl TypeName for JsNumber {
    fn type_name() -> &'static str {
        "number"
    }

    fn value_type() -> ValueType {
        ValueType::Number
    }
}

impl ValidateNapiValue for JsNumber {}

impl FromNapiValue for JsNumber {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        // SAFETY: napi hands over a live value of this call's env.
        let value = unsafe { Unknown::from_napi_value(env, value)? };
        Ok(match value.get_type()? {
            ValueType::Undefined => Self::Undefined,
            ValueType::Null => Self::Null,
            // SAFETY: the value is a number.
            ValueType::Number => Self::Number(unsafe { value.cast::<f64>()? }),
            _ => Self::Other,
        })
    }
}

impl ToNapiValue for JsNumber {
    unsafe fn to_napi_value(env: sys::napi_env, value: Self) -> Result<sys::napi_value> {
        // SAFETY: forwarded to napi's own conversions, with the caller's env.
        unsafe {
            match value {
                Self::Number(number) => f64::to_napi_value(env, number),
                Self::Null => <()>::to_napi_value(env, ()),
                Self::Undefined | Self::Other => Option::<f64>::to_napi_value(env, None),
            }
        }
    }
}

/// `value` if the core finds it a whole number in `range`; else its
/// refusal (naming `field` as JS does) as a `TypeError`.
pub fn whole(field: &str, value: JsNumber, range: Whole) -> Result<u64> {
    arguments::whole(&value.host(), field, range, Dialect::Node).map_err(|refused| type_error(refused.message))
}

/// An optional argument: `undefined` is absent (`null` is refused).
pub fn whole_if_given(field: &str, value: JsNumber, range: Whole) -> Result<Option<u64>> {
    match value {
        JsNumber::Undefined => Ok(None),
        given => whole(field, given, range).map(Some),
    }
}

/// An optional argument: `undefined` and `null` are absent.
pub fn whole_unless_nullish(field: &str, value: JsNumber, range: Whole) -> Result<Option<u64>> {
    match value {
        JsNumber::Undefined | JsNumber::Null => Ok(None),
        given => whole(field, given, range).map(Some),
    }
}

/// Epoch milliseconds of a record field (its type checked by the JS facade).
pub fn epoch_millis(field: &str, value: f64) -> Result<u64> {
    whole(field, JsNumber::Number(value), MILLIS)
}

/// A claim lease from milliseconds (`0` is a lease that has already ended).
pub fn lease_duration(lease_ms: JsNumber) -> Result<std::time::Duration> {
    Ok(std::time::Duration::from_millis(whole("leaseMs", lease_ms, MILLIS)?))
}

/// A napi error that the JS facade rethrows as a `TypeError`.
pub fn type_error(message: impl Into<String>) -> Error {
    Error::new(Status::InvalidArg, message.into())
}

/// A store failure as a napi error: refused input becomes a `TypeError` in JS.
pub fn store_error(error: StoreError) -> Error {
    match error {
        // A record the core refuses is bad input: the facade reports it as a TypeError.
        StoreError::InvalidRecord(_) | StoreError::InvalidKey(_) => type_error(error.to_string()),
        StoreError::Backend(_) => Error::new(Status::GenericFailure, error.to_string()),
    }
}

/// Runs an in-memory store call, which never waits, synchronously.
fn ready<T>(future: impl std::future::Future<Output = std::result::Result<T, StoreError>>) -> Result<T> {
    let pending = || Error::new(Status::GenericFailure, "an in-memory store call did not complete at once");
    now_or_never(future).ok_or_else(pending)?.map_err(store_error)
}

/// The native in-memory instance store (see the module docs).
#[napi]
pub struct MemoryStore {
    inner: Arc<InMemorySandboxInstanceStore>,
}

#[napi]
impl MemoryStore {
    /// An empty store; with `ledger` it also keeps a leak ledger.
    #[napi(constructor)]
    pub fn new(ledger: bool) -> Self {
        let inner =
            if ledger { InMemorySandboxInstanceStore::with_ledger() } else { InMemorySandboxInstanceStore::new() };
        Self { inner: Arc::new(inner) }
    }

    /// Whether the store keeps a leak ledger.
    #[napi(getter)]
    pub fn has_ledger(&self) -> bool {
        self.inner.leak_ledger().is_some()
    }

    /// A copy of the record under `key`, or `null`.
    #[napi]
    pub fn get(&self, key: String) -> Result<Option<InstanceRecord>> {
        Ok(ready(self.inner.get(&key))?.map(InstanceRecord::from))
    }

    /// Stores a copy of `record`, replacing any record under its key.
    #[napi]
    pub fn upsert(&self, record: InstanceRecord) -> Result<()> {
        let record = SandboxInstanceRecord::try_from(record)?;
        ready(self.inner.upsert(&record))
    }

    /// Removes the record under `key`; a missing key is a no-op.
    #[napi]
    pub fn delete(&self, key: String) -> Result<()> {
        ready(self.inner.delete(&key))
    }

    /// Every record, sorted by key.
    #[napi]
    pub fn records(&self) -> Vec<InstanceRecord> {
        self.inner.records().into_iter().map(InstanceRecord::from).collect()
    }

    /// Deletes `key` and records `leak`, in one step (ledger stores only).
    #[napi]
    pub fn delete_recording_leak(&self, key: String, leak: LeakInput) -> Result<()> {
        let ledger = self.ledger()?;
        let leak = NewLeak::try_from(leak)?;
        ready(ledger.delete_recording_leak(&key, leak))
    }

    /// Pending leaks, oldest first, of one provider or of all.
    #[napi]
    pub fn list_leaks(&self, provider: Option<String>) -> Result<Vec<LeakRecord>> {
        let entries = ready(self.ledger()?.list_leaks(provider.as_deref()))?;
        Ok(entries.into_iter().map(LeakRecord::from).collect())
    }

    /// How many leaks are pending, of one provider or of all.
    #[napi]
    pub fn count_leaks(&self, provider: Option<String>) -> Result<f64> {
        Ok(ready(self.ledger()?.count_leaks(provider.as_deref()))? as f64)
    }

    /// Claims up to `limit` of `provider`'s leaks for `leaseMs` (see `LeakLedger::claim_leaks`).
    #[napi]
    pub fn claim_leaks(&self, provider: String, limit: JsNumber, lease_ms: JsNumber) -> Result<Vec<LeakRecord>> {
        let limit = whole("limit", limit, COUNT)?;
        let lease = lease_duration(lease_ms)?;
        let entries = ready(self.ledger()?.claim_leaks(&provider, limit as usize, lease))?;
        Ok(entries.into_iter().map(LeakRecord::from).collect())
    }

    /// Removes a claimed leak whose sandbox is now destroyed; `false`: its
    /// claim had passed to another retrier, and nothing was written.
    #[napi]
    pub fn resolve_leak(&self, entry: LeakRecord) -> Result<bool> {
        let entry = LeakEntry::try_from(entry)?;
        ready(self.ledger()?.resolve_leak(&entry))
    }

    /// Bumps a claimed leak's attempts, keeps `message` and releases the
    /// claim; `false`: the claim had passed on, and nothing was written.
    #[napi]
    pub fn record_retry_failure(&self, entry: LeakRecord, message: String, failed_at: JsNumber) -> Result<bool> {
        let entry = LeakEntry::try_from(entry)?;
        let failed_at = whole("failedAt", failed_at, MILLIS)?;
        ready(self.ledger()?.record_retry_failure(&entry, &message, failed_at))
    }

    /// Instance records last updated before `olderThan`, oldest first, at most `limit`.
    #[napi]
    pub fn list_stale(&self, older_than: JsNumber, limit: JsNumber) -> Result<Vec<InstanceRecord>> {
        let older_than = whole("olderThan", older_than, MILLIS)?;
        let limit = whole("limit", limit, COUNT)?;
        let records = ready(self.fleet()?.list_stale(older_than, limit as usize))?;
        Ok(records.into_iter().map(InstanceRecord::from).collect())
    }

    /// Deletes `key` if its `updatedAt` is still `updatedAt` and records `leak` (reason `idle`).
    #[napi]
    pub fn expire_idle(&self, key: String, updated_at: JsNumber, leak: LeakInput) -> Result<bool> {
        let updated_at = whole("updatedAt", updated_at, MILLIS)?;
        let leak = NewLeak::try_from(leak)?;
        ready(self.fleet()?.expire_idle(&key, updated_at, leak))
    }

    /// Every `providerSandboxId` of `provider` a record or a leak entry
    /// references, and (with `destroyedSince`) every one an audit row says
    /// was destroyed at or after it.
    #[napi]
    pub fn sandbox_references(&self, provider: String, destroyed_since: JsNumber) -> Result<Vec<String>> {
        let destroyed_since = whole_if_given("destroyedSince", destroyed_since, MILLIS)?;
        ready(self.fleet()?.sandbox_references(&provider, destroyed_since.unwrap_or(u64::MAX)))
    }

    /// The registry: every `providerSandboxId` of `provider` an instance
    /// record named, whose record still exists or was last written or
    /// deleted at or after `since`.
    #[napi]
    pub fn registered_sandboxes(&self, provider: String, since: JsNumber) -> Result<Vec<String>> {
        let since = whole("since", since, MILLIS)?;
        ready(self.fleet()?.registered_sandboxes(&provider, since))
    }

    /// A mark of the store's record deletions, taken before a sweep lists
    /// (see `referencedAmong`): a whole number that never goes down.
    #[napi]
    pub fn sweep_mark(&self, provider: String) -> Result<f64> {
        Ok(ready(self.fleet()?.sweep_mark(&provider))? as f64)
    }

    /// Those of `ids` a record or a leak entry references now, that an audit
    /// row says was destroyed (or a leak retry resolved) at or after
    /// `destroyedSince`, or whose record was deleted after `mark`; sorted.
    #[napi]
    pub fn referenced_among(
        &self,
        provider: String,
        ids: Vec<String>,
        destroyed_since: JsNumber,
        mark: JsNumber,
    ) -> Result<Vec<String>> {
        let destroyed_since = whole("destroyedSince", destroyed_since, MILLIS)?;
        let mark = whole("mark", mark, MILLIS)?;
        ready(self.fleet()?.referenced_among(&provider, &ids, destroyed_since, mark))
    }

    /// Those of `ids` the registry names (a record of `provider` names it
    /// now, or one last written or deleted at or after `since` did); sorted.
    #[napi]
    pub fn registered_among(&self, provider: String, ids: Vec<String>, since: JsNumber) -> Result<Vec<String>> {
        let since = whole("since", since, MILLIS)?;
        ready(self.fleet()?.registered_among(&provider, &ids, since))
    }

    /// At most `limit` registered ids of `provider` for a lookup by id (see
    /// `FleetStore::lookup_candidates`).
    #[napi]
    pub fn lookup_candidates(&self, provider: String, since: JsNumber, limit: JsNumber) -> Result<Vec<String>> {
        let since = whole("since", since, MILLIS)?;
        let limit = whole("limit", limit, COUNT)?;
        ready(self.fleet()?.lookup_candidates(&provider, since, limit as usize))
    }

    /// What a lookup learned: `gone` are gone, `checked` were checked at `now`.
    #[napi]
    pub fn lookup_checked(
        &self,
        provider: String,
        gone: Vec<String>,
        checked: Vec<String>,
        now: JsNumber,
    ) -> Result<()> {
        let now = whole("now", now, MILLIS)?;
        ready(self.fleet()?.lookup_checked(&provider, &gone, &checked, now))
    }

    /// Bounded growth: deletes `provider`'s registry rows last seen before
    /// `registryBefore` and its audit rows from before `auditBefore`.
    #[napi]
    pub fn prune(&self, provider: String, registry_before: JsNumber, audit_before: JsNumber) -> Result<()> {
        let registry_before = whole("registryBefore", registry_before, MILLIS)?;
        let audit_before = whole("auditBefore", audit_before, MILLIS)?;
        ready(self.fleet()?.prune(&provider, registry_before, audit_before))
    }

    /// Records a leak without touching any instance record.
    #[napi]
    pub fn record_leak(&self, leak: LeakInput, reason: String, next_attempt_at: JsNumber) -> Result<()> {
        let leak = NewLeak::try_from(leak)?;
        let reason = leak_reason(&reason)?;
        let next_attempt_at = whole("nextAttemptAt", next_attempt_at, MILLIS)?;
        ready(self.fleet()?.record_leak(leak, reason, next_attempt_at))
    }

    /// `provider`'s entries due at `now`; with `leaseMs`, claimed until `now + leaseMs`.
    #[napi]
    pub fn due_leaks(
        &self,
        provider: String,
        limit: JsNumber,
        lease_ms: JsNumber,
        now: JsNumber,
    ) -> Result<Vec<DueLeakRecord>> {
        let limit = whole("limit", limit, COUNT)?;
        let lease_ms = whole_unless_nullish("leaseMs", lease_ms, MILLIS)?;
        let now = whole("now", now, MILLIS)?;
        let due = ready(self.fleet()?.due_leaks(&provider, limit as usize, lease_ms, now))?;
        Ok(due.into_iter().map(DueLeakRecord::from).collect())
    }

    /// A claimed entry failed again: attempts + 1, keep `message`, due at `nextAttemptAt`.
    #[napi]
    pub fn defer_leak(
        &self,
        entry: LeakRecord,
        message: String,
        failed_at: JsNumber,
        next_attempt_at: JsNumber,
    ) -> Result<bool> {
        let entry = LeakEntry::try_from(entry)?;
        let failed_at = whole("failedAt", failed_at, MILLIS)?;
        let next_attempt_at = whole("nextAttemptAt", next_attempt_at, MILLIS)?;
        ready(self.fleet()?.defer_leak(&entry, &message, failed_at, next_attempt_at))
    }

    /// Takes `provider`'s orphan sweep for `holder` until `now + leaseMs`, unless another holds it.
    #[napi]
    pub fn claim_sweep(&self, provider: String, holder: String, lease_ms: JsNumber, now: JsNumber) -> Result<bool> {
        let lease_ms = whole("leaseMs", lease_ms, MILLIS)?;
        let now = whole("now", now, MILLIS)?;
        ready(self.fleet()?.claim_sweep(&provider, &holder, lease_ms, now))
    }

    /// Gives `provider`'s sweep back, if `holder` still holds it.
    #[napi]
    pub fn release_sweep(&self, provider: String, holder: String) -> Result<()> {
        ready(self.fleet()?.release_sweep(&provider, &holder))
    }

    /// Appends audit rows, in order.
    #[napi]
    pub fn append_audit(&self, entries: Vec<AuditRecord>) -> Result<()> {
        let entries = audit_entries(entries)?;
        ready(self.fleet()?.append_audit(&entries))
    }

    /// Audit rows with `at >= since`, oldest first, at most `limit`.
    #[napi]
    pub fn list_audit(&self, since: JsNumber, limit: JsNumber) -> Result<Vec<AuditRecord>> {
        let (since, limit) = audit_query(since, limit)?;
        let entries = ready(self.fleet()?.list_audit(since, limit))?;
        Ok(entries.into_iter().map(AuditRecord::from).collect())
    }

    /// The fleet side (ledger stores only, like the ledger's methods).
    fn fleet(&self) -> Result<&dyn FleetStore> {
        self.ledger()?;
        Ok(self.inner.as_ref())
    }

    fn ledger(&self) -> Result<&dyn LeakLedger> {
        self.inner.leak_ledger().ok_or_else(|| type_error("this store keeps no leak ledger"))
    }
}
