//! [`BlaxelProvider`]: Blaxel sandboxes through Blaxel's control-plane API.
//!
//! The wire calls are the official SDKs' (npm `@blaxel/core` 0.3, PyPI
//! `blaxel` 0.4; `docs/research/blaxel.md`); a sandbox is identified by its
//! `metadata.name`:
//! - destroy is `DELETE /v0/sandboxes/{name}`: the sandbox goes `DELETING`,
//!   then is a `TERMINATED` tombstone that `GET` still reads (200) for its
//!   retention (5 minutes by default) before it is gone. `404` means already
//!   gone, success.
//! - the listing is `GET /v0/sandboxes?limit=…` with the `Blaxel-Version`
//!   header (without it the API answers one unpaged array), page after page
//!   by `cursor` while `meta.hasMore`. `TERMINATED` tombstones are gone
//!   (left out, were one listed); a `DELETING` sandbox is listed `deleting`:
//!   reported, never destroyed again. `q` is a fuzzy search, not a label
//!   filter, so the engine keeps the sandboxes whose labels name our owner.
//!
//! Auth is `X-Blaxel-Authorization: Bearer` from `BL_API_KEY`, with the
//! workspace in `X-Blaxel-Workspace` (`BL_WORKSPACE`, required). The base URL
//! is the option, else `BL_API_URL` (which includes `/v0`, as the Node SDK
//! reads it; the Python SDK reads no variable), else the public API
//! (`https://api.blaxel.dev/v0` when `BL_ENV` is `dev`).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::client::{encode_component, parse_rfc3339_millis, Answer};
use super::{
    listed, owner_and_key, variable, with_cursor, Entry, Get, HostedConfig, HostedProvider, Listing, Page, Scope,
    ScopeOptions, Vendor, Verb,
};
use crate::contract::errors::ProviderError;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::{vendor_option, HostedSettings, Marks, OwnerFilter, ScopeOption, VendorSpec};
use crate::options::Name;
use crate::providers::HostedSandboxProvider;
use crate::providers::InvalidInput;
use crate::report::messages;

/// Blaxel's public API.
pub const BLAXEL_PUBLIC_API_URL: &str = "https://api.blaxel.ai/v0";

/// The API version whose listing is paged (`{data, meta}`), as the Node SDK sends it.
const API_VERSION: &str = "2026-04-28";

/// Every status the SDKs declare (and `TERMINATING`, which the Node SDK's
/// code names); anything else fails the listing closed.
const STATUSES: &[&str] = &[
    "DELETING",
    "TERMINATING",
    "TERMINATED",
    "FAILED",
    "DEACTIVATED",
    "DEACTIVATING",
    "UPLOADING",
    "BUILDING",
    "DEPLOYING",
    "DEPLOYED",
    "BUILT",
    "ARCHIVING",
    "ARCHIVED",
    "UNARCHIVING",
];

/// `workspace` / `workspace`: one of Blaxel's own options.
pub const WORKSPACE: Name = vendor_option("workspace", "workspace");
/// Blaxel as hosts, the command and the docs see it: its row of the one
/// vendor list (`hosted/vendors.rs`), from which the options, the Node and
/// Python classes, the command's flag and section and README's row come.
pub const SPEC: VendorSpec = VendorSpec {
    key: "blaxel",
    label: "Blaxel",
    class: "BlaxelProvider",
    credential_variables: &["BL_API_KEY"],
    credential_options: &[],
    api_url_variable: Some("BL_API_URL"),
    api_url_doc: "BL_API_URL, else https://api.blaxel.ai/v0 (https://api.blaxel.dev/v0 when BL_ENV=dev)",
    scope_options: &[ScopeOption { name: WORKSPACE, variable: Some("BL_WORKSPACE"), required: true }],
    default_page_size: 100,
    max_page_size: 200,
    owner_filter: OwnerFilter::Client,
    marks: Marks::Labels { field: "metadata.labels" },
    destroy_doc: "DELETE /v0/sandboxes/{name}",
    gone_doc: "404 and `TERMINATED` (a tombstone GET still reads); `DELETING` is deleting",
};

/// A provider from a host's or the command's settings (sends nothing).
pub(crate) fn build(settings: HostedSettings) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    super::build_entry::<Blaxel>(settings)
}

/// Blaxel (the marker of [`BlaxelConfig`] and [`BlaxelProvider`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blaxel;

impl Vendor for Blaxel {
    const ENTRY: &'static Entry = &Entry {
        spec: &SPEC,
        credential_hint: "BL_API_KEY (with BL_WORKSPACE)",
        auth: ("x-blaxel-authorization", "Bearer "),
        headers: &[("blaxel-version", API_VERSION)],
        default_api_url,
        scope,
        check_path: |_| "/sandboxes?limit=1".to_owned(),
        list_path: |listing: &Listing<'_>, cursor| {
            with_cursor(format!("/sandboxes?limit={}", listing.page_size), "cursor", cursor)
        },
        read_page,
        destroy: (Verb::Delete, |_, name| format!("/sandboxes/{}", encode_component(name))),
        get: Some(Get { path: |_, name| format!("/sandboxes/{}", encode_component(name)), read: read_one }),
    };
}

/// How a [`BlaxelProvider`] reaches Blaxel.
pub type BlaxelConfig = HostedConfig<Blaxel>;

/// Blaxel sandboxes: destroy by delete, list every sandbox and keep ours by label.
pub type BlaxelProvider = HostedProvider<Blaxel>;

/// `BL_API_URL`, else the public API of `BL_ENV`.
fn default_api_url() -> String {
    variable("BL_API_URL").unwrap_or_else(|| match variable("BL_ENV").as_deref() {
        Some("dev") => "https://api.blaxel.dev/v0".to_owned(),
        _ => BLAXEL_PUBLIC_API_URL.to_owned(),
    })
}

