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
//! [`VercelConfig::token`]), scoped by `teamId` (`VERCEL_TEAM_ID`) and the
//! project (`VERCEL_PROJECT_ID`, required: listings are per project). The
//! SDK has no base-URL variable; the base is [`VercelConfig::api_url`], else
//! `https://api.vercel.com`.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;

use super::http::{encode_component, Answer, HostedClient, Vendor};
use super::{
    validate_id, validate_owner, validate_provider_name, HostedSandboxProvider, InvalidInput, LABEL_KEY, LABEL_OWNER,
};
use crate::contract::errors::ProviderError;
use crate::contract::SandboxProvider;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::{HostedSettings, HostedVendor, ListingCeilings};

const VENDOR: Vendor =
    Vendor { label: "Vercel", credential_variable: "VERCEL_TOKEN (with VERCEL_TEAM_ID)", credential_option: "apiKey" };

/// The largest page Vercel serves.
pub const VERCEL_MAX_PAGE_SIZE: u32 = HostedVendor::Vercel.max_page_size();

/// Vercel's public API.
pub const VERCEL_PUBLIC_API_URL: &str = "https://api.vercel.com";

/// Every status the SDK declares; anything else fails the listing closed.
const STATUSES: &[&str] = &["pending", "running", "stopping", "stopped", "failed", "aborted", "snapshotting"];

/// How a [`VercelProvider`] reaches Vercel.
#[derive(Clone, PartialEq, Eq)]
pub struct VercelConfig {
    /// The name instance records carry in `provider`. Default `vercel`
    /// (TanStack's Vercel provider's name, so its records reclaim through ours).
    pub name: String,
    /// The owner namespace: the tag the listing is filtered by.
    pub owner: String,
    /// The access token; `None`: `VERCEL_TOKEN`.
    pub token: Option<String>,
    /// The team; `None`: `VERCEL_TEAM_ID` (absent: the token's personal account).
    pub team_id: Option<String>,
    /// The project; `None`: `VERCEL_PROJECT_ID`. Required.
    pub project_id: Option<String>,
    /// The API base URL; `None`: [`VERCEL_PUBLIC_API_URL`].
    pub api_url: Option<String>,
    /// Sandboxes per listing page, 1 to [`VERCEL_MAX_PAGE_SIZE`]. Default 50.
    pub page_size: u32,
    /// List every sandbox, not only those under our owner label, so the
    /// sweep also finds unlabelled ones the store's registry names (what
    /// TanStack's providers create). An unlabelled sandbox is listed with
    /// owner `""`; one neither labelled nor registered is never touched.
    /// Default false.
    pub sweep_unlabelled: bool,
    /// How long one HTTP request may take. Default 30 s.
    pub request_timeout: Duration,
    /// How far one listing goes before it fails closed (pages followed,
    /// sandboxes read). Default [`ListingCeilings::default`]; hosts set it
    /// with `maxListingPages` / `maxListingItems`.
    pub listing_ceilings: ListingCeilings,
}

impl Default for VercelConfig {
    fn default() -> Self {
        Self::from(HostedSettings::defaults(HostedVendor::Vercel))
    }
}

/// The settings a host's options gave ([`HostedSettings::from_host`]), or the defaults.
impl From<HostedSettings> for VercelConfig {
    fn from(settings: HostedSettings) -> Self {
        Self {
            name: settings.name,
            owner: settings.owner,
            token: settings.api_key,
            team_id: settings.team_id,
            project_id: settings.project_id,
            api_url: settings.api_url,
            page_size: settings.page_size,
            sweep_unlabelled: settings.sweep_unlabelled,
            request_timeout: settings.request_timeout,
            listing_ceilings: settings.listing_ceilings,
        }
    }
}

// By hand, so the token never reaches a log line through `{:?}`.
impl fmt::Debug for VercelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VercelConfig")
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("team_id", &self.team_id)
            .field("project_id", &self.project_id)
            .field("api_url", &self.api_url)
            .field("page_size", &self.page_size)
            .field("sweep_unlabelled", &self.sweep_unlabelled)
            .field("request_timeout", &self.request_timeout)
            .field("listing_ceilings", &self.listing_ceilings)
            .finish()
    }
}

/// Vercel sandboxes: destroy by delete (not stop), list by owner tag.
pub struct VercelProvider {
    name: String,
    owner: String,
    page_size: u32,
    sweep_unlabelled: bool,
    listing_ceilings: ListingCeilings,
    api_url: String,
    /// `teamId=…&` (or nothing), then the project parameter's value.
    team_query: String,
    project_id: String,
    client: HostedClient,
}

