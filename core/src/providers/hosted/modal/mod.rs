//! [`ModalProvider`]: Modal sandboxes through Modal's gRPC API (the calls
//! the official client `modal` 1.6 makes; `docs/research/modal.md`). Not an
//! engine entry (the engine speaks HTTP): its own type beside the engine,
//! on the engine's shared parts (option checks, listing ceilings and
//! repeated items, the owner filter's unlabelled reading, the lookup's
//! window, throttling waits, errors and messages).
//!
//! - destroy is `SandboxTerminate`, or `SandboxTerminateV2` for a V2 id
//!   (the client tells them by shape: `sb-` and 22 base62 characters is V1,
//!   anything else V2). A finished sandbox answers success; `NOT_FOUND` is
//!   already gone, success too.
//! - the listing is `SandboxListV2` (which lists V1 and V2 sandboxes, what
//!   the client lists with since 1.6), filtered server-side by our owner
//!   tag (all-of), `include_finished` false, newest first, paged by
//!   `before_timestamp` (the last sandbox's `created_at`) until an empty
//!   page. It lists within the `appId` option's app. Without one, within
//!   the `environment` option's environment (else `MODAL_ENVIRONMENT`):
//!   Modal deprecates that (it scans a whole environment) and may stop
//!   serving it. With neither, the listing fails (the sweep is unavailable,
//!   saying so: [`messages::MODAL_NO_LISTING_SCOPE`]); a destroy needs no
//!   scope. A listed sandbox that has finished is gone (left out).
//! - the lookup of a registered sandbox is `SandboxWait` (`timeout` 0, as
//!   `Sandbox.from_id`) and `SandboxTagsGet` (their V2 twins for a V2 id):
//!   `NOT_FOUND` or finished is gone. Modal reports no creation time by id:
//!   a V2 id is a ULID, whose time is when the sandbox was created; a V1 id
//!   has none, so a live V1 sandbox's time comes from one untagged listing
//!   of the app (only when the lookup found one); one that listing does not
//!   show fails the sweep closed (unknown creation time).
//!
//! Auth is the official client's: `MODAL_TOKEN_ID` / `MODAL_TOKEN_SECRET`
//! (or [`ModalConfig::token_id`] / [`ModalConfig::token_secret`]) as
//! `x-modal-token-id` / `x-modal-token-secret` on every call, and on V2
//! calls the token `AuthTokenGet` exchanges them for, refreshed before it
//! expires. The server is [`ModalConfig::api_url`], else `MODAL_SERVER_URL`,
//! else `https://api.modal.com` (of a comma-separated list, the first).
//!
//! This module is the vendor's one home: its row ([`SPEC`]) and its own
//! options are always built (hosts list every vendor); the provider is
//! built with the cargo feature `modal`.

#[cfg(feature = "modal")]
mod auth;
#[cfg(feature = "modal")]
mod provider;
#[cfg(feature = "modal")]
mod rpc;
#[cfg(feature = "modal")]
mod wire;

#[cfg(feature = "modal")]
pub use self::provider::*;

use crate::contract::errors::ProviderError;
use crate::options::provider::{vendor_option, HostedSettings, Marks, OwnerFilter, ScopeOption, VendorSpec};
use crate::options::Name;
use crate::providers::HostedSandboxProvider;

/// `tokenId` / `token_id`: one of Modal's own options.
pub const TOKEN_ID: Name = vendor_option("tokenId", "token_id");
/// `tokenSecret` / `token_secret`: one of Modal's own options.
pub const TOKEN_SECRET: Name = vendor_option("tokenSecret", "token_secret");
/// `appId` / `app_id`: one of Modal's own options.
pub const APP_ID: Name = vendor_option("appId", "app_id");
/// `environment` / `environment`: one of Modal's own options.
pub const ENVIRONMENT: Name = vendor_option("environment", "environment");

/// Modal as hosts, the command and the docs see it: its row of the one
/// vendor list (`hosted/vendors.rs`).
pub const SPEC: VendorSpec = VendorSpec {
    key: "modal",
    label: "Modal",
    class: "ModalProvider",
    credential_variables: &["MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"],
    credential_options: &[
        ScopeOption { name: TOKEN_ID, variable: Some("MODAL_TOKEN_ID"), required: true },
        ScopeOption { name: TOKEN_SECRET, variable: Some("MODAL_TOKEN_SECRET"), required: true },
    ],
    api_url_variable: Some("MODAL_SERVER_URL"),
    api_url_doc: "MODAL_SERVER_URL, else https://api.modal.com (gRPC)",
    scope_options: &[
        ScopeOption { name: APP_ID, variable: None, required: false },
        ScopeOption { name: ENVIRONMENT, variable: Some("MODAL_ENVIRONMENT"), required: false },
    ],
    default_page_size: 0,
    max_page_size: 0,
    owner_filter: OwnerFilter::Server,
    marks: Marks::Labels { field: "tags" },
    destroy_doc: "SandboxTerminate, or SandboxTerminateV2 for a V2 id (listed by SandboxListV2 within `appId`)",
    gone_doc: "NOT_FOUND and a finished sandbox (its terminate is success)",
};

/// A provider from a host's or the command's settings (sends nothing); a
/// build without the `modal` feature says so.
pub(crate) fn build(settings: HostedSettings) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    #[cfg(feature = "modal")]
    return Ok(Box::new(ModalProvider::new(ModalConfig::from(settings))?));
    #[cfg(not(feature = "modal"))]
    {
        let _ = settings;
        Err(ProviderError::backend(super::HostedError::Failed(crate::report::messages::hosted_vendor_not_built(
            SPEC.label, "modal",
        ))))
    }
}
