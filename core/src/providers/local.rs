//! [`LocalProvider`]: sandboxes without a daemon. A sandbox is a private
//! directory under a base directory plus a supervised process tree.
//!
//! Where the process may create namespaces (root, or unprivileged user
//! namespaces), the tree runs in new PID, mount, network, IPC and UTS
//! namespaces with only a loopback interface ([`Isolation::Namespaces`]):
//! `util-linux`'s `unshare` starts it and `nsenter` runs `exec`'d commands in
//! it. Otherwise it is a plain process group ([`Isolation::ProcessGroup`]);
//! [`LocalProvider::isolation`] reports which and
//! [`LocalProvider::fallback_reason`] says why.
//!
//! Layout of a sandbox directory `<base>/<id>/`:
//! - `owner.json`: owner namespace, key, creation time, labels, isolation,
//!   and the recorded processes (pid + start time, so a recycled pid is never
//!   killed);
//! - `work/`: the working directory of every process in the sandbox;
//! - `supervisor.log`: the supervisor's stderr, quoted in errors.
//!
//! Every sandbox process also carries `SANDBOX_RECLAIM_DIR=<dir>` in its
//! environment, so `destroy` finds strays (a process-group sandbox's child that
//! left the group, or a process started before its pid was recorded).

mod procfs;

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{
    sandbox_name, validate_argv, validate_id, validate_key, validate_labels, validate_owner, ExecOutput, InvalidInput,
    Labels, ManagedSandboxProvider, SandboxHandle, DEFAULT_OWNER,
};
use crate::contract::errors::ProviderError;
use crate::contract::SandboxProvider;
use crate::model::fleet::ListedSandbox;
use crate::report::messages;
use crate::runtime::clock::now_millis;
use procfs::ProcessId;

/// The environment variable naming a process's sandbox directory.
pub const DIR_ENV: &str = "SANDBOX_RECLAIM_DIR";
const OWNER_FILE: &str = "owner.json";
const WORK_DIR: &str = "work";
const LOG_FILE: &str = "supervisor.log";
const READY_FILE: &str = ".ready";

// Runs as the PID namespace's init: loopback up, a sysfs that shows this
// network namespace (so /sys/class/net lists only `lo`), readiness, then the
// keep-alive command.
const NAMESPACE_INIT: &str = r#"ip link set lo up || echo "sandbox init: could not bring lo up" >&2
mount -t sysfs sysfs /sys 2>/dev/null || true
command -v "$1" >/dev/null || { echo "keep-alive command not found: $1" >&2; exit 127; }
: > "$SANDBOX_RECLAIM_DIR/.ready"
exec "$@""#;

/// Which isolation a [`LocalProvider`] should use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsolationRequest {
    /// Namespaces when possible, else a process group.
    #[default]
    Auto,
    /// Namespaces or fail at construction.
    Namespaces,
    /// A plain process group even where namespaces are possible.
    ProcessGroup,
}

impl IsolationRequest {
    /// The request as the bindings spell it: `auto`, `namespaces` or
    /// `process-group`; anything else is refused naming `field` (as the host
    /// spells it) with [`messages::isolation_choices`].
    pub fn parse(request: &str, field: &str) -> Result<Self, String> {
        match request {
            "auto" => Ok(Self::Auto),
            "namespaces" => Ok(Self::Namespaces),
            "process-group" => Ok(Self::ProcessGroup),
            other => Err(messages::isolation_choices(field, other)),
        }
    }
}

/// The isolation a [`LocalProvider`] actually uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// New PID, mount, network (loopback only), IPC and UTS namespaces.
    Namespaces,
    /// A process group in the host's namespaces: no network or filesystem
    /// isolation, only a private working directory and group-wide kill.
    ProcessGroup,
}

impl Isolation {
    /// `"namespaces"` or `"process-group"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Namespaces => "namespaces",
            Self::ProcessGroup => "process-group",
        }
    }
}