/// Every request names the workspace (`BL_WORKSPACE`, required).
fn scope(options: &ScopeOptions<'_>) -> Result<Scope, InvalidInput> {
    let workspace = options.get(WORKSPACE).map(str::to_owned).or_else(|| variable("BL_WORKSPACE"));
    let missing = || messages::hosted_missing_scope("Blaxel", "workspace", "BL_WORKSPACE", "workspace");
    let workspace =
        workspace.filter(|name| !name.is_empty()).ok_or_else(|| InvalidInput::new("workspace", missing()))?;
    if !workspace.bytes().all(|byte| byte.is_ascii_graphic()) {
        return Err(InvalidInput::new(
            "workspace",
            messages::hosted_unprintable_header("Blaxel", "x-blaxel-workspace"),
        ));
    }
    Ok(Scope { headers: vec![("x-blaxel-workspace", workspace)], ..Scope::default() })
}

/// `GET /v0/sandboxes/{name}`: the sandbox; a `TERMINATED` tombstone is gone.
fn read_one(answer: &Answer) -> Result<Option<ListedSandbox>, String> {
    let sandbox = answer.json::<ListedBlaxelSandbox>()?.checked()?;
    if sandbox.status == "TERMINATED" {
        return Ok(None);
    }
    sandbox.into_listed().map(Some)
}

/// A page of `GET /v0/sandboxes`, the next by `meta.nextCursor`.
fn read_page(answer: &Answer) -> Result<Page, String> {
    let page: SandboxPage = answer.json()?;
    let next = match (page.meta.has_more, page.meta.next_cursor) {
        (false, _) => None,
        (true, Some(cursor)) if !cursor.is_empty() => Some(cursor),
        (true, _) => return Err("`meta.hasMore` without a `meta.nextCursor`".to_owned()),
    };
    let sandboxes = page.data.into_iter().map(ListedBlaxelSandbox::checked).collect::<Result<Vec<_>, _>>()?;
    let live = sandboxes.into_iter().filter(|sandbox| sandbox.status != "TERMINATED").collect();
    Ok((listed(live, ListedBlaxelSandbox::into_listed)?, next))
}

#[derive(Deserialize)]
struct SandboxPage {
    data: Vec<ListedBlaxelSandbox>,
    meta: Meta,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    has_more: bool,
    next_cursor: Option<String>,
}

/// A sandbox as the listing shows it (the fields the sweep reads).
#[derive(Deserialize)]
struct ListedBlaxelSandbox {
    metadata: Metadata,
    status: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    name: String,
    created_at: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

impl ListedBlaxelSandbox {
    fn checked(mut self) -> Result<Self, String> {
        // The Python SDK reads statuses case-insensitively.
        self.status.make_ascii_uppercase();
        if STATUSES.contains(&self.status.as_str()) {
            Ok(self)
        } else {
            Err(format!("sandbox {:?} has unknown status {:?}", self.metadata.name, self.status))
        }
    }

    fn into_listed(self) -> Result<ListedSandbox, String> {
        let (owner, key) = owner_and_key(&self.metadata.labels.unwrap_or_default());
        Ok(ListedSandbox {
            created_at: self.metadata.created_at.as_deref().and_then(parse_rfc3339_millis),
            owner,
            key,
            deleting: matches!(self.status.as_str(), "DELETING" | "TERMINATING"),
            id: self.metadata.name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(body: &str) -> Result<Page, String> {
        read_page(&Answer::for_test(200, body))
    }

    #[test]
    fn tombstones_are_gone_and_deleting_is_reported() {
        let body = r#"{"meta":{"hasMore":true,"nextCursor":"c2"},"data":[
            {"metadata":{"name":"a","createdAt":"2026-01-01T00:00:00Z","labels":{"io.sandbox-reclaim.owner":"o"}},"spec":{},"status":"DEPLOYED"},
            {"metadata":{"name":"b"},"spec":{},"status":"deleting"},
            {"metadata":{"name":"c"},"spec":{},"status":"TERMINATED"}]}"#;
        let (listed, next) = page(body).unwrap();
        let seen: Vec<(&str, bool)> = listed.iter().map(|sandbox| (sandbox.id.as_str(), sandbox.deleting)).collect();
        assert_eq!((seen, next.as_deref()), (vec![("a", false), ("b", true)], Some("c2")));
        assert_eq!((listed[0].owner.as_deref(), listed[0].created_at), (Some("o"), Some(1_767_225_600_000)));
    }

    #[test]
    fn unknown_statuses_and_a_cursorless_has_more_fail_closed() {
        assert!(page(r#"{"meta":{"hasMore":false},"data":[{"metadata":{"name":"a"},"status":"MELTING"}]}"#).is_err());
        assert!(page(r#"{"meta":{"hasMore":true,"nextCursor":""},"data":[]}"#).is_err());
        assert!(page(r#"[]"#).is_err(), "the unpaged answer of an old API version");
    }

    #[test]
    fn the_workspace_is_required_and_sent_as_a_header() {
        let none = std::collections::BTreeMap::new();
        let given = |workspace: &str| std::collections::BTreeMap::from([(WORKSPACE.node, workspace.to_owned())]);
        if std::env::var("BL_WORKSPACE").is_err() {
            let error = scope(&ScopeOptions { options: &none }).unwrap_err();
            assert_eq!(error.field, "workspace");
            assert!(error.to_string().contains("BL_WORKSPACE"), "{error}");
        }
        let scoped = scope(&ScopeOptions { options: &given("ws1") }).unwrap();
        assert_eq!(scoped.headers, [("x-blaxel-workspace", "ws1".to_owned())]);
        assert!(scope(&ScopeOptions { options: &given("a b") }).is_err());
    }
}
