//! The native half of `DockerProvider` and `LocalProvider`: one class over
//! either core managed provider, plus `retryLeaks` with a native provider.
//!
//! Methods return Promises settled on napi's tokio runtime. Errors travel by
//! napi status and the JS facade (lib/providers.cjs) rebuilds them: refused
//! input ([`InvalidInput`]) is `InvalidArg` → `TypeError`, and the ownership
//! guard ([`ProviderError::NotOwned`]) is [`NOT_OWNED_STATUS`] → an `Error`
//! with `code = 'SANDBOX_NOT_OWNED'`.

use std::collections::BTreeMap;
use std::sync::Arc;

use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Error, Result, Status};
use napi_derive::napi;
use sandbox_reclaim::providers::{DockerConfig, IsolationRequest, LocalConfig};
use sandbox_reclaim::{
    retry_leaks, DockerProvider, InvalidInput, LocalProvider, ManagedSandboxProvider, ProviderError, RetryOptions,
    SandboxHandle, SandboxInstanceStore,
};

use crate::memory_store::{lease_duration, store_error, type_error, MemoryStore};
use crate::sql_store::SqlStore;

/// The napi status that carries `ProviderError::NotOwned` to the JS facade.
pub const NOT_OWNED_STATUS: Status = Status::Cancelled;

/// `new DockerProvider(options)`.
#[napi(object)]
pub struct DockerOptions {
    /// Image every sandbox runs.
    pub image: String,
    /// Command keeping the container alive.
    pub keep_alive: Option<Vec<String>>,
    /// Container network mode (default `none`).
    pub network_mode: Option<String>,
    /// CPU limit in CPUs.
    pub cpus: Option<f64>,
    /// Memory limit in bytes (a whole number).
    pub memory_bytes: Option<f64>,
    /// Owner namespace of the owner label.
    pub owner: Option<String>,
    /// Provider name (default `docker`).
    pub name: Option<String>,
    /// Engine address; default `DOCKER_HOST`.
    pub docker_host: Option<String>,
}

/// `new LocalProvider(options)`.
#[napi(object)]
pub struct LocalOptions {
    /// Directory holding one subdirectory per sandbox.
    pub base_dir: String,
    /// Owner namespace of the owner file.
    pub owner: Option<String>,
    /// Command keeping the sandbox alive.
    pub keep_alive: Option<Vec<String>>,
    /// `'auto'` (default), `'namespaces'` or `'process-group'`.
    pub isolation: Option<String>,
    /// Provider name (default `local`).
    pub name: Option<String>,
}

/// A sandbox a provider created or listed.
#[napi(object)]
pub struct SandboxHandleObject {
    /// The sandbox key it was created for.
    pub key: String,
    /// The provider-side id (`providerSandboxId`).
    pub id: String,
    /// Epoch milliseconds.
    pub created_at: f64,
}

impl From<SandboxHandle> for SandboxHandleObject {
    fn from(handle: SandboxHandle) -> Self {
        Self { key: handle.key, id: handle.id, created_at: handle.created_at as f64 }
    }
}

/// What `exec` produced (output decoded as UTF-8, invalid bytes replaced).
#[napi(object)]
pub struct ExecResult {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Exit code; `128 + n` when killed by signal `n`.
    pub exit_code: i64,
}

/// What one `retryLeaks` call did.
#[napi(object)]
pub struct RetrySummaryObject {
    /// Leaks claimed and retried.
    pub retried: f64,
    /// Leaks whose destroy now succeeded (removed from the ledger).
    pub destroyed: f64,
    /// Leaks whose destroy failed again (attempts bumped).
    pub still_failing: f64,
}

/// A provider failure as a napi error (see the module docs).
pub fn provider_error(error: ProviderError) -> Error {
    match error {
        ProviderError::NotOwned { .. } => Error::new(NOT_OWNED_STATUS, error.to_string()),
        ProviderError::Backend(inner) => match inner.downcast_ref::<InvalidInput>() {
            Some(invalid) => type_error(invalid.to_string()),
            None => Error::new(Status::GenericFailure, inner.to_string()),
        },
    }
}

/// A Docker or local managed provider.
#[napi]
pub struct NativeProvider {
    inner: Arc<dyn ManagedSandboxProvider>,
    isolation: Option<&'static str>,
}

#[napi]
impl NativeProvider {
    /// A Docker provider; refuses bad options with a `TypeError` naming the field.
    #[napi(factory)]
    pub fn docker(options: DockerOptions) -> Result<Self> {
        let mut config = DockerConfig::new(options.image);
        if let Some(keep_alive) = options.keep_alive {
            config.keep_alive = keep_alive;
        }
        if let Some(network_mode) = options.network_mode {
            config.network_mode = network_mode;
        }
        config.cpus = options.cpus;
        if let Some(memory) = options.memory_bytes {
            if memory.fract() != 0.0 || !memory.is_finite() {
                return Err(type_error(format!(
                    "invalid `memoryBytes`: must be a whole number of bytes, got {memory}"
                )));
            }
            config.memory_bytes = Some(memory as i64);
        }
        if let Some(owner) = options.owner {
            config.owner = owner;
        }
        if let Some(name) = options.name {
            config.name = name;
        }
        config.docker_host = options.docker_host;
        let provider = napi::bindgen_prelude::within_runtime_if_available(|| DockerProvider::new(config))
            .map_err(provider_error)?;
        Ok(Self { inner: Arc::new(provider), isolation: None })
    }

