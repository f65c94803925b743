//! Managed providers: providers that also create, list and run commands in
//! the sandboxes they destroy.
//!
//! [`ManagedSandboxProvider`] extends [`SandboxProvider`] (which the reclaimer
//! needs) with `create`, `list` and `exec`, so one object can both start
//! sandboxes for agent runs and be handed to
//! [`reclaim_sandbox`](crate::reclaim_sandbox) afterwards.
//!
//! Two implementations ship behind cargo features:
//! - `docker`: [`DockerProvider`], containers through the Docker Engine HTTP API
//!   (Docker or podman), marked with [owner labels](LABEL_OWNER);
//! - `local`: [`LocalProvider`], a private directory plus a supervised process
//!   tree, in fresh namespaces where the kernel allows it.
//!
//! Both share the contract below: `destroy` is idempotent (already gone is
//! success), refuses a sandbox this provider does not own with
//! [`ProviderError::NotOwned`], and reports any other failure as
//! [`ProviderError::Backend`] carrying the backend's message. Bad input is
//! refused with an [`InvalidInput`] (inside `ProviderError::Backend`, so it can
//! be downcast) before any side effect.

use std::collections::BTreeMap;

use async_trait::async_trait;

use crate::contract::errors::ProviderError;
use crate::contract::SandboxProvider;

#[cfg(feature = "docker")]
pub mod docker;
#[cfg(feature = "hosted")]
pub mod hosted;
#[cfg(all(feature = "local", unix))]
pub mod local;

#[cfg(feature = "docker")]
pub use docker::{DockerConfig, DockerProvider};
#[cfg(feature = "hosted")]
pub use hosted::blaxel::{self, BlaxelConfig, BlaxelProvider};
#[cfg(feature = "boxd")]
pub use hosted::boxd::{self, BoxdConfig, BoxdProvider};
#[cfg(feature = "hosted")]
pub use hosted::daytona::{self, DaytonaConfig, DaytonaProvider};
#[cfg(feature = "hosted")]
pub use hosted::e2b::{self, E2bConfig, E2bProvider};
#[cfg(feature = "kubernetes")]
pub use hosted::kubernetes::{self, KubernetesConfig, KubernetesProvider};
#[cfg(feature = "hosted")]
pub use hosted::marks::{vendor_owner_labels, OwnerMarks};
#[cfg(feature = "modal")]
pub use hosted::modal::{self, ModalConfig, ModalProvider};
#[cfg(feature = "hosted")]
pub use hosted::railway::{self, RailwayConfig, RailwayProvider};
#[cfg(feature = "hosted")]
pub use hosted::runloop::{self, RunloopConfig, RunloopProvider};
#[cfg(feature = "hosted")]
pub use hosted::sprites::{self, SpritesConfig, SpritesProvider};
#[cfg(feature = "hosted")]
pub use hosted::upstash_box::{self, UpstashBoxConfig, UpstashBoxProvider};
#[cfg(feature = "hosted")]
pub use hosted::vercel::{self, VercelConfig, VercelProvider};
#[cfg(feature = "hosted")]
pub use hosted::{build_hosted, HostedConfig, HostedError, HostedProvider, HostedVendor, VENDORS};
#[cfg(all(feature = "local", unix))]
pub use local::{Isolation, IsolationRequest, LocalConfig, LocalProvider};

/// The owner namespace both providers use unless configured otherwise.
pub const DEFAULT_OWNER: &str = "sandbox-reclaim";

/// Label (or owner-file field) naming the namespace that owns a sandbox.
pub const LABEL_OWNER: &str = "io.sandbox-reclaim.owner";
/// Label carrying the sandbox key a sandbox was created for.
pub const LABEL_KEY: &str = "io.sandbox-reclaim.key";
/// Label carrying the creation time, in epoch milliseconds.
pub const LABEL_CREATED_AT: &str = "io.sandbox-reclaim.created-at";
/// Prefix reserved for the labels above; caller labels may not use it.
pub const RESERVED_LABEL_PREFIX: &str = "io.sandbox-reclaim.";

/// Extra labels a caller attaches to a sandbox at creation.
pub type Labels = BTreeMap<String, String>;

/// A sandbox a managed provider created (or found).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SandboxHandle {
    /// The sandbox key it was created for.
    pub key: String,
    /// The provider-side id: what an instance record stores as
    /// `providerSandboxId` and what `destroy` and `exec` take.
    pub id: String,
    /// Creation time, epoch milliseconds.
    pub created_at: u64,
}

/// What a command run with [`ManagedSandboxProvider::exec`] produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// Everything the command wrote to standard output.
    pub stdout: Vec<u8>,
    /// Everything the command wrote to standard error.
    pub stderr: Vec<u8>,
    /// The exit code; `128 + n` when the command was killed by signal `n`.
    pub exit_code: i64,
}