impl fmt::Debug for VercelProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VercelProvider")
            .field("name", &self.name)
            .field("api_url", &self.api_url)
            .field("project_id", &self.project_id)
            .finish()
    }
}

fn variable(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

impl VercelProvider {
    /// Checks the config and resolves the token, team and project from the
    /// environment. Sends nothing; see [`HostedSandboxProvider::check_access`].
    pub fn new(config: VercelConfig) -> Result<Self, ProviderError> {
        validate_provider_name(&config.name)?;
        validate_owner(&config.owner)?;
        if !(1..=VERCEL_MAX_PAGE_SIZE).contains(&config.page_size) {
            let reason = format!("must be between 1 and {VERCEL_MAX_PAGE_SIZE}, got {}", config.page_size);
            return Err(InvalidInput::new("pageSize", reason).into());
        }
        let project_id = config.project_id.clone().or_else(|| variable("VERCEL_PROJECT_ID")).ok_or_else(|| {
            InvalidInput::new("projectId", "no Vercel project: set VERCEL_PROJECT_ID or pass the `projectId` option")
        })?;
        let team_id = config.team_id.clone().or_else(|| variable("VERCEL_TEAM_ID"));
        let team_query = team_id.map(|team| format!("teamId={}&", encode_component(&team))).unwrap_or_default();
        let token = config.token.clone().or_else(|| std::env::var("VERCEL_TOKEN").ok()).unwrap_or_default();
        let api_url = config.api_url.clone().unwrap_or_else(|| VERCEL_PUBLIC_API_URL.to_owned());
        let client = HostedClient::new(VENDOR, &api_url, "authorization", "Bearer ", &token, config.request_timeout)?;
        Ok(Self {
            name: config.name,
            owner: config.owner,
            page_size: config.page_size,
            sweep_unlabelled: config.sweep_unlabelled,
            listing_ceilings: config.listing_ceilings,
            api_url,
            team_query,
            project_id,
            client,
        })
    }

    fn list_path(&self, cursor: Option<&str>) -> String {
        let mut path = format!(
            "/v2/sandboxes?{}project={}&limit={}",
            self.team_query,
            encode_component(&self.project_id),
            self.page_size
        );
        if !self.sweep_unlabelled {
            let tag = format!("{LABEL_OWNER}:{}", self.owner);
            path.push_str(&format!("&tags={}", encode_component(&tag)));
        }
        if let Some(cursor) = cursor {
            path.push_str("&cursor=");
            path.push_str(&encode_component(cursor));
        }
        path
    }
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

#[async_trait]
impl HostedSandboxProvider for VercelProvider {
    fn api_url(&self) -> &str {
        &self.api_url
    }

    /// One listing call of one sandbox: refused (naming `VERCEL_TOKEN`) when
    /// Vercel refuses the token or team.
    async fn check_access(&self) -> Result<(), ProviderError> {
        let path = format!("/v2/sandboxes?{}project={}&limit=1", self.team_query, encode_component(&self.project_id));
        self.client.check(&path).await
    }
}

#[async_trait]
impl SandboxProvider for VercelProvider {
    fn name(&self) -> &str {
        &self.name
    }

    /// `DELETE /v2/sandboxes/{name}`: deleted for good, or already gone (`404`).
    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError> {
        validate_id(provider_sandbox_id)?;
        let project = encode_component(&self.project_id);
        let path = format!("/v2/sandboxes/{provider_sandbox_id}?{}projectId={project}", self.team_query);
        self.client.delete_tolerating_gone(&path).await
    }

    fn can_list(&self) -> bool {
        true
    }

    /// Every page under our owner tag, by `pagination.next`.
    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        let read = |answer: &Answer| {
            let page: Page = answer.json()?;
            let listed =
                page.sandboxes.into_iter().map(ListedVercelSandbox::into_listed).collect::<Result<Vec<_>, _>>()?;
            let listed = super::http::unlabelled_as_empty(listed, self.sweep_unlabelled);
            Ok((listed, page.pagination.next))
        };
        self.client.list_pages(self.listing_ceilings, |cursor| self.list_path(cursor), read).await
    }

    fn owner(&self) -> Option<&str> {
        Some(&self.owner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> VercelConfig {
        VercelConfig {
            token: Some("vercel_secret".into()),
            team_id: Some("team_1".into()),
            project_id: Some("prj_1".into()),
            api_url: Some("http://127.0.0.1:9".into()),
            page_size: 3,
            ..VercelConfig::default()
        }
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
        let error = VercelProvider::new(VercelConfig { project_id: None, ..config() });
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