/// Where a [`LocalProvider`] keeps its sandboxes and what they run.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalConfig {
    /// Directory holding one subdirectory per sandbox; created if missing.
    /// Default `<temp dir>/sandbox-reclaim`.
    pub base_dir: PathBuf,
    /// Owner namespace written to each sandbox's owner file; only sandboxes
    /// carrying it are listed, exec'd into or destroyed. Default [`DEFAULT_OWNER`].
    pub owner: String,
    /// Command that keeps the sandbox alive. Default `["sleep", "infinity"]`.
    pub keep_alive: Vec<String>,
    /// Requested isolation. Default [`IsolationRequest::Auto`].
    pub isolation: IsolationRequest,
    /// How long `destroy` waits for the processes to die. Default 10 s.
    pub stop_timeout: Duration,
    /// The provider name instance records carry. Default `"local"`.
    pub name: String,
}

impl Default for LocalConfig {
    fn default() -> Self {
        Self {
            base_dir: std::env::temp_dir().join("sandbox-reclaim"),
            owner: DEFAULT_OWNER.into(),
            keep_alive: vec!["sleep".into(), "infinity".into()],
            isolation: IsolationRequest::Auto,
            stop_timeout: Duration::from_secs(10),
            name: "local".into(),
        }
    }
}

impl LocalConfig {
    /// The defaults, with sandboxes under `base_dir`.
    pub fn new(base_dir: impl Into<PathBuf>) -> Self {
        Self { base_dir: base_dir.into(), ..Self::default() }
    }

    fn validate(&self) -> Result<(), InvalidInput> {
        if self.base_dir.as_os_str().is_empty() {
            return Err(InvalidInput::new("baseDir", "must be a non-empty path"));
        }
        validate_owner(&self.owner)?;
        validate_argv("keepAlive", &self.keep_alive)?;
        if self.stop_timeout.is_zero() {
            return Err(InvalidInput::new("stopTimeout", "must be positive"));
        }
        if self.name.is_empty() {
            return Err(InvalidInput::new("name", "must be a non-empty string"));
        }
        Ok(())
    }
}

/// A failure of the local provider's machinery (file system, process spawn,
/// a process that would not die), with what it was doing.
#[derive(Debug, thiserror::Error)]
#[error("local sandbox: {action}: {message}")]
pub struct LocalError {
    /// What the provider was doing.
    pub action: String,
    /// What went wrong.
    pub message: String,
}

fn local_error(action: impl Into<String>, message: impl std::fmt::Display) -> ProviderError {
    ProviderError::backend(LocalError { action: action.into(), message: message.to_string() })
}

/// What a sandbox directory's `owner.json` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerRecord {
    owner: String,
    key: String,
    created_at: u64,
    #[serde(default)]
    labels: Labels,
    isolation: Isolation,
    /// Whether the namespaces include a user namespace (unprivileged mode).
    #[serde(default)]
    user_namespace: bool,
    /// The process the provider spawned: `unshare`, or the keep-alive
    /// command itself in process-group mode. It leads the process group.
    #[serde(default)]
    supervisor: Option<ProcessId>,
    /// The PID namespace's init (namespace mode): `exec` enters its namespaces.
    #[serde(default)]
    init: Option<ProcessId>,
}

/// Sandboxes as directories plus supervised process trees; see the
/// [module docs](self).
#[derive(Debug)]
pub struct LocalProvider {
    config: LocalConfig,
    base_dir: PathBuf,
    isolation: Isolation,
    user_namespace: bool,
    fallback_reason: Option<String>,
}

