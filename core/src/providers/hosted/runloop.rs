//! [`RunloopProvider`]: Runloop devboxes through Runloop's REST API.
//!
//! The wire calls are the official SDKs' (npm `@runloop/api-client` 1.32,
//! PyPI `runloop-api-client` 3.0; `docs/research/runloop.md`):
//! - Runloop never deletes a devbox. Destroy is `POST
//!   /v1/devboxes/{id}/shutdown`, which is permanent (the disk is deleted);
//!   the devbox then stays listed with status `shutdown` (or `failure`)
//!   forever. Those two terminal states are *gone*: never listed to the
//!   sweep, so never destroyed again nor counted as still billing. A
//!   `suspended` devbox still bills its storage, so it is swept. `404` means
//!   already gone. A `409` (a snapshot in progress) fails the destroy, which
//!   reaches the leak ledger and is retried once the snapshot is done: we
//!   never pass `force`, so a user's snapshot is never cut short.
//! - the listing is `GET /v1/devboxes?limit=…`, page after page by
//!   `starting_after` (the last devbox's id) while `has_more`, which must be
//!   present (the SDKs disagree on its absence, so it fails closed). Runloop
//!   has no metadata filter: the engine keeps the devboxes whose metadata
//!   names our owner.
//!
//! Auth is `Authorization: Bearer` from `RUNLOOP_API_KEY`; the base URL is
//! the option, else `RUNLOOP_BASE_URL`, else `https://api.runloop.ai`, as in
//! the SDKs.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::client::{encode_component, Answer};
use super::{
    listed, owner_and_key, unscoped, variable, with_cursor, Entry, Get, HostedConfig, HostedProvider, Listing, Page,
    Vendor, Verb,
};
use crate::contract::errors::ProviderError;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::{HostedSettings, Marks, OwnerFilter, VendorSpec};
use crate::providers::HostedSandboxProvider;

/// Runloop's public API.
pub const RUNLOOP_PUBLIC_API_URL: &str = "https://api.runloop.ai";

/// Every status the SDKs declare; anything else fails the listing closed.
const STATUSES: &[&str] = &[
    "scheduled",
    "queued",
    "provisioning",
    "initializing",
    "running",
    "suspending",
    "suspended",
    "resuming",
    "failure",
    "shutdown",
];

/// Terminal: the devbox is gone for billing, though listed forever.
const GONE: &[&str] = &["shutdown", "failure"];

/// Runloop as hosts, the command and the docs see it: its row of the one
/// vendor list (`hosted/vendors.rs`), from which the options, the Node and
/// Python classes, the command's flag and section and README's row come.
pub const SPEC: VendorSpec = VendorSpec {
    key: "runloop",
    label: "Runloop",
    class: "RunloopProvider",
    credential_variables: &["RUNLOOP_API_KEY"],
    credential_options: &[],
    api_url_variable: Some("RUNLOOP_BASE_URL"),
    api_url_doc: "RUNLOOP_BASE_URL, else https://api.runloop.ai",
    scope_options: &[],
    default_page_size: 100,
    max_page_size: 5000,
    owner_filter: OwnerFilter::Client,
    marks: Marks::Labels { field: "metadata" },
    destroy_doc: "POST /v1/devboxes/{id}/shutdown (Runloop never deletes a devbox)",
    gone_doc: "`shutdown` and `failure` (listed forever, never billed); `suspended` still bills",
};

/// A provider from a host's or the command's settings (sends nothing).
pub(crate) fn build(settings: HostedSettings) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    super::build_entry::<Runloop>(settings)
}

/// Runloop (the marker of [`RunloopConfig`] and [`RunloopProvider`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runloop;