impl ExecOutput {
    /// Standard output as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Standard error as text (invalid UTF-8 replaced).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// A provider that creates, lists and runs commands in its own sandboxes, on
/// top of the reclaimer's `name` + `destroy`.
#[async_trait]
pub trait ManagedSandboxProvider: SandboxProvider {
    /// Creates a running sandbox for `key`, or returns the one this provider
    /// already has for `key` (so a retried create never starts a second one).
    async fn create(&self, key: &str, labels: &Labels) -> Result<SandboxHandle, ProviderError>;
    /// The sandboxes this provider owns (its owner namespace), oldest first.
    async fn list(&self) -> Result<Vec<SandboxHandle>, ProviderError>;
    /// Runs `argv` in the sandbox `id` and waits for it to finish.
    async fn exec(&self, id: &str, argv: &[String]) -> Result<ExecOutput, ProviderError>;
}

/// A provider on a vendor's hosted API (E2B, Daytona, Vercel): it only
/// destroys and lists (the vendor's SDK creates), and can check its
/// credential up front.
#[cfg(feature = "hosted")]
#[async_trait]
pub trait HostedSandboxProvider: SandboxProvider {
    /// The API base URL in use (never carries the credential).
    fn api_url(&self) -> &str;
    /// One small authenticated call: fails naming the variable to set when
    /// the vendor refuses the credential.
    async fn check_access(&self) -> Result<(), ProviderError>;
}

/// Bad input refused before any side effect, naming the offending field.
///
/// Providers return it inside [`ProviderError::Backend`]; bindings downcast it
/// to raise their `TypeError`/`ValueError`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid `{field}`: {reason}")]
pub struct InvalidInput {
    /// The field (argument or config option) at fault.
    pub field: &'static str,
    /// Why it was refused.
    pub reason: String,
}

impl InvalidInput {
    /// An `InvalidInput` for `field`.
    pub fn new(field: &'static str, reason: impl Into<String>) -> Self {
        Self { field, reason: reason.into() }
    }
}

impl From<InvalidInput> for ProviderError {
    fn from(invalid: InvalidInput) -> Self {
        ProviderError::backend(invalid)
    }
}

/// The labels (E2B metadata, Daytona labels, Docker labels) to attach to a
/// sandbox an app creates through a vendor SDK, so the orphan sweep knows it
/// as `owner`'s and which key it was for.
pub fn owner_labels(owner: &str, key: &str) -> Result<Labels, InvalidInput> {
    validate_owner(owner)?;
    validate_key(key)?;
    Ok(Labels::from([(LABEL_OWNER.to_owned(), owner.to_owned()), (LABEL_KEY.to_owned(), key.to_owned())]))
}

/// The labels to set when a framework creates a sandbox before its key is
/// known (the OpenAI Agents SDK makes its session id inside `create`): our
/// owner, the key when there is one, and the creation time (epoch ms), so a
/// sandbox whose record was never written is still swept once it is old.
pub fn creation_labels(owner: &str, key: Option<&str>, created_at_ms: u64) -> Result<Labels, InvalidInput> {
    validate_owner(owner)?;
    let mut labels = Labels::from([
        (LABEL_OWNER.to_owned(), owner.to_owned()),
        (LABEL_CREATED_AT.to_owned(), created_at_ms.to_string()),
    ]);
    if let Some(key) = key {
        validate_key(key)?;
        labels.insert(LABEL_KEY.to_owned(), key.to_owned());
    }
    Ok(labels)
}

/// Checks a provider name (what records carry in `provider`): non-empty.
pub fn validate_provider_name(name: &str) -> Result<(), InvalidInput> {
    if name.is_empty() {
        return Err(InvalidInput::new("name", "must be a non-empty string"));
    }
    Ok(())
}

/// Checks a sandbox key: non-empty, no NUL, at most 1024 bytes.
pub fn validate_key(key: &str) -> Result<(), InvalidInput> {
    validate_text("key", key, 1024)
}

/// Checks an owner namespace: non-empty, no NUL, at most 128 bytes.
pub fn validate_owner(owner: &str) -> Result<(), InvalidInput> {
    validate_text("owner", owner, 128)
}

/// Checks caller labels: non-empty names without NUL, no reserved prefix.
pub fn validate_labels(labels: &Labels) -> Result<(), InvalidInput> {
    for (name, value) in labels {
        validate_text("labels", name, 1024)?;
        if name.starts_with(RESERVED_LABEL_PREFIX) {
            return Err(InvalidInput::new(
                "labels",
                format!("label `{name}` uses the reserved prefix `{RESERVED_LABEL_PREFIX}`"),
            ));
        }
        if value.contains('\0') {
            return Err(InvalidInput::new("labels", format!("value of `{name}` contains a NUL character")));
        }
    }
    Ok(())
}

/// Checks an argv: at least one element, the program non-empty, no NUL.
pub fn validate_argv(field: &'static str, argv: &[String]) -> Result<(), InvalidInput> {
    match argv.first() {
        None => return Err(InvalidInput::new(field, "must name a program")),
        Some(program) if program.is_empty() => return Err(InvalidInput::new(field, "program must be non-empty")),
        _ => {}
    }
    if argv.iter().any(|arg| arg.contains('\0')) {
        return Err(InvalidInput::new(field, "arguments must not contain NUL characters"));
    }
    Ok(())
}

/// Checks a provider-side id: non-empty and only `[A-Za-z0-9_.-]`, not `.`
/// or `..`. Ids go into URLs and paths, so anything else is refused.
pub fn validate_id(id: &str) -> Result<(), InvalidInput> {
    if id.is_empty() {
        return Err(InvalidInput::new("id", "must be a non-empty string"));
    }
    if id.len() > 255 || id == "." || id == ".." {
        return Err(InvalidInput::new("id", format!("`{}` is not a sandbox id", id.escape_debug())));
    }
    if !id.bytes().all(is_name_byte) {
        return Err(InvalidInput::new(
            "id",
            format!("`{}` contains characters outside [A-Za-z0-9_.-]", id.escape_debug()),
        ));
    }
    Ok(())
}

fn validate_text(field: &'static str, text: &str, max_bytes: usize) -> Result<(), InvalidInput> {
    if text.is_empty() {
        return Err(InvalidInput::new(field, "must be a non-empty string"));
    }
    if text.contains('\0') {
        return Err(InvalidInput::new(field, "must not contain NUL characters"));
    }
    if text.len() > max_bytes {
        return Err(InvalidInput::new(field, format!("must be at most {max_bytes} bytes")));
    }
    Ok(())
}

fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-')
}