impl LocalProvider {
    /// A provider for `config`: creates the base directory and probes (once,
    /// with a throwaway `unshare`) whether namespaces are available.
    pub fn new(config: LocalConfig) -> Result<Self, ProviderError> {
        config.validate()?;
        create_private_dir_all(&config.base_dir)
            .map_err(|error| local_error(format!("create base directory {}", config.base_dir.display()), error))?;
        let base_dir = config
            .base_dir
            .canonicalize()
            .map_err(|error| local_error(format!("resolve base directory {}", config.base_dir.display()), error))?;
        // SAFETY: geteuid(2) has no preconditions and cannot fail.
        let user_namespace = unsafe { libc::geteuid() } != 0;
        let (isolation, fallback_reason) = match config.isolation {
            IsolationRequest::ProcessGroup => {
                (Isolation::ProcessGroup, Some("process-group isolation was requested".into()))
            }
            request => match probe_namespaces(user_namespace) {
                Ok(()) => (Isolation::Namespaces, None),
                Err(reason) if request == IsolationRequest::Auto => (Isolation::ProcessGroup, Some(reason)),
                Err(reason) => return Err(local_error("namespaces were requested but are unavailable", reason)),
            },
        };
        Ok(Self { config, base_dir, isolation, user_namespace, fallback_reason })
    }

    /// The isolation new sandboxes get.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Why the provider runs plain process groups, when it does.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// The (canonical) directory holding the sandboxes.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    /// The configuration this provider was built with.
    pub fn config(&self) -> &LocalConfig {
        &self.config
    }

    /// The directory of sandbox `id` (whether or not it exists).
    pub fn sandbox_dir(&self, id: &str) -> Result<PathBuf, InvalidInput> {
        validate_id(id)?;
        Ok(self.base_dir.join(id))
    }

