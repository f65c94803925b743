//! The native half of `SqliteSandboxInstanceStore` and
//! `PostgresSandboxInstanceStore`: one class over either core SQL store.
//!
//! Every method returns a Promise settled on napi's tokio runtime, where sqlx
//! runs; the JS facade classes (lib/stores.cjs) give each backend its own name
//! and turn refused input into a `TypeError`. Store failures carry one of the
//! codes below, by which lib/errors.cjs picks `SandboxStoreError`,
//! `SandboxStoreOpenError` or `SchemaTooNewError`.

use std::sync::Arc;

use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Result};
use napi_derive::napi;
use sandbox_reclaim::contract::FleetStore;
use sandbox_reclaim::contract::LeakLedger;
use sandbox_reclaim::model::ledger::{LeakEntry, NewLeak};
use sandbox_reclaim::options::arguments::{BUSY_TIMEOUT_MS, COUNT, MILLIS, POOL_SIZE};
use sandbox_reclaim::stores::{PostgresOptions, SqliteOptions, StoreOpenError};
use sandbox_reclaim::{
    PostgresSandboxInstanceStore, SandboxInstanceRecord, SandboxInstanceStore, SqliteSandboxInstanceStore, StoreError,
};

use crate::memory_store::{
    audit_entries, audit_query, leak_reason, lease_duration, type_error, whole, whole_if_given, whole_unless_nullish,
    AuditRecord, DueLeakRecord, InstanceRecord, JsNumber, LeakInput, LeakRecord,
};
use crate::provider::{spawn_coded, Coded};

/// A query failed (the backend's message): `SandboxStoreError`.
pub const STORE_FAILED_CODE: &str = "SANDBOX_STORE_FAILED";
/// The database could not be reached, opened or migrated: `SandboxStoreOpenError`.
pub const STORE_OPEN_FAILED_CODE: &str = "SANDBOX_STORE_OPEN_FAILED";
/// The SQLite file holds another application's tables: `SandboxStoreOpenError`.
pub const FOREIGN_DATABASE_CODE: &str = "SANDBOX_STORE_FOREIGN_DATABASE";
/// A table of ours exists in a shape we did not create: `SandboxStoreOpenError`.
pub const INCOMPATIBLE_SCHEMA_CODE: &str = "SANDBOX_STORE_INCOMPATIBLE_SCHEMA";
/// A newer library migrated the database: `SchemaTooNewError` (`found`, `supported`).
pub const SCHEMA_TOO_NEW_CODE: &str = "SANDBOX_STORE_SCHEMA_TOO_NEW";

/// `PostgresSandboxInstanceStore.connect`'s names (the JS facade reads them
/// from the options once; `maxConnections` crosses on its own).
#[napi(object)]
pub struct PostgresConnectOptions {
    /// Schema holding the tables, created if missing. Default `public`.
    pub schema: Option<String>,
    /// Table of instance records.
    pub instances_table: Option<String>,
    /// Table of the leak ledger.
    pub leaks_table: Option<String>,
    /// Table of applied migration versions.
    pub schema_version_table: Option<String>,
}

/// Either core SQL store; both keep a leak ledger.
#[derive(Clone)]
enum Backend {
    Sqlite(SqliteSandboxInstanceStore),
    Postgres(PostgresSandboxInstanceStore),
}

impl Backend {
    fn store(&self) -> Arc<dyn SandboxInstanceStore> {
        match self {
            Self::Sqlite(store) => Arc::new(store.clone()),
            Self::Postgres(store) => Arc::new(store.clone()),
        }
    }

    fn ledger(&self) -> &dyn LeakLedger {
        match self {
            Self::Sqlite(store) => store,
            Self::Postgres(store) => store,
        }
    }

    fn fleet(&self) -> &dyn FleetStore {
        match self {
            Self::Sqlite(store) => store,
            Self::Postgres(store) => store,
        }
    }

    async fn close(&self) {
        match self {
            Self::Sqlite(store) => store.close().await,
            Self::Postgres(store) => store.close().await,
        }
    }
}

/// Why a store did not open, with its code; a refused option is a `TypeError`.
fn open_error(error: StoreOpenError) -> Coded {
    let code = match &error {
        StoreOpenError::InvalidOption { .. } => return type_error(error.to_string()).into(),
        StoreOpenError::SchemaTooNew { found, supported } => {
            let (found, supported) = (*found as f64, *supported as f64);
            let coded = Coded::new(SCHEMA_TOO_NEW_CODE, error.to_string());
            return coded.with_number("found", found).with_number("supported", supported);
        }
        StoreOpenError::ForeignDatabase { .. } => FOREIGN_DATABASE_CODE,
        StoreOpenError::IncompatibleSchema { .. } => INCOMPATIBLE_SCHEMA_CODE,
        StoreOpenError::Connect(_) | StoreOpenError::Migrate(_) => STORE_OPEN_FAILED_CODE,
    };
    Coded::new(code, error.to_string())
}

