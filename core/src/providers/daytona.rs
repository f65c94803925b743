//! [`DaytonaProvider`]: Daytona sandboxes through Daytona's REST API, with an
//! honest destroy and a listing the orphan sweep can trust.
//!
//! The wire calls are the official SDK's (`@daytonaio/sdk`, PyPI `daytona`):
//! - destroy is `DELETE /sandbox/{id}`: permanent (the sandbox goes to
//!   `destroying`, then is gone). `404` means already gone, success; any other
//!   failure (a `409` while a state change is in progress, 5xx, a timeout)
//!   fails the destroy, so it reaches the leak ledger (TanStack's provider
//!   swallows it).
//! - the listing is `GET /sandbox?labels={"owner-label":"owner"}&limit=…`,
//!   page after page by `cursor` until `nextCursor` is null. A sandbox Daytona
//!   is already deleting (`state: destroying`, or `desiredState: destroyed`)
//!   is listed as `deleting`: reported, never destroyed again. Stopped,
//!   archived and paused sandboxes still bill, so they are swept.
//!
//! Auth is `Authorization: Bearer` from `DAYTONA_API_KEY` (or
//! [`DaytonaConfig::api_key`]); the base URL is [`DaytonaConfig::api_url`],
//! else `DAYTONA_API_URL`, else `https://app.daytona.io/api`, as in the SDK.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;

use super::http::{encode_component, parse_rfc3339_millis, Answer, HostedClient, Vendor};
use super::{
    validate_id, validate_owner, validate_provider_name, HostedSandboxProvider, InvalidInput, LABEL_KEY, LABEL_OWNER,
};
use crate::contract::errors::ProviderError;
use crate::contract::SandboxProvider;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::{HostedSettings, HostedVendor, ListingCeilings};

const VENDOR: Vendor = Vendor { label: "Daytona", credential_variable: "DAYTONA_API_KEY", credential_option: "apiKey" };

/// The largest page Daytona serves.
pub const DAYTONA_MAX_PAGE_SIZE: u32 = HostedVendor::Daytona.max_page_size();

/// Daytona's public API.
pub const DAYTONA_PUBLIC_API_URL: &str = "https://app.daytona.io/api";

/// Every sandbox state Daytona's API declares; anything else fails the listing closed.
const STATES: &[&str] = &[
    "creating",
    "restoring",
    "destroyed",
    "destroying",
    "started",
    "stopped",
    "starting",
    "stopping",
    "error",
    "build_failed",
    "pending_build",
    "building_snapshot",
    "unknown",
    "pulling_snapshot",
    "archived",
    "archiving",
    "resizing",
    "snapshotting",
    "forking",
    "pausing",
    "paused",
    "resuming",
];

/// How a [`DaytonaProvider`] reaches Daytona.
#[derive(Clone, PartialEq, Eq)]
pub struct DaytonaConfig {
    /// The name instance records carry in `provider`. Default `daytona`
    /// (TanStack's Daytona provider's name, so its records reclaim through ours).
    pub name: String,
    /// The owner namespace: the label the listing is filtered by.
    pub owner: String,
    /// The API key; `None`: `DAYTONA_API_KEY`.
    pub api_key: Option<String>,
    /// The API base URL; `None`: `DAYTONA_API_URL`, else [`DAYTONA_PUBLIC_API_URL`].
    pub api_url: Option<String>,
    /// Sandboxes per listing page, 1 to [`DAYTONA_MAX_PAGE_SIZE`]. Default 100.
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

impl Default for DaytonaConfig {
    fn default() -> Self {
        Self::from(HostedSettings::defaults(HostedVendor::Daytona))
    }
}

/// The settings a host's options gave ([`HostedSettings::from_host`]), or the defaults.
impl From<HostedSettings> for DaytonaConfig {
    fn from(settings: HostedSettings) -> Self {
        Self {
            name: settings.name,
            owner: settings.owner,
            api_key: settings.api_key,
            api_url: settings.api_url,
            page_size: settings.page_size,
            sweep_unlabelled: settings.sweep_unlabelled,
            request_timeout: settings.request_timeout,
            listing_ceilings: settings.listing_ceilings,
        }
    }
}

// By hand, so the key never reaches a log line through `{:?}`.
impl fmt::Debug for DaytonaConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DaytonaConfig")
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_url", &self.api_url)
            .field("page_size", &self.page_size)
            .field("sweep_unlabelled", &self.sweep_unlabelled)
            .field("request_timeout", &self.request_timeout)
            .field("listing_ceilings", &self.listing_ceilings)
            .finish()
    }
}

/// Daytona sandboxes: destroy by delete, list by owner label.
pub struct DaytonaProvider {
    name: String,
    owner: String,
    page_size: u32,
    sweep_unlabelled: bool,
    listing_ceilings: ListingCeilings,
    api_url: String,
    client: HostedClient,
}

impl fmt::Debug for DaytonaProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DaytonaProvider").field("name", &self.name).field("api_url", &self.api_url).finish()
    }
}

/// The base URL the SDK would use: `DAYTONA_API_URL`, else the public API.
pub fn daytona_default_api_url() -> String {
    std::env::var("DAYTONA_API_URL")
        .ok()
        .filter(|value| !value.is_empty())
        .unwrap_or_else(|| DAYTONA_PUBLIC_API_URL.to_owned())
}

