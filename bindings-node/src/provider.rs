//! The native half of `DockerProvider` and `LocalProvider`: one class over
//! either core managed provider.
//!
//! Methods return Promises settled on napi's tokio runtime. Errors travel by
//! `code` and the JS facade (lib/errors.cjs) rebuilds them: refused input
//! ([`InvalidInput`]) is napi's `InvalidArg` → `TypeError`, and the ownership
//! guard ([`ProviderError::NotOwned`]) is our own [`NOT_OWNED_CODE`] →
//! `SandboxNotOwnedError`. napi's `Status` has no room for our own codes, so
//! those errors are [`Coded`] and their Promises come from [`spawn_coded`].

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use napi::bindgen_prelude::{JsObjectValue, JsValue, PromiseRaw, ToNapiValue};
use napi::{Env, Error, JsError, Result, Status};
use napi_derive::napi;
use sandbox_reclaim::options::arguments::{self, HostNumber};
use sandbox_reclaim::options::Dialect;
use sandbox_reclaim::providers::DockerConfig;
#[cfg(unix)]
use sandbox_reclaim::providers::{IsolationRequest, LocalConfig};
use sandbox_reclaim::runtime::begun::Begun;
use sandbox_reclaim::{
    DockerProvider, InvalidInput, ListedSandbox, ManagedSandboxProvider, ProviderError, SandboxHandle,
};

use crate::memory_store::type_error;

/// The code that carries `ProviderError::NotOwned` to the JS facade. Our
/// own string, so no napi failure (a `Cancelled` one, say) can be mistaken
/// for the ownership guard.
pub const NOT_OWNED_CODE: &str = "SANDBOX_NOT_OWNED";

/// A failure with the `code` (and extra numeric properties) the JS facade
/// picks its error class by.
#[derive(Debug)]
pub struct Coded {
    code: String,
    message: String,
    numbers: Vec<(&'static str, f64)>,
}

impl Coded {
    /// A failure with our own `code`.
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self { code: code.to_owned(), message: message.into(), numbers: Vec::new() }
    }

    /// Adds a numeric property to the JS error (e.g. `found`).
    pub fn with_number(mut self, name: &'static str, value: f64) -> Self {
        self.numbers.push((name, value));
        self
    }

    /// The JS error object, built on the JS thread and handed to napi as
    /// is: a Promise rejected with it keeps our `code`.
    fn into_rejection(self, env: &Env) -> Error {
        let error = JsError::from(Error::new(self.code, self.message)).into_unknown(Env::from_raw(env.raw()));
        if let Ok(mut object) = error.coerce_to_object() {
            for (name, value) in self.numbers {
                // Only fails while the environment shuts down, when nobody reads it.
                let _ = object.set_named_property(name, value);
            }
        }
        Error::from(error)
    }
}

/// napi's own failures keep their status as the code (`InvalidArg` → `TypeError`).
impl From<Error> for Coded {
    fn from(error: Error) -> Self {
        Self::new(error.status.as_ref(), error.reason)
    }
}

/// For synchronous calls, which throw an `Error<String>` with the code.
impl From<Coded> for Error<String> {
    fn from(coded: Coded) -> Self {
        Error::new(coded.code, coded.message)
    }
}

/// `env.spawn_future` for a future failing with a [`Coded`]: the rejection is
/// built when the Promise settles, on the JS thread.
pub fn spawn_coded<T, F>(env: &Env, future: F) -> Result<PromiseRaw<'_, T>>
where
    T: 'static + Send + ToNapiValue,
    F: 'static + Send + Future<Output = std::result::Result<T, Coded>>,
{
    // Polled once as the call is made, so store writes are issued in the
    // order JS called them, whatever the order tokio runs the tasks in.
    let begun = napi::bindgen_prelude::within_runtime_if_available(|| Begun::now(future));
    env.spawn_future_with_callback(async move { Ok(begun.finish().await) }, |env, settled| {
        settled.map_err(|coded| coded.into_rejection(env))
    })
}

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

/// A sandbox as `list()` answers it (the orphan sweep's wire form): unknown
/// fields are `null`, never guessed.
#[napi(object, use_nullable = true)]
pub struct ListedSandboxObject {
    /// The provider-side id (what `destroy` takes).
    pub id: String,
    /// Creation time, epoch milliseconds.
    pub created_at: Option<f64>,
    /// The owner namespace it was created under.
    pub owner: Option<String>,
    /// The sandbox key it was created for.
    pub key: Option<String>,
}

