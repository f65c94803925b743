//! The native half of the hosted providers (`E2bProvider`, `SpritesProvider`,
//! ..., one per row of the core's vendor table): one class over any core
//! [`HostedSandboxProvider`]. They destroy and list; the vendor's
//! SDK creates. Errors travel as in [`crate::provider`].

use std::sync::Arc;

use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Result};
use napi_derive::napi;
use sandbox_reclaim::options::provider::HostedSettings;
use sandbox_reclaim::options::{Dialect, HostOptionError, HostOptions};
use sandbox_reclaim::providers::HostedVendor;
use sandbox_reclaim::providers::{build_hosted, owner_labels as core_owner_labels, vendor_owner_labels};
use sandbox_reclaim::report::messages;
use sandbox_reclaim::{HostedSandboxProvider, Labels, ListedSandbox, DEFAULT_OWNER};

use crate::memory_store::type_error;
use crate::provider::{provider_error, spawn_coded, Coded};

/// The option names `vendor` (`e2b`, `sprites`, ...) takes, as JS
/// spells them: what the facade reads from the user's options (each once)
/// and hands to the core as plain values.
#[napi]
pub fn hosted_option_names(vendor: String) -> Result<Vec<String>, String> {
    let vendor = hosted_vendor(&vendor)?;
    Ok(vendor.names().iter().map(|name| name.node.to_owned()).collect())
}

/// A hosted vendor: its key (`sprites`) and its class (`SpritesProvider`).
#[napi(object)]
pub struct HostedVendorObject {
    pub key: String,
    pub class_name: String,
}

/// Every hosted vendor, in the core's order: what the facade builds its
/// provider classes from.
#[napi]
pub fn hosted_vendors() -> Vec<HostedVendorObject> {
    HostedVendor::all()
        .map(|vendor| HostedVendorObject {
            key: vendor.spec().key.to_owned(),
            class_name: vendor.spec().class.to_owned(),
        })
        .collect()
}

fn hosted_vendor(vendor: &str) -> Result<HostedVendor, String> {
    HostedVendor::parse(vendor)
        .ok_or_else(|| thrown(type_error(messages::unknown_vendor(vendor, &HostedVendor::keys())).into()))
}

/// The settings the user's plain option values (JSON) give, checked and
/// defaulted by the core; an option it refuses is a `TypeError`.
fn settings(vendor: HostedVendor, options_json: &str) -> Result<HostedSettings, String> {
    let refused = |error: HostOptionError| thrown(type_error(error.message).into());
    let options = HostOptions::parse(options_json, Dialect::Node).map_err(refused)?;
    HostedSettings::from_host(vendor, &options).map_err(refused)
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
    /// `vendor`'s provider (`e2b`, `sprites`, ...) from the user's plain
    /// option values (JSON); reads the vendor's variables, sends nothing.
    #[napi(factory)]
    pub fn hosted(vendor: String, options_json: String) -> Result<Self, String> {
        let vendor = hosted_vendor(&vendor)?;
        let settings = settings(vendor, &options_json)?;
        let owner = settings.owner.clone();
        let provider = build_hosted(vendor, settings).map_err(|error| thrown(provider_error(error)))?;
        Ok(Self { inner: Arc::from(provider), owner })
    }

    /// A provider the command crate built (the hosted command's `--e2b`, ...).
    pub(crate) fn from_built(provider: Box<dyn HostedSandboxProvider>) -> Self {
        let owner = config_owner(provider.owner().map(str::to_owned));
        Self { inner: Arc::from(provider), owner }
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

    /// Whether it looks up registered sandboxes by id (a vendor with a get,
    /// unless the listing takes every sandbox).
    #[napi(getter)]
    pub fn can_lookup(&self) -> bool {
        self.inner.can_lookup()
    }

    /// The sandboxes of `ids` that still exist, read by id.
    #[napi]
    pub fn lookup<'env>(&self, env: &'env Env, ids: Vec<String>) -> Result<PromiseRaw<'env, Vec<HostedListedObject>>> {
        let inner = self.inner.clone();
        spawn_coded(env, async move {
            let found = inner.lookup_sandboxes(&ids).await.map_err(provider_error)?;
            Ok(found.into_iter().map(HostedListedObject::from).collect())
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

/// What a sandbox of `vendor` carries so the sweep knows it, in the shape
/// the vendor takes at create, as JSON (`ownerLabels`' third argument parses it).
#[napi]
pub fn vendor_owner_labels_json(owner: Option<String>, key: String, vendor: String) -> Result<String, String> {
    let owner = owner.unwrap_or_else(|| DEFAULT_OWNER.to_owned());
    let marks = vendor_owner_labels(&vendor, &owner, &key).map_err(|invalid| thrown(provider_error(invalid.into())))?;
    Ok(serde_json::to_string(&marks).expect("labels serialise"))
}