    /// A local provider (creates `baseDir`, probes namespaces once).
    #[napi(factory)]
    pub fn local(options: LocalOptions) -> Result<Self> {
        let mut config = LocalConfig::new(options.base_dir);
        if let Some(owner) = options.owner {
            config.owner = owner;
        }
        if let Some(keep_alive) = options.keep_alive {
            config.keep_alive = keep_alive;
        }
        if let Some(name) = options.name {
            config.name = name;
        }
        config.isolation = match options.isolation.as_deref() {
            None | Some("auto") => IsolationRequest::Auto,
            Some("namespaces") => IsolationRequest::Namespaces,
            Some("process-group") => IsolationRequest::ProcessGroup,
            Some(other) => {
                return Err(type_error(format!(
                    "invalid `isolation`: must be 'auto', 'namespaces' or 'process-group', got {other:?}"
                )))
            }
        };
        let provider = LocalProvider::new(config).map_err(provider_error)?;
        let isolation = Some(provider.isolation().as_str());
        Ok(Self { inner: Arc::new(provider), isolation })
    }

    /// The name instance records carry in `provider`.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_owned()
    }

    /// The isolation a local provider's sandboxes get; `null` for Docker.
    #[napi]
    pub fn isolation(&self) -> Option<&'static str> {
        self.isolation
    }

    /// Destroys sandbox `id`; already gone is success.
    #[napi]
    pub fn destroy<'env>(&self, env: &'env Env, id: String) -> Result<PromiseRaw<'env, ()>> {
        let inner = self.inner.clone();
        env.spawn_future(async move { inner.destroy(&id).await.map_err(provider_error) })
    }

    /// Creates (or finds) the sandbox for `key`.
    #[napi]
    pub fn create<'env>(
        &self,
        env: &'env Env,
        key: String,
        labels: Option<BTreeMap<String, String>>,
    ) -> Result<PromiseRaw<'env, SandboxHandleObject>> {
        let inner = self.inner.clone();
        let labels = labels.unwrap_or_default();
        env.spawn_future(async move {
            Ok(SandboxHandleObject::from(inner.create(&key, &labels).await.map_err(provider_error)?))
        })
    }

    /// The sandboxes this provider owns, oldest first.
    #[napi]
    pub fn list<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Vec<SandboxHandleObject>>> {
        let inner = self.inner.clone();
        env.spawn_future(async move {
            let handles = inner.list().await.map_err(provider_error)?;
            Ok(handles.into_iter().map(SandboxHandleObject::from).collect())
        })
    }

    /// Runs `argv` in sandbox `id` and waits for it.
    #[napi]
    pub fn exec<'env>(&self, env: &'env Env, id: String, argv: Vec<String>) -> Result<PromiseRaw<'env, ExecResult>> {
        let inner = self.inner.clone();
        env.spawn_future(async move {
            let output = inner.exec(&id, &argv).await.map_err(provider_error)?;
            Ok(ExecResult { stdout: output.stdout_text(), stderr: output.stderr_text(), exit_code: output.exit_code })
        })
    }

    /// `retryLeaks` over a SQL store's ledger, entirely in Rust.
    #[napi]
    pub fn retry_leaks_in_sql<'env>(
        &self,
        env: &'env Env,
        store: &SqlStore,
        limit: u32,
        lease_ms: f64,
    ) -> Result<PromiseRaw<'env, RetrySummaryObject>> {
        self.retry(env, store.shared(), limit, lease_ms)
    }

    /// `retryLeaks` over a native in-memory store's ledger, entirely in Rust.
    #[napi]
    pub fn retry_leaks_in_memory<'env>(
        &self,
        env: &'env Env,
        store: &MemoryStore,
        limit: u32,
        lease_ms: f64,
    ) -> Result<PromiseRaw<'env, RetrySummaryObject>> {
        self.retry(env, store.shared(), limit, lease_ms)
    }
}

impl NativeProvider {
    fn retry<'env>(
        &self,
        env: &'env Env,
        store: Arc<dyn SandboxInstanceStore>,
        limit: u32,
        lease_ms: f64,
    ) -> Result<PromiseRaw<'env, RetrySummaryObject>> {
        let options = RetryOptions { limit: limit as usize, lease: lease_duration(lease_ms)? };
        if store.leak_ledger().is_none() {
            return Err(type_error("options.instances keeps no leak ledger"));
        }
        let provider = self.inner.clone();
        env.spawn_future(async move {
            let ledger = store.leak_ledger().ok_or_else(|| type_error("options.instances keeps no leak ledger"))?;
            let summary = retry_leaks(provider.as_ref(), ledger, options).await.map_err(store_error)?;
            Ok(RetrySummaryObject {
                retried: summary.retried as f64,
                destroyed: summary.destroyed as f64,
                still_failing: summary.still_failing as f64,
            })
        })
    }
}
