//! The native half of the hosted providers (`E2bProvider`, `DaytonaProvider`,
//! `VercelProvider`): one class over
//! any core [`HostedSandboxProvider`]. They destroy and list; the vendor's
//! SDK creates. Errors travel as in [`crate::provider`].

use std::sync::Arc;

use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Result};
use napi_derive::napi;
use sandbox_reclaim::providers::{
    owner_labels as core_owner_labels, DaytonaConfig, DaytonaProvider, E2bConfig, E2bProvider, VercelConfig,
    VercelProvider,
};
use sandbox_reclaim::{HostedSandboxProvider, Labels, ListedSandbox, DEFAULT_OWNER};

use crate::provider::{provider_error, spawn_coded, Coded};

/// `new E2bProvider(options)`, `new DaytonaProvider(options)`, `new
/// VercelProvider(options)`: every field optional; each vendor reads the
/// fields it has (the facades check which).
#[napi(object)]
pub struct HostedOptions {
    /// Provider name (default the vendor's: `e2b`, `daytona`, `vercel`).
    pub name: Option<String>,
    /// Owner namespace: the label / metadata / tag the listing is filtered by.
    pub owner: Option<String>,
    /// API key or token; default the vendor's variable.
    pub api_key: Option<String>,
    /// API base URL; default the vendor's variable, else its public API.
    pub api_url: Option<String>,
    /// Vercel's team; default `VERCEL_TEAM_ID`.
    pub team_id: Option<String>,
    /// Vercel's project; default `VERCEL_PROJECT_ID`.
    pub project_id: Option<String>,
    /// Sandboxes per listing page (default the vendor's largest).
    pub page_size: Option<u32>,
    /// Longest one HTTP request may take, in ms (default 30 000).
    pub request_timeout_ms: Option<u32>,
    /// List every sandbox, not only the owner's: an unlabelled one is listed
    /// with owner `""` (the store's registry decides). Default false.
    pub sweep_unlabelled: Option<bool>,
}

impl HostedOptions {
    fn request_timeout(&self) -> Option<std::time::Duration> {
        self.request_timeout_ms.map(|ms| std::time::Duration::from_millis(u64::from(ms.max(1))))
    }
}

/// A sandbox as a hosted provider lists it: a field it cannot read is
/// `null` (the sweep fails closed); `deleting` when the vendor already is.
#[napi(object, use_nullable = true)]
pub struct HostedListedObject {
    pub id: String,
    pub created_at: Option<f64>,
    pub owner: Option<String>,
    pub key: Option<String>,
    pub deleting: bool,
}

impl From<ListedSandbox> for HostedListedObject {
    fn from(listed: ListedSandbox) -> Self {
        Self {
            id: listed.id,
            created_at: listed.created_at.map(|at| at as f64),
            owner: listed.owner,
            key: listed.key,
            deleting: listed.deleting,
        }
    }
}

/// A hosted provider.
#[napi]
pub struct NativeHostedProvider {
    inner: Arc<dyn HostedSandboxProvider>,
    owner: String,
}

#[napi]
impl NativeHostedProvider {
    /// An E2B provider (reads `E2B_API_KEY` / `E2B_API_URL`; sends nothing).
    #[napi(factory, js_name = "e2b")]
    pub fn e2b(options: HostedOptions) -> Result<Self, String> {
        let mut config = E2bConfig::default();
        config.name = options.name.clone().unwrap_or(config.name);
        config.owner = options.owner.clone().unwrap_or(config.owner);
        config.page_size = options.page_size.unwrap_or(config.page_size);
        config.request_timeout = options.request_timeout().unwrap_or(config.request_timeout);
        config.sweep_unlabelled = options.sweep_unlabelled.unwrap_or(config.sweep_unlabelled);
        (config.api_key, config.api_url) = (options.api_key, options.api_url);
        Self::hosted(E2bProvider::new(config), config_owner(options.owner))
    }

    /// A Daytona provider (reads `DAYTONA_API_KEY` / `DAYTONA_API_URL`; sends nothing).
    #[napi(factory)]
    pub fn daytona(options: HostedOptions) -> Result<Self, String> {
        let mut config = DaytonaConfig::default();
        config.name = options.name.clone().unwrap_or(config.name);
        config.owner = options.owner.clone().unwrap_or(config.owner);
        config.page_size = options.page_size.unwrap_or(config.page_size);
        config.request_timeout = options.request_timeout().unwrap_or(config.request_timeout);
        config.sweep_unlabelled = options.sweep_unlabelled.unwrap_or(config.sweep_unlabelled);
        (config.api_key, config.api_url) = (options.api_key, options.api_url);
        Self::hosted(DaytonaProvider::new(config), config_owner(options.owner))
    }

