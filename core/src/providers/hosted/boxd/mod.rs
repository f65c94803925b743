//! [`BoxdProvider`]: boxd (boxd.sh) machines through boxd's gRPC API
//! (service `boxd.api.v1.BoxdApi`, the calls the official client PyPI
//! `boxd` 0.2.19 makes; `docs/research/boxd.md`). Not an engine entry (the
//! engine speaks HTTP): its own type beside the engine, as Modal's is, on
//! the engine's shared parts (option checks, listing ceilings and repeated
//! items, the owner filter's unlabelled reading, the lookup's window,
//! throttling waits, errors and messages) and the gRPC client Modal's
//! provider shares (`hosted/grpc.rs`).
//!
//! - destroy is `DestroyVm`: terminal. `NOT_FOUND` is already gone, success.
//! - the listing is `ListVms` within the `org` option's org (else
//!   `BOXD_ORG`; empty or unset: the credential's personal machines), never
//!   `all_contexts`, filtered server-side by the label selector
//!   `io.sandbox-reclaim.owner=<owner>` (none with `sweep_unlabelled`). boxd
//!   does not page: one answer lists every match. As the client does (a
//!   server from before labels ignores the selector), the listing is
//!   filtered by our owner label again. A machine `destroyed` is gone (left
//!   out); every other documented status (`pending`, `starting`, `running`,
//!   `suspended`, `hibernated`, `stopped`, `failed`, `migrating`) is live:
//!   stopped and suspended machines keep their disk. There is no "deleting"
//!   status. A machine with a status boxd does not document, without an id,
//!   or (live) without a creation time fails the listing closed.
//! - the lookup of a registered machine is `GetVm` by id: `NOT_FOUND` or
//!   `destroyed` is gone. A get and a destroy need no org.
//!
//! Auth (`auth.rs`): `authorization: Bearer <token>`. The token is the
//! `apiKey` option (a `bxd_` key is exchanged for a token first, anything
//! else is sent as a token), else `BOXD_TOKEN` (as is), else `BOXD_API_KEY`
//! (exchanged). The server is [`BoxdConfig::api_url`], else `BOXD_BASE_URL`,
//! else the deprecated `BOXD_API_URL` the client still reads, else
//! [`BOXD_PUBLIC_API_URL`]; a bare `host:port` is TLS, except `localhost`
//! and `127.*`, as the client dials them.
//!
//! This module is the vendor's one home: its row ([`SPEC`]) and its own
//! options are always built (hosts list every vendor); the provider is
//! built with the cargo feature `boxd`.

#[cfg(feature = "boxd")]
mod auth;
#[cfg(feature = "boxd")]
mod provider;
#[cfg(feature = "boxd")]
mod rpc;
#[cfg(feature = "boxd")]
mod wire;

#[cfg(feature = "boxd")]
pub use self::provider::*;

use crate::contract::errors::ProviderError;
use crate::options::provider::{vendor_option, HostedSettings, Marks, OwnerFilter, ScopeOption, VendorSpec};
use crate::options::Name;
use crate::providers::HostedSandboxProvider;

/// `org` / `org`: one of boxd's own options.
pub const ORG: Name = vendor_option("org", "org");

/// boxd as hosts, the command and the docs see it: its row of the one
/// vendor list (`hosted/vendors.rs`).
pub const SPEC: VendorSpec = VendorSpec {
    key: "boxd",
    label: "boxd",
    class: "BoxdProvider",
    credential_variables: &["BOXD_TOKEN", "BOXD_API_KEY"],
    credential_options: &[],
    api_url_variable: Some("BOXD_BASE_URL"),
    api_url_doc: "BOXD_BASE_URL, else https://boxd.sh:9443 (gRPC)",
    scope_options: &[ScopeOption { name: ORG, variable: Some("BOXD_ORG"), required: false }],
    default_page_size: 0,
    max_page_size: 0,
    owner_filter: OwnerFilter::Server,
    marks: Marks::Labels { field: "labels" },
    destroy_doc: "DestroyVm (listed by ListVms within `org`)",
    gone_doc: "NOT_FOUND and status `destroyed`",
};

/// A provider from a host's or the command's settings (sends nothing); a
/// build without the `boxd` feature says so.
pub(crate) fn build(settings: HostedSettings) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    #[cfg(feature = "boxd")]
    return Ok(Box::new(BoxdProvider::new(BoxdConfig::from(settings))?));
    #[cfg(not(feature = "boxd"))]
    {
        let _ = settings;
        Err(ProviderError::backend(super::HostedError::Failed(crate::report::messages::hosted_vendor_not_built(
            SPEC.label, "boxd",
        ))))
    }
}