impl Vendor for Runloop {
    const ENTRY: &'static Entry = &Entry {
        spec: &SPEC,
        credential_hint: "RUNLOOP_API_KEY",
        auth: ("authorization", "Bearer "),
        headers: &[],
        default_api_url: || variable("RUNLOOP_BASE_URL").unwrap_or_else(|| RUNLOOP_PUBLIC_API_URL.to_owned()),
        scope: unscoped,
        check_path: |_| "/v1/devboxes?limit=1".to_owned(),
        list_path: |listing: &Listing<'_>, cursor| {
            with_cursor(format!("/v1/devboxes?limit={}", listing.page_size), "starting_after", cursor)
        },
        read_page,
        destroy: (Verb::Post, |_, id| format!("/v1/devboxes/{}/shutdown", encode_component(id))),
        get: Some(Get { path: |_, id| format!("/v1/devboxes/{}", encode_component(id)), read: read_one }),
    };
}

/// How a [`RunloopProvider`] reaches Runloop.
pub type RunloopConfig = HostedConfig<Runloop>;

/// Runloop devboxes: destroy by shutdown, list every devbox and keep ours by metadata.
pub type RunloopProvider = HostedProvider<Runloop>;

/// `GET /v1/devboxes/{id}`: the devbox; shut down or failed, it is gone.
fn read_one(answer: &Answer) -> Result<Option<ListedSandbox>, String> {
    let devbox = answer.json::<Devbox>()?.checked()?;
    if GONE.contains(&devbox.status.as_str()) {
        return Ok(None);
    }
    devbox.into_listed().map(Some)
}

/// A page of `GET /v1/devboxes`; the next starts after its last devbox.
fn read_page(answer: &Answer) -> Result<Page, String> {
    let page: DevboxPage = answer.json()?;
    let next = match (page.has_more, page.devboxes.last()) {
        (false, _) => None,
        (true, Some(last)) => Some(last.id.clone()),
        (true, None) => return Err("`has_more` on an empty page".to_owned()),
    };
    let devboxes = page.devboxes.into_iter().map(Devbox::checked).collect::<Result<Vec<_>, _>>()?;
    let live = devboxes.into_iter().filter(|devbox| !GONE.contains(&devbox.status.as_str())).collect();
    Ok((listed(live, Devbox::into_listed)?, next))
}

#[derive(Deserialize)]
struct DevboxPage {
    devboxes: Vec<Devbox>,
    has_more: bool,
}

/// A devbox as the listing shows it (the fields the sweep reads).
#[derive(Deserialize)]
struct Devbox {
    id: String,
    create_time_ms: Option<u64>,
    status: String,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
}

impl Devbox {
    fn checked(self) -> Result<Self, String> {
        if STATUSES.contains(&self.status.as_str()) {
            Ok(self)
        } else {
            Err(format!("devbox {:?} has unknown status {:?}", self.id, self.status))
        }
    }

    fn into_listed(self) -> Result<ListedSandbox, String> {
        let (owner, key) = owner_and_key(&self.metadata);
        Ok(ListedSandbox { id: self.id, created_at: self.create_time_ms, owner, key, deleting: false })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(body: &str) -> Result<Page, String> {
        read_page(&Answer::for_test(200, body))
    }

    #[test]
    fn shut_down_devboxes_are_gone_and_the_cursor_is_the_last_id() {
        let body = r#"{"has_more":true,"devboxes":[
            {"id":"d1","status":"running","create_time_ms":5,"metadata":{"io.sandbox-reclaim.owner":"o"}},
            {"id":"d2","status":"suspended","create_time_ms":6,"metadata":{}},
            {"id":"d3","status":"shutdown","create_time_ms":7,"metadata":{}}]}"#;
        let (listed, next) = page(body).unwrap();
        let ids: Vec<&str> = listed.iter().map(|devbox| devbox.id.as_str()).collect();
        assert_eq!((ids, next.as_deref()), (vec!["d1", "d2"], Some("d3")), "the cursor counts the gone one");
        assert_eq!(listed[0].owner.as_deref(), Some("o"));
    }

    #[test]
    fn unknown_statuses_and_a_missing_has_more_fail_closed() {
        assert!(page(r#"{"has_more":false,"devboxes":[{"id":"d","status":"melting"}]}"#).is_err());
        assert!(page(r#"{"devboxes":[]}"#).is_err());
        assert!(page(r#"{"has_more":true,"devboxes":[]}"#).is_err());
    }
}
