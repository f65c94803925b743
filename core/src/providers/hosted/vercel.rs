//! [`VercelProvider`]: Vercel Sandbox through Vercel's REST API, with an
//! honest destroy and a listing the orphan sweep can trust.
//!
//! The wire calls are the official SDK's (`@vercel/sandbox` 3.5, the v2
//! named-sandbox API; a sandbox is identified by its name):
//! - destroy is `DELETE /v2/sandboxes/{name}` (the SDK's `sandbox.delete()`):
//!   permanent. TanStack's Vercel provider only *stops* a sandbox
//!   (`POST /v2/sandboxes/sessions/{id}/stop`), which keeps it, and its
//!   snapshots, on the bill. `404` means already gone, success; any other
//!   failure fails the destroy, so it reaches the leak ledger.
//! - the listing is `GET /v2/sandboxes?project=…&limit=…&tags=owner-label:owner`,
//!   page after page by `cursor` until `pagination.next` is null. Every
//!   status is listed and swept: a stopped sandbox still bills its storage.
//!
//! Auth is `Authorization: Bearer` from `VERCEL_TOKEN` (or
//! [`VercelConfig::api_key`]), scoped by `teamId` (`VERCEL_TEAM_ID`) and the
//! project (`VERCEL_PROJECT_ID`, required: listings are per project). The
//! SDK has no base-URL variable; the base is [`VercelConfig::api_url`], else
//! `https://api.vercel.com`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::client::{encode_component, Answer};
use super::{
    listed, variable, with_cursor, Entry, Get, HostedConfig, HostedProvider, Listing, Page as HostedPage, Scope,
    ScopeOptions, Vendor, Verb,
};
use crate::contract::errors::ProviderError;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::{vendor_option, HostedSettings, Marks, OwnerFilter, ScopeOption, VendorSpec};
use crate::options::Name;
use crate::providers::HostedSandboxProvider;
use crate::providers::{InvalidInput, LABEL_KEY, LABEL_OWNER};
use crate::report::messages;

/// The largest page Vercel serves.
pub const VERCEL_MAX_PAGE_SIZE: u32 = SPEC.max_page_size;

/// Vercel's public API.
pub const VERCEL_PUBLIC_API_URL: &str = "https://api.vercel.com";

/// Every status the SDK declares; anything else fails the listing closed.
const STATUSES: &[&str] = &["pending", "running", "stopping", "stopped", "failed", "aborted", "snapshotting"];

/// `teamId` / `team_id`: one of Vercel's own options.
pub const TEAM_ID: Name = vendor_option("teamId", "team_id");
/// `projectId` / `project_id`: one of Vercel's own options.
pub const PROJECT_ID: Name = vendor_option("projectId", "project_id");
/// Vercel as hosts, the command and the docs see it: its row of the one
/// vendor list (`hosted/vendors.rs`), from which the options, the Node and
/// Python classes, the command's flag and section and README's row come.
pub const SPEC: VendorSpec = VendorSpec {
    key: "vercel",
    label: "Vercel",
    class: "VercelProvider",
    credential_variables: &["VERCEL_TOKEN"],
    credential_options: &[],
    api_url_variable: None,
    api_url_doc: "https://api.vercel.com",
    scope_options: &[
        ScopeOption { name: TEAM_ID, variable: Some("VERCEL_TEAM_ID"), required: false },
        ScopeOption { name: PROJECT_ID, variable: Some("VERCEL_PROJECT_ID"), required: true },
    ],
    default_page_size: 50,
    max_page_size: 50,
    owner_filter: OwnerFilter::Server,
    marks: Marks::Labels { field: "tags" },
    destroy_doc: "DELETE /v2/sandboxes/{name} (not stop: a stopped sandbox bills)",
    gone_doc: "404; every listed status still bills",
};

/// A provider from a host's or the command's settings (sends nothing).
pub(crate) fn build(settings: HostedSettings) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    super::build_entry::<Vercel>(settings)
}

/// Vercel (the marker of [`VercelConfig`] and [`VercelProvider`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vercel;

impl Vendor for Vercel {
    const ENTRY: &'static Entry = &Entry {
        spec: &SPEC,
        credential_hint: "VERCEL_TOKEN (with VERCEL_TEAM_ID)",
        auth: ("authorization", "Bearer "),
        headers: &[],
        default_api_url: || VERCEL_PUBLIC_API_URL.to_owned(),
        scope,
        check_path: |scope| {
            format!("/v2/sandboxes?{}project={}&limit=1", scope.query, encode_component(&scope.project))
        },
        list_path,
        read_page,
        destroy: (Verb::Delete, |scope, id| {
            format!("/v2/sandboxes/{id}?{}projectId={}", scope.query, encode_component(&scope.project))
        }),
        get: Some(Get {
            path: |scope, id| {
                format!("/v2/sandboxes/{id}?{}projectId={}", scope.query, encode_component(&scope.project))
            },
            read: read_one,
        }),
    };
}

/// How a [`VercelProvider`] reaches Vercel (`api_key` is the access token).
pub type VercelConfig = HostedConfig<Vercel>;

/// Vercel sandboxes: destroy by delete (not stop), list by owner tag.
pub type VercelProvider = HostedProvider<Vercel>;