impl From<ListedSandbox> for ListedSandboxObject {
    fn from(listed: ListedSandbox) -> Self {
        Self { id: listed.id, created_at: listed.created_at.map(|at| at as f64), owner: listed.owner, key: listed.key }
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

/// A provider failure with its code (see the module docs).
pub fn provider_error(error: ProviderError) -> Coded {
    match error {
        ProviderError::NotOwned { .. } => Coded::new(NOT_OWNED_CODE, error.to_string()),
        ProviderError::Backend(inner) => match inner.downcast_ref::<InvalidInput>() {
            Some(invalid) => type_error(invalid.to_string()).into(),
            None => Error::new(Status::GenericFailure, inner.to_string()).into(),
        },
    }
}

/// What a synchronous factory throws: the same codes as a rejection.
fn thrown(failure: impl Into<Coded>) -> Error<String> {
    failure.into().into()
}

/// A Docker or local managed provider.
#[napi]
pub struct NativeProvider {
    inner: Arc<dyn ManagedSandboxProvider>,
    isolation: Option<&'static str>,
    /// The owner namespace its sandboxes carry (its config's).
    owner: String,
}

#[napi]
impl NativeProvider {
    /// A Docker provider; refuses bad options with a `TypeError` naming the field.
    #[napi(factory)]
    pub fn docker(options: DockerOptions) -> Result<Self, String> {
        let mut config = DockerConfig::new(options.image);
        if let Some(keep_alive) = options.keep_alive {
            config.keep_alive = keep_alive;
        }
        if let Some(network_mode) = options.network_mode {
            config.network_mode = network_mode;
        }
        config.cpus = options.cpus;
        if let Some(memory) = options.memory_bytes {
            let bytes =
                arguments::whole(&HostNumber::Float(memory), "options.memoryBytes", arguments::BYTES, Dialect::Node)
                    .map_err(|refused| thrown(type_error(refused.message)))?;
            config.memory_bytes = Some(bytes as i64);
        }
        if let Some(owner) = options.owner {
            config.owner = owner;
        }
        if let Some(name) = options.name {
            config.name = name;
        }
        config.docker_host = options.docker_host;
        Self::from_docker(config)
    }

    /// A Docker provider for a config the core built (the command's `--docker`).
    pub fn from_docker(config: DockerConfig) -> Result<Self, String> {
        let owner = config.owner.clone();
        let provider = napi::bindgen_prelude::within_runtime_if_available(|| DockerProvider::new(config))
            .map_err(|error| thrown(provider_error(error)))?;
        Ok(Self { inner: Arc::new(provider), isolation: None, owner })
    }

    /// A local provider (creates `baseDir`, probes namespaces once). Unix only.
    #[cfg(unix)]
    #[napi(factory)]
    pub fn local(options: LocalOptions) -> Result<Self, String> {
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
        if let Some(isolation) = options.isolation {
            config.isolation = IsolationRequest::parse(&isolation, "options.isolation")
                .map_err(|refused| thrown(type_error(refused)))?;
        }
        Self::from_local(config)
    }

    /// A local provider for a config the core built (the command's `--local`).
    #[cfg(unix)]
    pub fn from_local(config: LocalConfig) -> Result<Self, String> {
        let owner = config.owner.clone();
        let provider = sandbox_reclaim::LocalProvider::new(config).map_err(|error| thrown(provider_error(error)))?;
        let isolation = Some(provider.isolation().as_str());
        Ok(Self { inner: Arc::new(provider), isolation, owner })
    }

    /// The name instance records carry in `provider`.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_owned()
    }

    /// The owner namespace its sandboxes carry (the orphan sweep destroys only those).
    #[napi(getter)]
    pub fn owner(&self) -> String {
        self.inner.owner().map_or_else(|| self.owner.clone(), str::to_owned)
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
        spawn_coded(env, async move { inner.destroy(&id).await.map_err(provider_error) })
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
        spawn_coded(env, async move {
            Ok(SandboxHandleObject::from(inner.create(&key, &labels).await.map_err(provider_error)?))
        })
    }

    /// The sandboxes under this provider's owner, by id, as the orphan sweep
    /// reads them (`SandboxProvider::list_sandboxes`): a field the provider
    /// cannot read is `null` (a directory whose owner is unreadable is listed
    /// with `owner: null`), so a sweep fails closed.
    #[napi]
    pub fn list<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Vec<ListedSandboxObject>>> {
        let inner = self.inner.clone();
        spawn_coded(env, async move {
            let listed = inner.list_sandboxes().await.map_err(provider_error)?;
            Ok(listed.into_iter().map(ListedSandboxObject::from).collect())
        })
    }

    /// Runs `argv` in sandbox `id` and waits for it.
    #[napi]
    pub fn exec<'env>(&self, env: &'env Env, id: String, argv: Vec<String>) -> Result<PromiseRaw<'env, ExecResult>> {
        let inner = self.inner.clone();
        spawn_coded(env, async move {
            let output = inner.exec(&id, &argv).await.map_err(provider_error)?;
            Ok(ExecResult { stdout: output.stdout_text(), stderr: output.stderr_text(), exit_code: output.exit_code })
        })
    }
}