impl DaytonaProvider {
    /// Checks the config and resolves the key and URL from the environment.
    /// Sends nothing; see [`HostedSandboxProvider::check_access`].
    pub fn new(config: DaytonaConfig) -> Result<Self, ProviderError> {
        validate_provider_name(&config.name)?;
        validate_owner(&config.owner)?;
        if !(1..=DAYTONA_MAX_PAGE_SIZE).contains(&config.page_size) {
            let reason = format!("must be between 1 and {DAYTONA_MAX_PAGE_SIZE}, got {}", config.page_size);
            return Err(InvalidInput::new("pageSize", reason).into());
        }
        let api_key = config.api_key.clone().or_else(|| std::env::var("DAYTONA_API_KEY").ok()).unwrap_or_default();
        let api_url = config.api_url.clone().unwrap_or_else(daytona_default_api_url);
        let client = HostedClient::new(VENDOR, &api_url, "authorization", "Bearer ", &api_key, config.request_timeout)?;
        let sweep_unlabelled = config.sweep_unlabelled;
        Ok(Self {
            name: config.name,
            owner: config.owner,
            page_size: config.page_size,
            sweep_unlabelled,
            listing_ceilings: config.listing_ceilings,
            api_url,
            client,
        })
    }

    fn list_path(&self, cursor: Option<&str>) -> String {
        // The SDK sends the filter as JSON; Daytona matches it by containment.
        let mut path = "/sandbox?".to_owned();
        if !self.sweep_unlabelled {
            let labels = serde_json::json!({ LABEL_OWNER: self.owner }).to_string();
            path.push_str(&format!("labels={}&", encode_component(&labels)));
        }
        path.push_str(&format!("limit={}", self.page_size));
        if let Some(cursor) = cursor {
            path.push_str("&cursor=");
            path.push_str(&encode_component(cursor));
        }
        path
    }
}

/// One page of `GET /sandbox`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Page {
    items: Vec<ListedDaytonaSandbox>,
    next_cursor: Option<String>,
}

/// A sandbox as `GET /sandbox` lists it (the fields the sweep reads).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListedDaytonaSandbox {
    id: String,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    desired_state: Option<String>,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

impl ListedDaytonaSandbox {
    fn into_listed(self) -> Result<ListedSandbox, String> {
        if let Some(state) = &self.state {
            if !STATES.contains(&state.as_str()) {
                return Err(format!("sandbox {:?} is in unknown state {state:?}", self.id));
            }
        }
        let deleting = matches!(self.state.as_deref(), Some("destroying" | "destroyed"))
            || self.desired_state.as_deref() == Some("destroyed");
        Ok(ListedSandbox {
            created_at: self.created_at.as_deref().and_then(parse_rfc3339_millis),
            owner: self.labels.get(LABEL_OWNER).cloned(),
            key: self.labels.get(LABEL_KEY).cloned(),
            id: self.id,
            deleting,
        })
    }
}

#[async_trait]
impl HostedSandboxProvider for DaytonaProvider {
    fn api_url(&self) -> &str {
        &self.api_url
    }

    /// `GET /sandbox?limit=1`: refused (naming `DAYTONA_API_KEY`) when Daytona refuses the key.
    async fn check_access(&self) -> Result<(), ProviderError> {
        self.client.check("/sandbox?limit=1").await
    }
}

#[async_trait]
impl SandboxProvider for DaytonaProvider {
    fn name(&self) -> &str {
        &self.name
    }

    /// `DELETE /sandbox/{id}`: deleted, or already gone (`404`).
    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError> {
        validate_id(provider_sandbox_id)?;
        self.client.delete_tolerating_gone(&format!("/sandbox/{provider_sandbox_id}")).await
    }

    fn can_list(&self) -> bool {
        true
    }

    /// Every page under our owner label, by `nextCursor`.
    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        let read = |answer: &Answer| {
            let page: Page = answer.json()?;
            let listed =
                page.items.into_iter().map(ListedDaytonaSandbox::into_listed).collect::<Result<Vec<_>, _>>()?;
            let listed = super::http::unlabelled_as_empty(listed, self.sweep_unlabelled);
            Ok((listed, page.next_cursor))
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

    #[test]
    fn the_listing_filters_by_the_owner_label_as_json() {
        let config = DaytonaConfig {
            owner: "team a&b".into(),
            api_key: Some("k".into()),
            api_url: Some("http://127.0.0.1:9/api".into()),
            page_size: 3,
            ..DaytonaConfig::default()
        };
        let provider = DaytonaProvider::new(config).unwrap();
        assert_eq!(
            provider.list_path(Some("c+/=")),
            "/sandbox?labels=%7B%22io.sandbox-reclaim.owner%22%3A%22team%20a%26b%22%7D&limit=3&cursor=c%2B%2F%3D"
        );
        assert!(!format!("{provider:?}").contains("\"k\""));
    }

    #[test]
    fn destroying_sandboxes_are_listed_as_deleting_and_unknown_states_fail_closed() {
        let item = |state: &str, desired: &str| ListedDaytonaSandbox {
            id: "s1".into(),
            state: Some(state.into()),
            desired_state: Some(desired.into()),
            created_at: Some("1970-01-01T00:00:02Z".into()),
            labels: BTreeMap::from([(LABEL_OWNER.to_owned(), "o".to_owned())]),
        };
        let stopped = item("stopped", "stopped").into_listed().unwrap();
        assert_eq!((stopped.deleting, stopped.created_at, stopped.owner.as_deref()), (false, Some(2000), Some("o")));
        assert!(item("destroying", "destroyed").into_listed().unwrap().deleting);
        assert!(item("error", "destroyed").into_listed().unwrap().deleting);
        assert!(item("melting", "started").into_listed().is_err());
    }
}