/// Listings are per project (`VERCEL_PROJECT_ID`, required), scoped by the
/// team (`VERCEL_TEAM_ID`; absent: the token's personal account).
fn scope(options: &ScopeOptions<'_>) -> Result<Scope, InvalidInput> {
    let project = options
        .get(PROJECT_ID)
        .map(str::to_owned)
        .or_else(|| variable("VERCEL_PROJECT_ID"))
        .ok_or_else(|| InvalidInput::new("projectId", messages::VERCEL_NO_PROJECT))?;
    let team = options.get(TEAM_ID).map(str::to_owned).or_else(|| variable("VERCEL_TEAM_ID"));
    let query = team.map(|team| format!("teamId={}&", encode_component(&team))).unwrap_or_default();
    Ok(Scope { query, project, headers: Vec::new() })
}

fn list_path(listing: &Listing<'_>, cursor: Option<&str>) -> String {
    let scope = listing.scope;
    let mut path = format!(
        "/v2/sandboxes?{}project={}&limit={}",
        scope.query,
        encode_component(&scope.project),
        listing.page_size
    );
    if let Some(owner) = listing.owner {
        let tag = format!("{LABEL_OWNER}:{owner}");
        path.push_str(&format!("&tags={}", encode_component(&tag)));
    }
    with_cursor(path, "cursor", cursor)
}

/// `GET /v2/sandboxes/{name}`: `{sandbox, ...}`, its sandbox read as a listed one.
fn read_one(answer: &Answer) -> Result<Option<ListedSandbox>, String> {
    #[derive(Deserialize)]
    struct One {
        sandbox: ListedVercelSandbox,
    }
    answer.json::<One>()?.sandbox.into_listed().map(Some)
}

/// A page of `GET /v2/sandboxes`, the next by `pagination.next`.
fn read_page(answer: &Answer) -> Result<HostedPage, String> {
    let page: Page = answer.json()?;
    let listed = listed(page.sandboxes, ListedVercelSandbox::into_listed)?;
    Ok((listed, page.pagination.next))
}

/// One page of `GET /v2/sandboxes`.
#[derive(Deserialize)]
struct Page {
    sandboxes: Vec<ListedVercelSandbox>,
    pagination: Pagination,
}

#[derive(Deserialize)]
struct Pagination {
    next: Option<String>,
}

/// A sandbox as `GET /v2/sandboxes` lists it (the fields the sweep reads).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListedVercelSandbox {
    name: String,
    created_at: u64,
    status: String,
    #[serde(default)]
    tags: BTreeMap<String, String>,
}

impl ListedVercelSandbox {
    fn into_listed(self) -> Result<ListedSandbox, String> {
        if !STATUSES.contains(&self.status.as_str()) {
            return Err(format!("sandbox {:?} has unknown status {:?}", self.name, self.status));
        }
        Ok(ListedSandbox {
            created_at: Some(self.created_at),
            owner: self.tags.get(LABEL_OWNER).cloned(),
            key: self.tags.get(LABEL_KEY).cloned(),
            id: self.name,
            deleting: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::errors::ProviderError;

    fn config() -> VercelConfig {
        let config = VercelConfig {
            api_key: Some("vercel_secret".into()),
            api_url: Some("http://127.0.0.1:9".into()),
            page_size: 3,
            ..VercelConfig::default()
        };
        config.with(TEAM_ID, "team_1").with(PROJECT_ID, "prj_1")
    }

    #[test]
    fn the_listing_filters_by_the_owner_tag_in_the_team_and_project() {
        let provider = VercelProvider::new(VercelConfig { owner: "team a&b".into(), ..config() }).unwrap();
        assert_eq!(
            provider.list_path(Some("c1")),
            "/v2/sandboxes?teamId=team_1&project=prj_1&limit=3&tags=io.sandbox-reclaim.owner%3Ateam%20a%26b&cursor=c1"
        );
        assert!(!format!("{provider:?}").contains("vercel_secret"));
        assert!(!format!("{:?}", config()).contains("vercel_secret"));
    }

    #[test]
    fn a_project_is_required_and_named() {
        let mut unscoped = config();
        unscoped.options.remove(PROJECT_ID.node);
        let error = VercelProvider::new(unscoped);
        // VERCEL_PROJECT_ID may be set where the tests run; only check when it is not.
        if std::env::var("VERCEL_PROJECT_ID").is_err() {
            let error = error.unwrap_err();
            let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
            assert_eq!(inner.downcast_ref::<InvalidInput>().map(|invalid| invalid.field), Some("projectId"));
            assert!(error.to_string().contains("VERCEL_PROJECT_ID"));
        }
    }

    #[test]
    fn unknown_statuses_fail_closed() {
        let listed = |status: &str| ListedVercelSandbox {
            name: "b1".into(),
            created_at: 5,
            status: status.into(),
            tags: BTreeMap::from([(LABEL_OWNER.to_owned(), "o".to_owned())]),
        };
        let stopped = listed("stopped").into_listed().unwrap();
        assert_eq!((stopped.id.as_str(), stopped.created_at, stopped.owner.as_deref()), ("b1", Some(5), Some("o")));
        assert!(listed("melting").into_listed().is_err());
    }
}
