//! [`KubernetesProvider`]: sandboxes that are Kubernetes objects, on the
//! `kube` crate (rustls): kubernetes-sigs/agent-sandbox's `SandboxClaim`
//! (preferred: deleting the claim lets its controller tear its Sandbox and
//! Pod down), its `Sandbox`, or plain `Pod`s, in one namespace or all
//! (`docs/research/kubernetes.md`). Like Modal, its own type beside the
//! HTTP engine, on the engine's shared parts (option checks, listing
//! ceilings and repeated items, the lookup's window, throttling waits,
//! errors and messages).
//!
//! - the listing is `GET …/<plural>?labelSelector=io.sandbox-reclaim.owner=<owner>&limit=…`,
//!   paged by `continue`. An expired `continue` (`410 Gone`) restarts the
//!   listing once, then fails it closed. Age is `creationTimestamp`; an
//!   object with a `deletionTimestamp` is deleting (never deleted again).
//! - destroy is a `DELETE` with `propagationPolicy: Foreground`; `404` is
//!   already gone, success.
//! - the registry's lookup is a `GET` by name.
//! - a sandbox's id is `<namespace>_<name>` ([`object::sandbox_id`]).
//!
//! Credentials as every Kubernetes tool finds them ([`source`]). kube's own
//! retries are off: a `429` waits its `Retry-After` here, bounded, as every
//! hosted vendor's does, and every request is cut at `request_timeout`.
//!
//! This module is the vendor's one home: its row ([`SPEC`]) and its own
//! options are always built (hosts list every vendor); the provider is
//! built with the cargo feature `kubernetes`.

#[cfg(feature = "kubernetes")]
mod object;
#[cfg(feature = "kubernetes")]
mod provider;
#[cfg(feature = "kubernetes")]
mod source;

#[cfg(feature = "kubernetes")]
pub use self::provider::*;

use crate::contract::errors::ProviderError;
use crate::options::provider::{vendor_option, HostedSettings, Marks, OwnerFilter, ScopeOption, VendorSpec};
use crate::options::Name;
use crate::providers::HostedSandboxProvider;

/// `kubeconfig` / `kubeconfig`: one of Kubernetes's own options.
pub const KUBECONFIG: Name = vendor_option("kubeconfig", "kubeconfig");
/// `context` / `context`: one of Kubernetes's own options.
pub const CONTEXT: Name = vendor_option("context", "context");
/// `namespace` / `namespace`: one of Kubernetes's own options.
pub const NAMESPACE: Name = vendor_option("namespace", "namespace");
/// `kind` / `kind`: one of Kubernetes's own options.
pub const KIND: Name = vendor_option("kind", "kind");

/// Kubernetes as hosts, the command and the docs see it: its row of the one
/// vendor list (`hosted/vendors.rs`).
pub const SPEC: VendorSpec = VendorSpec {
    key: "kubernetes",
    label: "Kubernetes",
    class: "KubernetesProvider",
    credential_variables: &["KUBECONFIG"],
    credential_options: &[ScopeOption { name: KUBECONFIG, variable: Some("KUBECONFIG"), required: false }],
    api_url_variable: None,
    api_url_doc: "the kubeconfig context's server (KUBECONFIG, else ~/.kube/config), else in-cluster",
    scope_options: &[
        ScopeOption { name: CONTEXT, variable: None, required: false },
        ScopeOption { name: NAMESPACE, variable: None, required: false },
        ScopeOption { name: KIND, variable: None, required: false },
    ],
    default_page_size: 100,
    max_page_size: 500,
    owner_filter: OwnerFilter::Server,
    marks: Marks::Metadata,
    destroy_doc: "DELETE of the SandboxClaim (or Sandbox, Pod) `{namespace}_{name}`, propagationPolicy Foreground",
    gone_doc: "404; an object with a deletionTimestamp is deleting",
};

/// A provider from a host's or the command's settings (sends nothing); a
/// build without the `kubernetes` feature says so.
pub(crate) fn build(settings: HostedSettings) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    #[cfg(feature = "kubernetes")]
    return Ok(Box::new(KubernetesProvider::new(KubernetesConfig::from(settings))?));
    #[cfg(not(feature = "kubernetes"))]
    {
        let _ = settings;
        Err(ProviderError::backend(super::HostedError::Failed(crate::report::messages::hosted_vendor_not_built(
            SPEC.label,
            "kubernetes",
        ))))
    }
}