    /// A Vercel provider (reads `VERCEL_TOKEN` / `VERCEL_TEAM_ID` / `VERCEL_PROJECT_ID`; sends nothing).
    #[napi(factory)]
    pub fn vercel(options: HostedOptions) -> Result<Self, String> {
        let mut config = VercelConfig::default();
        config.name = options.name.clone().unwrap_or(config.name);
        config.owner = options.owner.clone().unwrap_or(config.owner);
        config.page_size = options.page_size.unwrap_or(config.page_size);
        config.request_timeout = options.request_timeout().unwrap_or(config.request_timeout);
        config.sweep_unlabelled = options.sweep_unlabelled.unwrap_or(config.sweep_unlabelled);
        (config.token, config.api_url) = (options.api_key, options.api_url);
        (config.team_id, config.project_id) = (options.team_id, options.project_id);
        Self::hosted(VercelProvider::new(config), config_owner(options.owner))
    }

    /// A provider the command crate built (the hosted command's `--e2b`, ...).
    pub(crate) fn from_built(provider: Box<dyn HostedSandboxProvider>) -> Self {
        let owner = config_owner(provider.owner().map(str::to_owned));
        Self { inner: Arc::from(provider), owner }
    }

    fn hosted(
        built: std::result::Result<impl HostedSandboxProvider + 'static, sandbox_reclaim::ProviderError>,
        owner: String,
    ) -> Result<Self, String> {
        let provider = built.map_err(|error| thrown(provider_error(error)))?;
        Ok(Self { inner: Arc::new(provider), owner })
    }

    /// The name instance records carry in `provider`.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_owned()
    }

    /// The owner namespace the listing is filtered by.
    #[napi(getter)]
    pub fn owner(&self) -> String {
        self.owner.clone()
    }

    /// The API base URL in use.
    #[napi(getter)]
    pub fn api_url(&self) -> String {
        self.inner.api_url().to_owned()
    }

    /// Destroys sandbox `id` permanently; already gone is success. With
    /// `abort`, aborting it drops the request (the destroy's deadline).
    #[napi]
    pub fn destroy<'env>(
        &self,
        env: &'env Env,
        id: String,
        abort: Option<&NativeAbort>,
    ) -> Result<PromiseRaw<'env, ()>> {
        let inner = self.inner.clone();
        let abort = abort.map(|abort| abort.state.clone());
        spawn_coded(env, async move {
            let destroy = inner.destroy(&id);
            match abort {
                None => destroy.await.map_err(provider_error),
                Some(abort) => tokio::select! {
                    destroyed = destroy => destroyed.map_err(provider_error),
                    () = abort.aborted() => Err(Coded::from(napi::Error::new(
                        napi::Status::Cancelled,
                        format!("destroying sandbox {id:?} was aborted"),
                    ))),
                },
            }
        })
    }

    /// Every sandbox under the owner, as the orphan sweep reads them.
    #[napi]
    pub fn list<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Vec<HostedListedObject>>> {
        let inner = self.inner.clone();
        spawn_coded(env, async move {
            let listed = inner.list_sandboxes().await.map_err(provider_error)?;
            Ok(listed.into_iter().map(HostedListedObject::from).collect())
        })
    }

    /// One small authenticated call; rejects naming the variable to set.
    #[napi]
    pub fn check_access<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let inner = self.inner.clone();
        spawn_coded(env, async move { inner.check_access().await.map_err(provider_error) })
    }
}

/// Aborts a native destroy: the JS facade aborts it when the destroy's
/// `signal` does, and dropping the request's future cancels it.
#[napi]
#[derive(Default)]
pub struct NativeAbort {
    state: Arc<AbortState>,
}

#[derive(Default)]
struct AbortState {
    aborted: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl AbortState {
    async fn aborted(&self) {
        loop {
            let notified = self.notify.notified();
            if self.aborted.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

#[napi]
impl NativeAbort {
    #[napi(constructor)]
    pub fn new() -> Self {
        Self::default()
    }

    /// Aborts every destroy given this handle.
    #[napi]
    pub fn abort(&self) {
        self.state.aborted.store(true, std::sync::atomic::Ordering::SeqCst);
        self.state.notify.notify_waiters();
    }
}

fn config_owner(owner: Option<String>) -> String {
    owner.unwrap_or_else(|| DEFAULT_OWNER.to_owned())
}

/// What a synchronous call throws: the same codes as a rejection.
fn thrown(coded: Coded) -> napi::Error<String> {
    coded.into()
}

/// The labels / metadata to attach at create so the sweep knows the sandbox.
#[napi]
pub fn owner_labels(owner: Option<String>, key: String) -> Result<Labels, String> {
    let owner = owner.unwrap_or_else(|| DEFAULT_OWNER.to_owned());
    core_owner_labels(&owner, &key).map_err(|invalid| thrown(provider_error(invalid.into())))
}
