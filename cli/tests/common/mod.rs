//! What the CLI tests share: running the built binary as a process, a store
//! per test (a SQLite file, or a PostgreSQL schema of its own), and real
//! LocalProvider sandboxes created through the core's API.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sandbox_reclaim::{
    FleetStore, LeakLedger, LeakReason, LocalConfig, LocalProvider, ManagedSandboxProvider, NewLeak, PostgresOptions,
    PostgresSandboxInstanceStore, SandboxInstanceRecord, SandboxInstanceStore, SqliteSandboxInstanceStore,
};
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_sandbox-reclaim");
pub const PG_URL_VAR: &str = "SANDBOX_RECLAIM_PG_URL";

/// Where a test's store lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

// The one "needs a service" rule, shared with the core's tests.
#[path = "../../../core/tests/service_support/mod.rs"]
mod service_support;

/// The PostgreSQL URL, or `None` (the test is skipped, saying so) outside CI.
/// Under CI a missing server fails the test: it must never be skipped there.
pub fn pg_url() -> Option<String> {
    service_support::needs_env(
        PG_URL_VAR,
        "the PostgreSQL CLI tests need a server (`source scripts/lib.sh; start_services DIR` starts one)",
    )
}

/// `DOCKER_HOST`, or `None` (skipped, saying so) outside CI; under CI its absence fails.
pub fn docker_host() -> Option<String> {
    service_support::needs_env("DOCKER_HOST", "the podman CLI test needs a Docker Engine API (scripts/podman.sh)")
}

/// One test's world: a temp dir with the LocalProvider base dir, a store and
/// the flags that point the command at both.
pub struct World {
    pub dir: tempfile::TempDir,
    pub backend: Backend,
    pub store_flags: Vec<String>,
    pub pg: Option<(String, String)>,
    pub owner: String,
}

static WORLDS: AtomicU32 = AtomicU32::new(0);

impl World {
    /// `None` when the backend is unavailable outside CI (skipped).
    pub fn new(backend: Backend) -> Option<Self> {
        let dir = tempfile::Builder::new().prefix("sandbox-reclaim-cli-").tempdir().expect("temp dir");
        let serial = WORLDS.fetch_add(1, Ordering::SeqCst);
        let owner = format!("cli-test-{}-{serial}", std::process::id());
        let (store_flags, pg) = match backend {
            Backend::Sqlite => (vec![format!("--store=sqlite:{}", dir.path().join("store.db").display())], None),
            Backend::Postgres => {
                let url = pg_url()?;
                let schema =
                    format!("cli_{}_{serial}_{}", std::process::id(), sandbox_reclaim::runtime::clock::now_millis());
                (vec![format!("--store={url}"), format!("--pg-schema={schema}")], Some((url, schema)))
            }
        };
        Some(Self { dir, backend, store_flags, pg, owner })
    }

    pub fn base_dir(&self) -> PathBuf {
        self.dir.path().join("local")
    }

    /// `--store ... --local BASE --owner OWNER`, then `args`.
    pub fn args(&self, args: &[&str]) -> Vec<String> {
        let mut all: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
        all.extend(self.store_flags.iter().cloned());
        all.push(format!("--local={}", self.base_dir().display()));
        all.push(format!("--owner={}", self.owner));
        all
    }

    /// Runs the command to its end (at most 120 s).
    pub fn run(&self, args: &[&str]) -> Run {
        run(&self.args(args))
    }

    /// The store, opened from the test (as another process would).
    pub async fn store(&self) -> TestStore {
        match &self.pg {
            None => TestStore::Sqlite(
                SqliteSandboxInstanceStore::open(self.dir.path().join("store.db")).await.expect("open sqlite store"),
            ),
            Some((url, schema)) => {
                let options = PostgresOptions { schema: schema.clone(), ..PostgresOptions::default() };
                TestStore::Postgres(
                    PostgresSandboxInstanceStore::connect(url, options).await.expect("connect postgres"),
                )
            }
        }
    }

    pub fn provider(&self) -> LocalProvider {
        self.provider_owned_by(&self.owner)
    }

    pub fn provider_owned_by(&self, owner: &str) -> LocalProvider {
        let mut config = LocalConfig::new(self.base_dir());
        config.owner = owner.to_owned();
        LocalProvider::new(config).expect("local provider")
    }

    /// Sandbox directories under the base dir.
    pub fn sandbox_dirs(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.base_dir())
            .map(|entries| {
                entries
                    .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                    .filter(|name| !name.starts_with('.'))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // Leave no sandbox process behind, whatever the test did.
        if let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
            let base = self.base_dir();
            let owners = [self.owner.clone(), format!("{}-stranger", self.owner)];
            let pg = self.pg.clone();
            runtime.block_on(async move {
                for owner in owners {
                    let mut config = LocalConfig::new(&base);
                    config.owner = owner;
                    if let Ok(provider) = LocalProvider::new(config) {
                        for handle in provider.list().await.unwrap_or_default() {
                            let _ = sandbox_reclaim::SandboxProvider::destroy(&provider, &handle.id).await;
                        }
                    }
                }
                if let Some((url, schema)) = pg {
                    use sqlx::Connection;
                    if let Ok(mut connection) = sqlx::PgConnection::connect(&url).await {
                        let _ = sqlx::query(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                            .execute(&mut connection)
                            .await;
                    }
                }
            });
        }
    }
}

pub enum TestStore {
    Sqlite(SqliteSandboxInstanceStore),
    Postgres(PostgresSandboxInstanceStore),
}

impl TestStore {
    pub fn fleet(&self) -> &dyn FleetStore {
        match self {
            Self::Sqlite(store) => store,
            Self::Postgres(store) => store,
        }
    }
    pub fn ledger(&self) -> &dyn LeakLedger {
        match self {
            Self::Sqlite(store) => store,
            Self::Postgres(store) => store,
        }
    }
    pub fn instances(&self) -> &dyn SandboxInstanceStore {
        match self {
            Self::Sqlite(store) => store,
            Self::Postgres(store) => store,
        }
    }