/// A store call's failure: refused input is a `TypeError`, a backend failure
/// a `SandboxStoreError` with the backend's message.
fn store_error(error: StoreError) -> Coded {
    match error {
        StoreError::InvalidRecord(_) | StoreError::InvalidKey(_) => type_error(error.to_string()).into(),
        StoreError::Backend(_) => Coded::new(STORE_FAILED_CODE, error.to_string()),
    }
}

/// A SQLite or PostgreSQL instance store with its leak ledger.
#[napi]
pub struct SqlStore {
    backend: Backend,
}

impl SqlStore {
    /// The store the command opened (`hostOpen`: `npx sandbox-reclaim --providers`).
    pub(crate) fn from_command_store(store: sandbox_reclaim_cli::store::Store) -> Self {
        let backend = match store {
            sandbox_reclaim_cli::store::Store::Sqlite(store) => Backend::Sqlite(store),
            sandbox_reclaim_cli::store::Store::Postgres { store, .. } => Backend::Postgres(store),
        };
        Self { backend }
    }
}

#[napi]
impl SqlStore {
    /// Opens (creating if missing) the SQLite store at `path`; resolves to a
    /// `SqlStore`. `options.busyTimeoutMs` and `options.maxConnections` as
    /// JS read them (`undefined`: the core's default).
    #[napi]
    pub fn open_sqlite(
        env: &Env,
        path: String,
        busy_timeout_ms: JsNumber,
        max_connections: JsNumber,
    ) -> Result<PromiseRaw<'_, SqlStore>> {
        let mut sqlite = SqliteOptions::default();
        if let Some(busy) = whole_if_given("options.busyTimeoutMs", busy_timeout_ms, BUSY_TIMEOUT_MS)? {
            sqlite.busy_timeout = std::time::Duration::from_millis(busy);
        }
        if let Some(max) = whole_if_given("options.maxConnections", max_connections, POOL_SIZE)? {
            sqlite.max_connections = max as u32;
        }
        spawn_coded(env, async move {
            let store = SqliteSandboxInstanceStore::open_with(path, sqlite).await.map_err(open_error)?;
            Ok(SqlStore { backend: Backend::Sqlite(store) })
        })
    }

    /// Connects to PostgreSQL at `url` and migrates; resolves to a `SqlStore`.
    /// `options.maxConnections` as JS read it (`undefined`: the core's default).
    #[napi]
    pub fn connect_postgres(
        env: &Env,
        url: String,
        options: PostgresConnectOptions,
        max_connections: JsNumber,
    ) -> Result<PromiseRaw<'_, SqlStore>> {
        let mut postgres = PostgresOptions::default();
        let names = [
            (options.schema, &mut postgres.schema),
            (options.instances_table, &mut postgres.instances_table),
            (options.leaks_table, &mut postgres.leaks_table),
            (options.schema_version_table, &mut postgres.schema_version_table),
        ];
        for (given, slot) in names {
            if let Some(name) = given {
                *slot = name;
            }
        }
        if let Some(max) = whole_if_given("options.maxConnections", max_connections, POOL_SIZE)? {
            postgres.max_connections = max as u32;
        }
        // Refuse bad names now, so the Promise never starts a connection for them.
        postgres.validate().map_err(|invalid| type_error(invalid.to_string()))?;
        spawn_coded(env, async move {
            let store = PostgresSandboxInstanceStore::connect(&url, postgres).await.map_err(open_error)?;
            Ok(SqlStore { backend: Backend::Postgres(store) })
        })
    }

    /// The record under `key`, or `null`.
    #[napi]
    pub fn get<'env>(&self, env: &'env Env, key: String) -> Result<PromiseRaw<'env, Option<InstanceRecord>>> {
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            let record = backend.store().get(&key).await.map_err(store_error)?;
            Ok(record.map(InstanceRecord::from))
        })
    }

    /// Stores `record`, replacing any record under its key.
    #[napi]
    pub fn upsert<'env>(&self, env: &'env Env, record: InstanceRecord) -> Result<PromiseRaw<'env, ()>> {
        let record = SandboxInstanceRecord::try_from(record)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move { backend.store().upsert(&record).await.map_err(store_error) })
    }

    /// Removes the record under `key`; a missing key is a no-op.
    #[napi]
    pub fn delete<'env>(&self, env: &'env Env, key: String) -> Result<PromiseRaw<'env, ()>> {
        let backend = self.backend.clone();
        spawn_coded(env, async move { backend.store().delete(&key).await.map_err(store_error) })
    }

    /// Deletes `key` and records `leak`, in one transaction.
    #[napi]
    pub fn delete_recording_leak<'env>(
        &self,
        env: &'env Env,
        key: String,
        leak: LeakInput,
    ) -> Result<PromiseRaw<'env, ()>> {
        let leak = NewLeak::try_from(leak)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move { backend.ledger().delete_recording_leak(&key, leak).await.map_err(store_error) })
    }

    /// Pending leaks, oldest first, of one provider or of all.
    #[napi]
    pub fn list_leaks<'env>(
        &self,
        env: &'env Env,
        provider: Option<String>,
    ) -> Result<PromiseRaw<'env, Vec<LeakRecord>>> {
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            let entries = backend.ledger().list_leaks(provider.as_deref()).await.map_err(store_error)?;
            Ok(entries.into_iter().map(LeakRecord::from).collect())
        })
    }

    /// How many leaks are pending, of one provider or of all.
    #[napi]
    pub fn count_leaks<'env>(&self, env: &'env Env, provider: Option<String>) -> Result<PromiseRaw<'env, f64>> {
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            Ok(backend.ledger().count_leaks(provider.as_deref()).await.map_err(store_error)? as f64)
        })
    }

    /// Claims up to `limit` of `provider`'s leaks for `leaseMs`.
    #[napi]
    pub fn claim_leaks<'env>(
        &self,
        env: &'env Env,
        provider: String,
        limit: JsNumber,
        lease_ms: JsNumber,
    ) -> Result<PromiseRaw<'env, Vec<LeakRecord>>> {
        let limit = whole("limit", limit, COUNT)?;
        let lease = lease_duration(lease_ms)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            let entries = backend.ledger().claim_leaks(&provider, limit as usize, lease).await.map_err(store_error)?;
            Ok(entries.into_iter().map(LeakRecord::from).collect())
        })
    }

    /// Removes a claimed leak whose sandbox is now destroyed; `false`: its
    /// claim had passed to another retrier, and nothing was written.
    #[napi]
    pub fn resolve_leak<'env>(&self, env: &'env Env, entry: LeakRecord) -> Result<PromiseRaw<'env, bool>> {
        let entry = LeakEntry::try_from(entry)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move { backend.ledger().resolve_leak(&entry).await.map_err(store_error) })
    }

    /// Bumps a claimed leak's attempts, keeps `message` and releases the claim.
    #[napi]
    pub fn record_retry_failure<'env>(
        &self,
        env: &'env Env,
        entry: LeakRecord,
        message: String,
        failed_at: JsNumber,
    ) -> Result<PromiseRaw<'env, bool>> {
        let entry = LeakEntry::try_from(entry)?;
        let failed_at = whole("failedAt", failed_at, MILLIS)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            backend.ledger().record_retry_failure(&entry, &message, failed_at).await.map_err(store_error)
        })
    }

    /// Instance records last updated before `olderThan`, oldest first, at most `limit`.
    #[napi]
    pub fn list_stale<'env>(
        &self,
        env: &'env Env,
        older_than: JsNumber,
        limit: JsNumber,
    ) -> Result<PromiseRaw<'env, Vec<InstanceRecord>>> {
        let older_than = whole("olderThan", older_than, MILLIS)?;
        let limit = whole("limit", limit, COUNT)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            let records = backend.fleet().list_stale(older_than, limit as usize).await.map_err(store_error)?;
            Ok(records.into_iter().map(InstanceRecord::from).collect())
        })
    }

    /// Deletes `key` if its `updatedAt` is still `updatedAt` and records `leak`
    /// (reason `idle`), in one transaction.
    #[napi]
    pub fn expire_idle<'env>(
        &self,
        env: &'env Env,
        key: String,
        updated_at: JsNumber,
        leak: LeakInput,
    ) -> Result<PromiseRaw<'env, bool>> {
        let updated_at = whole("updatedAt", updated_at, MILLIS)?;
        let leak = NewLeak::try_from(leak)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move { backend.fleet().expire_idle(&key, updated_at, leak).await.map_err(store_error) })
    }

    /// Every `providerSandboxId` of `provider` a record or a leak entry
    /// references, and (with `destroyedSince`) every one an audit row says
    /// was destroyed at or after it.
    #[napi]
    pub fn sandbox_references<'env>(
        &self,
        env: &'env Env,
        provider: String,
        destroyed_since: JsNumber,
    ) -> Result<PromiseRaw<'env, Vec<String>>> {
        let destroyed_since = whole_if_given("destroyedSince", destroyed_since, MILLIS)?;
        let since = destroyed_since.unwrap_or(u64::MAX);
        let backend = self.backend.clone();
        spawn_coded(env, async move { backend.fleet().sandbox_references(&provider, since).await.map_err(store_error) })
    }

    /// The registry: every `providerSandboxId` of `provider` an instance
    /// record named, whose record still exists or was last written or
    /// deleted at or after `since`.
    #[napi]
    pub fn registered_sandboxes<'env>(
        &self,
        env: &'env Env,
        provider: String,
        since: JsNumber,
    ) -> Result<PromiseRaw<'env, Vec<String>>> {
        let since = whole("since", since, MILLIS)?;
        let backend = self.backend.clone();
        spawn_coded(
            env,
            async move { backend.fleet().registered_sandboxes(&provider, since).await.map_err(store_error) },
        )
    }

    /// A mark of the store's record deletions, taken before a sweep lists
    /// (see `referencedAmong`): a whole number that never goes down.
    #[napi]
    pub fn sweep_mark<'env>(&self, env: &'env Env, provider: String) -> Result<PromiseRaw<'env, f64>> {
        let backend = self.backend.clone();
        spawn_coded(env, async move { Ok(backend.fleet().sweep_mark(&provider).await.map_err(store_error)? as f64) })
    }

    /// Those of `ids` a record or a leak entry references now, that an audit
    /// row says was destroyed (or a leak retry resolved) at or after
    /// `destroyedSince`, or whose record was deleted after `mark`; sorted.
    #[napi]
    pub fn referenced_among<'env>(
        &self,
        env: &'env Env,
        provider: String,
        ids: Vec<String>,
        destroyed_since: JsNumber,
        mark: JsNumber,
    ) -> Result<PromiseRaw<'env, Vec<String>>> {
        let destroyed_since = whole("destroyedSince", destroyed_since, MILLIS)?;
        let mark = whole("mark", mark, MILLIS)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            backend.fleet().referenced_among(&provider, &ids, destroyed_since, mark).await.map_err(store_error)
        })
    }

    /// Those of `ids` the registry names (a record of `provider` names it
    /// now, or one last written or deleted at or after `since` did); sorted.
    #[napi]
    pub fn registered_among<'env>(
        &self,
        env: &'env Env,
        provider: String,
        ids: Vec<String>,
        since: JsNumber,
    ) -> Result<PromiseRaw<'env, Vec<String>>> {
        let since = whole("since", since, MILLIS)?;
        let backend = self.backend.clone();
        spawn_coded(
            env,
            async move { backend.fleet().registered_among(&provider, &ids, since).await.map_err(store_error) },
        )
    }

    /// At most `limit` registered ids of `provider` for a lookup by id (see
    /// `FleetStore::lookup_candidates`).
    #[napi]
    pub fn lookup_candidates<'env>(
        &self,
        env: &'env Env,
        provider: String,
        since: JsNumber,
        limit: JsNumber,
    ) -> Result<PromiseRaw<'env, Vec<String>>> {
        let since = whole("since", since, MILLIS)?;
        let limit = whole("limit", limit, COUNT)? as usize;
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            backend.fleet().lookup_candidates(&provider, since, limit).await.map_err(store_error)
        })
    }

    /// What a lookup learned: `gone` are gone, `checked` were checked at `now`.
    #[napi]
    pub fn lookup_checked<'env>(
        &self,
        env: &'env Env,
        provider: String,
        gone: Vec<String>,
        checked: Vec<String>,
        now: JsNumber,
    ) -> Result<PromiseRaw<'env, ()>> {
        let now = whole("now", now, MILLIS)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            backend.fleet().lookup_checked(&provider, &gone, &checked, now).await.map_err(store_error)
        })
    }

    /// Bounded growth: deletes `provider`'s registry rows last seen before
    /// `registryBefore` and its audit rows from before `auditBefore`.
    #[napi]
    pub fn prune<'env>(
        &self,
        env: &'env Env,
        provider: String,
        registry_before: JsNumber,
        audit_before: JsNumber,
    ) -> Result<PromiseRaw<'env, ()>> {
        let registry_before = whole("registryBefore", registry_before, MILLIS)?;
        let audit_before = whole("auditBefore", audit_before, MILLIS)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            backend.fleet().prune(&provider, registry_before, audit_before).await.map_err(store_error)
        })
    }

    /// Records a leak without touching any instance record.
    #[napi]
    pub fn record_leak<'env>(
        &self,
        env: &'env Env,
        leak: LeakInput,
        reason: String,
        next_attempt_at: JsNumber,
    ) -> Result<PromiseRaw<'env, ()>> {
        let leak = NewLeak::try_from(leak)?;
        let reason = leak_reason(&reason)?;
        let next_attempt_at = whole("nextAttemptAt", next_attempt_at, MILLIS)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            backend.fleet().record_leak(leak, reason, next_attempt_at).await.map_err(store_error)
        })
    }

    /// `provider`'s entries due at `now`; with `leaseMs`, claimed until `now + leaseMs`.
    #[napi]
    pub fn due_leaks<'env>(
        &self,
        env: &'env Env,
        provider: String,
        limit: JsNumber,
        lease_ms: JsNumber,
        now: JsNumber,
    ) -> Result<PromiseRaw<'env, Vec<DueLeakRecord>>> {
        let limit = whole("limit", limit, COUNT)?;
        let lease_ms = whole_unless_nullish("leaseMs", lease_ms, MILLIS)?;
        let now = whole("now", now, MILLIS)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            let due = backend.fleet().due_leaks(&provider, limit as usize, lease_ms, now).await.map_err(store_error)?;
            Ok(due.into_iter().map(DueLeakRecord::from).collect())
        })
    }

    /// A claimed entry failed again: attempts + 1, keep `message`, due at `nextAttemptAt`.
    #[napi]
    pub fn defer_leak<'env>(
        &self,
        env: &'env Env,
        entry: LeakRecord,
        message: String,
        failed_at: JsNumber,
        next_attempt_at: JsNumber,
    ) -> Result<PromiseRaw<'env, bool>> {
        let entry = LeakEntry::try_from(entry)?;
        let failed_at = whole("failedAt", failed_at, MILLIS)?;
        let next_attempt_at = whole("nextAttemptAt", next_attempt_at, MILLIS)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            backend.fleet().defer_leak(&entry, &message, failed_at, next_attempt_at).await.map_err(store_error)
        })
    }

    /// Takes `provider`'s orphan sweep for `holder` until `now + leaseMs`, unless another holds it.
    #[napi]
    pub fn claim_sweep<'env>(
        &self,
        env: &'env Env,
        provider: String,
        holder: String,
        lease_ms: JsNumber,
        now: JsNumber,
    ) -> Result<PromiseRaw<'env, bool>> {
        let lease_ms = whole("leaseMs", lease_ms, MILLIS)?;
        let now = whole("now", now, MILLIS)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            backend.fleet().claim_sweep(&provider, &holder, lease_ms, now).await.map_err(store_error)
        })
    }

    /// Gives `provider`'s sweep back, if `holder` still holds it.
    #[napi]
    pub fn release_sweep<'env>(
        &self,
        env: &'env Env,
        provider: String,
        holder: String,
    ) -> Result<PromiseRaw<'env, ()>> {
        let backend = self.backend.clone();
        spawn_coded(env, async move { backend.fleet().release_sweep(&provider, &holder).await.map_err(store_error) })
    }

    /// Appends audit rows, in order, in one transaction.
    #[napi]
    pub fn append_audit<'env>(&self, env: &'env Env, entries: Vec<AuditRecord>) -> Result<PromiseRaw<'env, ()>> {
        let entries = audit_entries(entries)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move { backend.fleet().append_audit(&entries).await.map_err(store_error) })
    }

    /// Audit rows with `at >= since`, oldest first, at most `limit`.
    #[napi]
    pub fn list_audit<'env>(
        &self,
        env: &'env Env,
        since: JsNumber,
        limit: JsNumber,
    ) -> Result<PromiseRaw<'env, Vec<AuditRecord>>> {
        let (since, limit) = audit_query(since, limit)?;
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            let entries = backend.fleet().list_audit(since, limit).await.map_err(store_error)?;
            Ok(entries.into_iter().map(AuditRecord::from).collect())
        })
    }

    /// Closes every pooled connection; later calls reject.
    #[napi]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let backend = self.backend.clone();
        spawn_coded(env, async move {
            backend.close().await;
            Ok(())
        })
    }

    /// The core store, for `retryLeaks` with a native provider.
    pub fn shared(&self) -> Arc<dyn SandboxInstanceStore> {
        self.backend.store()
    }
}
