//! The native half of the hosted providers (`E2bProvider`): one class over
//! any core [`HostedSandboxProvider`]. They destroy and list; the vendor's
//! SDK creates. Errors travel as in [`crate::provider`].

use std::sync::Arc;

use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Result};
use napi_derive::napi;
use sandbox_reclaim::providers::{owner_labels as core_owner_labels, E2bConfig, E2bProvider};
use sandbox_reclaim::{HostedSandboxProvider, Labels, DEFAULT_OWNER};

use crate::provider::{provider_error, spawn_coded, Coded, ListedSandboxObject};

/// `new E2bProvider(options)`: every field optional.
#[napi(object)]
pub struct E2bOptions {
    /// Provider name (default `e2b`).
    pub name: Option<String>,
    /// Owner namespace: the metadata the listing is filtered by.
    pub owner: Option<String>,
    /// API key; default `E2B_API_KEY`.
    pub api_key: Option<String>,
    /// API base URL; default `E2B_API_URL`, else `https://api.$E2B_DOMAIN`.
    pub api_url: Option<String>,
    /// Sandboxes per listing page, 1 to 100 (default 100).
    pub page_size: Option<u32>,
    /// Longest one HTTP request may take, in ms (default 30 000).
    pub request_timeout_ms: Option<u32>,
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
    pub fn e2b(options: E2bOptions) -> Result<Self, String> {
        let mut config = E2bConfig::default();
        if let Some(name) = options.name {
            config.name = name;
        }
        if let Some(owner) = options.owner {
            config.owner = owner;
        }
        config.api_key = options.api_key;
        config.api_url = options.api_url;
        if let Some(page_size) = options.page_size {
            config.page_size = page_size;
        }
        if let Some(timeout) = options.request_timeout_ms {
            config.request_timeout = std::time::Duration::from_millis(u64::from(timeout.max(1)));
        }
        let owner = config.owner.clone();
        let provider = E2bProvider::new(config).map_err(|error| thrown(provider_error(error)))?;
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
    pub fn list<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Vec<ListedSandboxObject>>> {
        let inner = self.inner.clone();
        spawn_coded(env, async move {
            let listed = inner.list_sandboxes().await.map_err(provider_error)?;
            Ok(listed.into_iter().map(ListedSandboxObject::from).collect())
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
