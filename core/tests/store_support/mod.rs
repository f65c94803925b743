//! Shared helpers of the `store_*` test files: fresh stores per backend,
//! scripted providers, and the PostgreSQL URL.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use sandbox_reclaim::{
    InMemorySandboxInstanceStore, LeakLedger, PostgresOptions, PostgresSandboxInstanceStore, ProviderError,
    SandboxInstanceStore, SandboxProvider, SqliteSandboxInstanceStore,
};

/// The env var naming the test PostgreSQL (printed by `scripts/postgres.sh start DIR`).
pub const PG_URL_VAR: &str = "SANDBOX_RECLAIM_PG_URL";

/// The test PostgreSQL's URL. A missing one fails the test loudly: it is
/// never skipped.
pub fn pg_url() -> String {
    match std::env::var(PG_URL_VAR) {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "{PG_URL_VAR} is not set: the PostgreSQL store tests need a server. Start a throwaway one with \
             `export {PG_URL_VAR}=$(scripts/postgres.sh start /tmp/sandbox-reclaim-pg)` (make test does this)."
        ),
    }
}

/// A name no other test (or test process) uses: `prefix_pid_counter`.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}_{}_{}_{nanos}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// A path for a new SQLite file in a per-run temp directory.
pub fn temp_db_path(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join("sandbox-reclaim-store-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{}.db", unique(prefix)))
}

/// Removes a SQLite file and its WAL side files.
pub fn remove_db(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// Options placing the tables in a schema of their own.
pub fn pg_options(schema: &str) -> PostgresOptions {
    PostgresOptions { schema: schema.to_owned(), ..PostgresOptions::default() }
}

/// A store in a new schema.
pub async fn pg_store(schema: &str) -> PostgresSandboxInstanceStore {
    PostgresSandboxInstanceStore::connect(&pg_url(), pg_options(schema)).await.expect("connect to PostgreSQL")
}

/// Runs raw SQL on the test PostgreSQL (schema clean-up, fault triggers).
pub async fn pg_exec(sql: &str) {
    let pool = sqlx::postgres::PgPoolOptions::new().max_connections(1).connect(&pg_url()).await.unwrap();
    sqlx::raw_sql(sql).execute(&pool).await.unwrap_or_else(|error| panic!("{sql}: {error}"));
    pool.close().await;
}

/// Drops a test schema and everything in it.
pub async fn drop_schema(schema: &str) {
    pg_exec(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")).await;
}

/// Runs raw SQL on a SQLite file.
pub async fn sqlite_exec(path: &std::path::Path, sql: &str) {
    use sqlx::ConnectOptions;
    let mut connection = sqlx::sqlite::SqliteConnectOptions::new().filename(path).connect().await.unwrap();
    sqlx::raw_sql(sql).execute(&mut connection).await.unwrap_or_else(|error| panic!("{sql}: {error}"));
}

/// The stores under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Memory,
    Sqlite,
    Postgres,
}

/// A fresh, empty store of `backend`, and what to clean up afterwards.
pub struct Fresh {
    pub store: Arc<dyn SandboxInstanceStore>,
    cleanup: Cleanup,
}

enum Cleanup {
    Nothing,
    File(PathBuf),
    Schema(String),
}

impl Fresh {
    pub async fn new(backend: Backend) -> Self {
        match backend {
            Backend::Memory => {
                Self { store: Arc::new(InMemorySandboxInstanceStore::with_ledger()), cleanup: Cleanup::Nothing }
            }
            Backend::Sqlite => {
                let path = temp_db_path("store");
                let store = SqliteSandboxInstanceStore::open(&path).await.expect("open SQLite");
                Self { store: Arc::new(store), cleanup: Cleanup::File(path) }
            }
            Backend::Postgres => {
                let schema = unique("conf");
                Self { store: Arc::new(pg_store(&schema).await), cleanup: Cleanup::Schema(schema) }
            }
        }
    }

    pub fn ledger(&self) -> &dyn LeakLedger {
        self.store.leak_ledger().expect("store keeps a ledger")
    }

    pub async fn cleanup(self) {
        drop(self.store);
        match self.cleanup {
            Cleanup::Nothing => {}
            Cleanup::File(path) => remove_db(&path),
            Cleanup::Schema(schema) => drop_schema(&schema).await,
        }
    }
}

/// A provider whose destroy fails for chosen ids (or all), optionally takes
/// a while, and counts calls per id.
#[derive(Default)]
pub struct ScriptedProvider {
    pub name: String,
    pub fail_all: bool,
    pub fail_ids: Mutex<Vec<String>>,
    pub delay: Duration,
    pub calls: Mutex<HashMap<String, u32>>,
}

impl ScriptedProvider {
    pub fn new(name: &str) -> Self {
        Self { name: name.to_owned(), ..Self::default() }
    }

    pub fn failing(name: &str) -> Self {
        Self { name: name.to_owned(), fail_all: true, ..Self::default() }
    }

    pub fn calls(&self) -> HashMap<String, u32> {
        self.calls.lock().unwrap().clone()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("destroy of {0} failed: engine unreachable")]
pub struct EngineDown(pub String);

#[async_trait]
impl SandboxProvider for ScriptedProvider {
    fn name(&self) -> &str {
        &self.name
    }

    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError> {
        *self.calls.lock().unwrap().entry(provider_sandbox_id.to_owned()).or_default() += 1;
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let fails = self.fail_all || self.fail_ids.lock().unwrap().iter().any(|id| id == provider_sandbox_id);
        if fails {
            return Err(ProviderError::backend(EngineDown(provider_sandbox_id.to_owned())));
        }
        Ok(())
    }
}