/// The deterministic sandbox name for `key` under `owner`: readable parts of
/// both, plus a hash of the exact pair so distinct keys never share a name.
///
/// The result matches `[a-zA-Z0-9][a-zA-Z0-9_.-]*` (a valid container name
/// and path component) and is at most 80 bytes.
pub fn sandbox_name(owner: &str, key: &str) -> String {
    let mut hashed = Vec::with_capacity(owner.len() + key.len() + 1);
    hashed.extend_from_slice(owner.as_bytes());
    hashed.push(0);
    hashed.extend_from_slice(key.as_bytes());
    format!("sr-{}-{}-{:016x}", readable(owner, 20), readable(key, 36), fnv1a64(&hashed))
}

fn readable(text: &str, max: usize) -> String {
    let mapped: String =
        text.bytes().map(|byte| if byte.is_ascii_alphanumeric() { byte as char } else { '_' }).take(max).collect();
    mapped.to_ascii_lowercase()
}

// FNV-1a: fixed forever, unlike std's hasher, so names stay stable across
// releases and processes.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_valid_stable_and_distinct() {
        let keys = ["run-1", "RUN-1", "run/1", "run 1", "", "ünïcödé/../x", &"k".repeat(5000)];
        let names: Vec<String> = keys.iter().map(|key| sandbox_name(DEFAULT_OWNER, key)).collect();
        for name in &names {
            assert!(name.len() <= 80, "{name}");
            assert!(name.as_bytes()[0].is_ascii_alphanumeric());
            assert!(validate_id(name).is_ok(), "{name}");
        }
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
        assert_eq!(sandbox_name(DEFAULT_OWNER, "run-1"), names[0]);
        assert_ne!(sandbox_name("other", "run-1"), names[0]);
    }

    #[test]
    fn bad_input_names_its_field() {
        assert_eq!(validate_key("").unwrap_err().field, "key");
        assert_eq!(validate_key("a\0b").unwrap_err().field, "key");
        assert_eq!(validate_id("../etc").unwrap_err().field, "id");
        assert_eq!(validate_id("").unwrap_err().field, "id");
        assert_eq!(validate_argv("argv", &[]).unwrap_err().field, "argv");
        assert_eq!(validate_argv("argv", &[String::new()]).unwrap_err().field, "argv");
        let reserved = Labels::from([(LABEL_OWNER.to_string(), "me".to_string())]);
        assert_eq!(validate_labels(&reserved).unwrap_err().field, "labels");
        assert!(validate_labels(&Labels::from([("team".to_string(), "a".to_string())])).is_ok());
    }
}
