//! The native half of `DockerProvider` and `LocalProvider`: one class over
//! either core managed provider.
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
use sandbox_reclaim::{DockerProvider, InvalidInput, LocalProvider, ManagedSandboxProvider, ProviderError, SandboxHandle};

use crate::memory_store::type_error;

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
}