    /// A record referencing `sandbox_id` (so the sweep spares it).
    pub async fn add_record(&self, key: &str, provider: &str, sandbox_id: &str) {
        let record = SandboxInstanceRecord {
            key: key.to_owned(),
            provider: provider.to_owned(),
            provider_sandbox_id: sandbox_id.to_owned(),
            latest_snapshot_id: None,
            thread_id: format!("thread-{key}"),
            latest_run_id: Some(format!("run-{key}")),
            updated_at: sandbox_reclaim::runtime::clock::now_millis(),
        };
        self.instances().upsert(&record).await.expect("upsert record");
    }

    /// A ledger entry for `sandbox_id`, due at `next_attempt_at`.
    pub async fn add_leak(
        &self,
        key: &str,
        provider: &str,
        sandbox_id: &str,
        reason: LeakReason,
        next_attempt_at: u64,
    ) {
        let leak = NewLeak {
            key: key.to_owned(),
            provider: provider.to_owned(),
            provider_sandbox_id: sandbox_id.to_owned(),
            run_id: format!("run-{key}"),
            error_message: "simulated: destroy failed".to_owned(),
            failed_at: sandbox_reclaim::runtime::clock::now_millis().saturating_sub(60_000),
        };
        self.fleet().record_leak(leak, reason, next_attempt_at).await.expect("record leak");
    }

    pub async fn close(&self) {
        match self {
            Self::Sqlite(store) => store.close().await,
            Self::Postgres(store) => store.close().await,
        }
    }
}

/// Creates `count` running sandboxes for keys `{prefix}-{n}`; answers their ids.
pub async fn create_sandboxes(provider: &LocalProvider, prefix: &str, count: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for n in 0..count {
        let handle = provider.create(&format!("{prefix}-{n}"), &Default::default()).await.expect("create sandbox");
        ids.push(handle.id);
    }
    ids
}

/// A finished run of the command.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout as the one JSON document `--json` prints.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|error| panic!("stdout is not one JSON document ({error}):\n{self}"))
    }

    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "expected exit code {code}:\n{self}");
        self
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "exit {}\n--- stdout\n{}\n--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

pub fn command(args: &[String]) -> Command {
    let mut command = Command::new(BIN);
    command.args(args).env_remove("SANDBOX_RECLAIM_STORE").env_remove("SANDBOX_RECLAIM_CONFIG").env_remove("RUST_LOG");
    command
}

/// Runs the binary to its end, killing it after 120 s.
pub fn run(args: &[String]) -> Run {
    let mut child = command(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sandbox-reclaim");
    let stdout = drain(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let status = wait_with_timeout(&mut child, Duration::from_secs(120));
    Run { code: status, stdout: stdout.join().expect("stdout reader"), stderr: stderr.join().expect("stderr reader") }
}

fn drain(mut stream: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stream.read_to_string(&mut text);
        text
    })
}

/// Waits for `child`; kills it (and fails) after `timeout`. Answers the exit code.
pub fn wait_with_timeout(child: &mut Child, timeout: Duration) -> i32 {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status.code().unwrap_or_else(|| panic!("killed by a signal: {status:?}"));
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            panic!("sandbox-reclaim still running after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running command whose output lines are collected as they come.
pub struct Running {
    pub child: Child,
    pub stdout: Arc<Mutex<Vec<String>>>,
    pub stderr: Arc<Mutex<Vec<String>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Running {
    pub fn spawn(args: &[String]) -> Self {
        let mut child = command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sandbox-reclaim");
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let readers = vec![
            lines_into(child.stdout.take().expect("stdout"), stdout.clone()),
            lines_into(child.stderr.take().expect("stderr"), stderr.clone()),
        ];
        Self { child, stdout, stderr, readers }
    }

    /// Sends SIGTERM (through `kill`, so the tests need no unsafe code).
    pub fn terminate(&self) {
        let status = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status().expect("run kill");
        assert!(status.success(), "kill -TERM failed");
    }

    /// Waits until a line of stderr satisfies `found`, at most `timeout`.
    pub fn wait_for_stderr(&self, timeout: Duration, found: impl Fn(&str) -> bool) -> Option<String> {
        wait_for_line(&self.stderr, timeout, found)
    }

    pub fn wait_for_stdout(&self, timeout: Duration, found: impl Fn(&str) -> bool) -> Option<String> {
        wait_for_line(&self.stdout, timeout, found)
    }

    /// Waits for the exit (at most `timeout`); answers the code and all output.
    pub fn finish(mut self, timeout: Duration) -> Run {
        let code = wait_with_timeout(&mut self.child, timeout);
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        let join = |lines: &Arc<Mutex<Vec<String>>>| lines.lock().expect("lines").join("\n");
        Run { code, stdout: join(&self.stdout), stderr: join(&self.stderr) }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

fn lines_into(stream: impl Read + Send + 'static, lines: Arc<Mutex<Vec<String>>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            lines.lock().expect("lines").push(line);
        }
    })
}

fn wait_for_line(lines: &Arc<Mutex<Vec<String>>>, timeout: Duration, found: impl Fn(&str) -> bool) -> Option<String> {
    let started = Instant::now();
    while started.elapsed() < timeout {
        if let Some(line) = lines.lock().expect("lines").iter().find(|line| found(line)) {
            return Some(line.clone());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Whether the sandbox directory `id` still exists.
pub fn exists(base: &Path, id: &str) -> bool {
    base.join(id).exists()
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}