    /// The ownership guard: reads `dir`'s owner file. `Ok(None)` when the
    /// sandbox is gone; `NotOwned` when it is someone else's.
    async fn owned_record(&self, id: &str, dir: &Path) -> Result<Option<OwnerRecord>, ProviderError> {
        // A concurrent destroy may be deleting the directory: give it a moment
        // to finish before calling an owner-less directory a stranger's.
        for _ in 0..20 {
            match read_owner(dir) {
                Ok(record) if record.owner == self.config.owner => return Ok(Some(record)),
                Ok(record) => {
                    return Err(ProviderError::NotOwned {
                        id: id.to_string(),
                        reason: format!("its owner is `{}`, not `{}`", record.owner, self.config.owner),
                    })
                }
                Err(error) if error.kind() == ErrorKind::NotFound => {
                    if !dir.exists() {
                        return Ok(None);
                    }
                }
                Err(error) => {
                    return Err(ProviderError::NotOwned {
                        id: id.to_string(),
                        reason: format!("its {OWNER_FILE} is unreadable: {error}"),
                    })
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Still there after 200 ms and still without an owner file: not ours.
        Err(ProviderError::NotOwned { id: id.to_string(), reason: format!("{} has no {OWNER_FILE}", dir.display()) })
    }

    /// Moves a fully written sandbox directory into place, or reports the
    /// sandbox a concurrent create for the same key put there first.
    async fn claim_dir(&self, name: &str, key: &str, labels: &Labels) -> Result<Claim, ProviderError> {
        let dir = self.base_dir.join(name);
        if let Some(record) = self.owned_record(name, &dir).await? {
            return existing_for_key(name, key, record).map(Claim::Existing);
        }
        let record = OwnerRecord {
            owner: self.config.owner.clone(),
            key: key.to_string(),
            created_at: now_millis(),
            labels: labels.clone(),
            isolation: self.isolation,
            user_namespace: self.user_namespace && self.isolation == Isolation::Namespaces,
            supervisor: None,
            init: None,
        };
        // Written aside and renamed in, so a sandbox directory always has an
        // owner file: a crash mid-create leaves a `.creating-*` to sweep, never
        // an owner-less directory that `destroy` would have to refuse.
        let staging = self.base_dir.join(format!(".creating-{name}-{}-{}", std::process::id(), next_nonce()));
        let prepared = create_private_dir_all(&staging.join(WORK_DIR)).and_then(|()| write_owner(&staging, &record));
        if let Err(error) = prepared {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(local_error(format!("prepare {}", staging.display()), error));
        }
        match std::fs::rename(&staging, &dir) {
            Ok(()) => Ok(Claim::New(record)),
            Err(error) => {
                let _ = std::fs::remove_dir_all(&staging);
                // Lost a race with a create for the same key: answer with its sandbox.
                match self.owned_record(name, &dir).await? {
                    Some(existing) => existing_for_key(name, key, existing).map(Claim::Existing),
                    None => Err(local_error(format!("create {}", dir.display()), error)),
                }
            }
        }
    }

    /// Starts the sandbox's processes and records them in its owner file.
    async fn start(&self, dir: &Path, record: &mut OwnerRecord) -> Result<(), ProviderError> {
        let log = std::fs::File::create(dir.join(LOG_FILE))
            .map_err(|error| local_error(format!("create {}", dir.join(LOG_FILE).display()), error))?;
        let mut command = match record.isolation {
            Isolation::Namespaces => {
                let mut command = tokio::process::Command::new("unshare");
                command.args(unshare_flags(record.user_namespace)).args([
                    "--",
                    "sh",
                    "-c",
                    NAMESPACE_INIT,
                    "sandbox-init",
                ]);
                command.args(&self.config.keep_alive);
                command
            }
            Isolation::ProcessGroup => {
                let mut command = tokio::process::Command::new(&self.config.keep_alive[0]);
                command.args(&self.config.keep_alive[1..]);
                command
            }
        };
        command
            .current_dir(dir.join(WORK_DIR))
            .env(DIR_ENV, dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .process_group(0)
            .kill_on_drop(false);
        let program = match record.isolation {
            Isolation::Namespaces => "unshare",
            Isolation::ProcessGroup => &self.config.keep_alive[0],
        };
        let mut child = command.spawn().map_err(|error| local_error(format!("spawn `{program}`"), error))?;
        let supervisor = child.id().and_then(|pid| ProcessId::of(pid as i32));
        // Reap the supervisor whenever it ends, so it never lingers as a zombie.
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        let Some(supervisor) = supervisor else {
            return Err(local_error("start the sandbox", format!("the supervisor exited at once: {}", read_log(dir))));
        };
        record.supervisor = Some(supervisor);
        if record.isolation == Isolation::Namespaces {
            record.init = Some(wait_for_init(dir, supervisor).await?);
        } else {
            record.init = Some(supervisor);
        }
        write_owner(dir, record).map_err(|error| local_error(format!("record processes in {}", dir.display()), error))
    }
}

/// One sandbox directory found by [`LocalProvider::scan`].
struct ScannedDir {
    /// What its owner file says, field by field; unknown fields are `None`.
    listed: ListedSandbox,
    /// Whether the whole owner file parsed (what `destroy` and `exec` need).
    intact: bool,
}

impl LocalProvider {
    /// Reads the base directory once and the owner file of every sandbox
    /// directory in it (any owner), off the async runtime.
    async fn scan(&self) -> Result<Vec<ScannedDir>, ProviderError> {
        let base_dir = self.base_dir.clone();
        blocking(move || scan_base_dir(&base_dir))
            .await?
            .map_err(|error| local_error(format!("list {}", self.base_dir.display()), error))
    }
}

fn scan_base_dir(base_dir: &Path) -> std::io::Result<Vec<ScannedDir>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(base_dir)? {
        let entry = entry?;
        // Staging (`.creating-*`) and anything `destroy` could not be handed
        // are not sandboxes; neither are plain files.
        let Some(id) = entry.file_name().to_str().map(str::to_string) else { continue };
        if id.starts_with('.') || validate_id(&id).is_err() || !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue;
        }
        let dir = entry.path();
        let bytes = match std::fs::read(dir.join(OWNER_FILE)) {
            Ok(bytes) => Some(bytes),
            // Removed since the directory was read: a finished destroy.
            Err(error) if error.kind() == ErrorKind::NotFound && !dir.exists() => continue,
            Err(_) => None,
        };
        let (fields, intact) = match bytes.as_deref().map(serde_json::from_slice::<serde_json::Value>) {
            Some(Ok(value)) => (OwnerFields::of(&value), serde_json::from_value::<OwnerRecord>(value).is_ok()),
            _ => (OwnerFields::default(), false),
        };
        let listed =
            ListedSandbox { id, created_at: fields.created_at, owner: fields.owner, key: fields.key, deleting: false };
        found.push(ScannedDir { listed, intact });
    }
    Ok(found)
}

/// The fields of an owner file the sweep needs, each read on its own so one
/// corrupt field does not hide the others.
#[derive(Default)]
struct OwnerFields {
    owner: Option<String>,
    key: Option<String>,
    created_at: Option<u64>,
}

impl OwnerFields {
    fn of(value: &serde_json::Value) -> Self {
        let text = |field: &str| value.get(field).and_then(serde_json::Value::as_str).map(str::to_string);
        Self {
            owner: text("owner"),
            key: text("key"),
            created_at: value.get("createdAt").and_then(serde_json::Value::as_u64),
        }
    }
}

enum Claim {
    New(OwnerRecord),
    Existing(SandboxHandle),
}

fn existing_for_key(id: &str, key: &str, record: OwnerRecord) -> Result<SandboxHandle, ProviderError> {
    if record.key != key {
        return Err(ProviderError::NotOwned {
            id: id.to_string(),
            reason: format!("it was created for another key, not `{key}`"),
        });
    }
    Ok(SandboxHandle { key: record.key, id: id.to_string(), created_at: record.created_at })
}

/// Waits for the PID namespace's init to appear and run its setup.
async fn wait_for_init(dir: &Path, supervisor: ProcessId) -> Result<ProcessId, ProviderError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut init = None;
    loop {
        if init.is_none() {
            init = procfs::children(supervisor.pid).first().and_then(|&pid| ProcessId::of(pid));
        }
        if let Some(init) = init {
            if dir.join(READY_FILE).exists() {
                return Ok(init);
            }
        }
        if !supervisor.is_running() || Instant::now() > deadline {
            let _ = kill_tree(dir, Some(supervisor), init, Duration::from_secs(5));
            return Err(local_error("start the namespaced sandbox", read_log(dir)));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn unshare_flags(user_namespace: bool) -> Vec<&'static str> {
    let mut flags = vec!["--pid", "--fork", "--mount-proc", "--net", "--ipc", "--uts", "--kill-child"];
    if user_namespace {
        flags.extend(["--user", "--map-root-user"]);
    }
    flags
}

/// Tries the exact namespaces a sandbox gets, plus `nsenter`, once.
fn probe_namespaces(user_namespace: bool) -> Result<(), String> {
    let probe = std::process::Command::new("unshare")
        .args(unshare_flags(user_namespace))
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output();
    match probe {
        Ok(output) if output.status.success() => {}
        Ok(output) => {
            return Err(format!(
                "`unshare` failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
        Err(error) => return Err(format!("cannot run `unshare` (util-linux): {error}")),
    }
    match std::process::Command::new("nsenter").arg("--version").stdout(Stdio::null()).status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("`nsenter --version` failed ({status})")),
        Err(error) => Err(format!("cannot run `nsenter` (util-linux): {error}")),
    }
}

/// Kills every process of the sandbox in `dir` and waits until none runs.
///
/// Namespace mode: killing the PID namespace's init makes the kernel kill
/// everything inside it. Process-group mode: the group is killed. In both,
/// any process still carrying the sandbox's [`DIR_ENV`] entry is killed too.
/// Recorded processes are checked by start time, so a recycled pid is spared.
fn kill_tree(
    dir: &Path,
    supervisor: Option<ProcessId>,
    init: Option<ProcessId>,
    timeout: Duration,
) -> Result<(), String> {
    let mut marker = format!("{DIR_ENV}=").into_bytes();
    marker.extend_from_slice(dir.as_os_str().as_encoded_bytes());
    let own_pid = std::process::id() as i32;
    let deadline = Instant::now() + timeout;
    loop {
        let mut running = Vec::new();
        for process in [init, supervisor].into_iter().flatten() {
            if process.is_running() {
                if Some(process) == supervisor {
                    procfs::kill(-process.pid);
                }
                procfs::kill(process.pid);
                running.push(process.pid);
            }
        }
        for pid in procfs::all_pids() {
            if pid != own_pid
                && procfs::stat(pid).is_some_and(|stat| stat.is_running())
                && procfs::has_env_entry(pid, &marker)
            {
                procfs::kill(pid);
                running.push(pid);
            }
        }
        if running.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            running.sort_unstable();
            running.dedup();
            return Err(format!("processes {running:?} still run {} s after SIGKILL", timeout.as_secs_f32()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Removes `dir`, tolerating a concurrent removal of the same tree.
fn remove_dir(dir: &Path) -> std::io::Result<()> {
    let mut last = Ok(());
    for _ in 0..5 {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return Ok(()),
            Err(error) if error.kind() == ErrorKind::NotFound && !dir.exists() => return Ok(()),
            Err(error) => last = Err(error),
        }
    }
    last
}

fn read_owner(dir: &Path) -> std::io::Result<OwnerRecord> {
    let bytes = std::fs::read(dir.join(OWNER_FILE))?;
    serde_json::from_slice(&bytes).map_err(|error| std::io::Error::new(ErrorKind::InvalidData, error))
}

/// Writes `owner.json` atomically (temp file + rename).
fn write_owner(dir: &Path, record: &OwnerRecord) -> std::io::Result<()> {
    let temp = dir.join(format!(".{OWNER_FILE}.{}-{}", std::process::id(), next_nonce()));
    let json = serde_json::to_vec_pretty(record).map_err(|error| std::io::Error::new(ErrorKind::InvalidData, error))?;
    std::fs::write(&temp, json)?;
    std::fs::rename(&temp, dir.join(OWNER_FILE)).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

fn read_log(dir: &Path) -> String {
    let log = std::fs::read_to_string(dir.join(LOG_FILE)).unwrap_or_default();
    match log.trim() {
        "" => "the supervisor exited without a message".into(),
        text => text.to_string(),
    }
}

fn create_private_dir_all(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

fn next_nonce() -> u64 {
    static NONCE: AtomicU64 = AtomicU64::new(0);
    NONCE.fetch_add(1, Ordering::Relaxed)
}

fn exit_code(status: ExitStatus) -> i64 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => i64::from(code),
        (None, Some(signal)) => 128 + i64::from(signal),
        (None, None) => -1,
    }
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, ProviderError> {
    tokio::task::spawn_blocking(work).await.map_err(|error| local_error("run a blocking task", error))
}

#[async_trait]
impl SandboxProvider for LocalProvider {
    fn name(&self) -> &str {
        &self.config.name
    }

    /// Kills the sandbox's whole process tree, waits for it, and removes its
    /// directory. A sandbox that does not exist is success; one whose owner
    /// file names another owner (or is missing) is refused with `NotOwned`.
    async fn destroy(&self, id: &str) -> Result<(), ProviderError> {
        let dir = self.sandbox_dir(id)?;
        let Some(record) = self.owned_record(id, &dir).await? else { return Ok(()) };
        let timeout = self.config.stop_timeout;
        let killed_dir = dir.clone();
        blocking(move || kill_tree(&killed_dir, record.supervisor, record.init, timeout))
            .await?
            .map_err(|message| local_error(format!("destroy {id}"), message))?;
        let removed_dir = dir.clone();
        blocking(move || remove_dir(&removed_dir))
            .await?
            .map_err(|error| local_error(format!("remove {}", dir.display()), error))
    }

    fn can_list(&self) -> bool {
        true
    }

    /// The configured owner namespace: the orphan sweep destroys only
    /// sandboxes listed under it, whatever the pass's `owner` option says.
    fn owner(&self) -> Option<&str> {
        Some(&self.config.owner)
    }

    /// Every sandbox directory whose owner file names this provider's owner,
    /// from one scan of the base directory. Unlike
    /// [`ManagedSandboxProvider::list`], nothing unreadable is dropped: a
    /// missing or unparsable `createdAt` (or `key`) is `None`, and a directory
    /// whose owner cannot be read at all is listed with `owner: None`, so the
    /// sweep fails closed instead of missing it. Ordered by id.
    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        let owner = self.config.owner.as_str();
        let mut listed: Vec<ListedSandbox> = self
            .scan()
            .await?
            .into_iter()
            .map(|scanned| scanned.listed)
            .filter(|listed| listed.owner.as_deref().is_none_or(|listed_owner| listed_owner == owner))
            .collect();
        listed.sort_by(|left, right| left.id.cmp(&right.id));
        Ok(listed)
    }
}

#[async_trait]
impl ManagedSandboxProvider for LocalProvider {
    async fn create(&self, key: &str, labels: &Labels) -> Result<SandboxHandle, ProviderError> {
        validate_key(key)?;
        validate_labels(labels)?;
        let name = sandbox_name(&self.config.owner, key);
        let mut record = match self.claim_dir(&name, key, labels).await? {
            Claim::Existing(handle) => return Ok(handle),
            Claim::New(record) => record,
        };
        let dir = self.base_dir.join(&name);
        if let Err(error) = self.start(&dir, &mut record).await {
            // Leave nothing behind: not the processes, not the directory.
            let cleanup = dir.clone();
            let _ = blocking(move || {
                let _ = kill_tree(&cleanup, record.supervisor, record.init, Duration::from_secs(5));
                remove_dir(&cleanup)
            })
            .await;
            return Err(error);
        }
        Ok(SandboxHandle { key: key.to_string(), id: name, created_at: record.created_at })
    }

    async fn list(&self) -> Result<Vec<SandboxHandle>, ProviderError> {
        let mut handles: Vec<SandboxHandle> = self
            .scan()
            .await?
            .into_iter()
            // Unreadable or foreign directories are not ours to report.
            .filter(|scanned| scanned.intact && scanned.listed.owner.as_deref() == Some(self.config.owner.as_str()))
            .filter_map(|ScannedDir { listed, .. }| {
                Some(SandboxHandle { key: listed.key?, id: listed.id, created_at: listed.created_at? })
            })
            .collect();
        handles.sort_by(|left, right| left.created_at.cmp(&right.created_at).then_with(|| left.key.cmp(&right.key)));
        Ok(handles)
    }

    async fn exec(&self, id: &str, argv: &[String]) -> Result<ExecOutput, ProviderError> {
        let dir = self.sandbox_dir(id)?;
        validate_argv("argv", argv)?;
        let Some(record) = self.owned_record(id, &dir).await? else {
            return Err(local_error(format!("exec in {id}"), "no such sandbox"));
        };
        let work = dir.join(WORK_DIR);
        let mut command = match record.isolation {
            Isolation::Namespaces => {
                let init = record.init.filter(|init| init.is_running());
                let Some(init) = init else {
                    return Err(local_error(format!("exec in {id}"), "the sandbox is not running"));
                };
                let mut command = tokio::process::Command::new("nsenter");
                command.arg("-t").arg(init.pid.to_string()).args(["-p", "-n", "-m", "-i", "-u"]);
                if record.user_namespace {
                    command.args(["-U", "--preserve-credentials"]);
                }
                command.arg(format!("--wd={}", work.display())).arg("--").args(argv);
                command
            }
            Isolation::ProcessGroup => {
                let mut command = tokio::process::Command::new(&argv[0]);
                command.args(&argv[1..]).current_dir(&work);
                command
            }
        };
        let output = command
            .env(DIR_ENV, &dir)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|error| local_error(format!("exec `{}` in {id}", argv[0]), error))?;
        Ok(ExecOutput { stdout: output.stdout, stderr: output.stderr, exit_code: exit_code(output.status) })
    }
}
