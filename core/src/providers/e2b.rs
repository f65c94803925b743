//! [`E2bProvider`]: E2B sandboxes through E2B's REST API, with an honest
//! destroy and a listing the orphan sweep can trust.
//!
//! The wire calls are the official SDK's (`e2b` on npm and PyPI):
//! - destroy is `DELETE /sandboxes/{id}` (the SDK's `kill`): permanent. `404`
//!   means already gone, success; any other failure fails the destroy, so it
//!   reaches the leak ledger (TanStack's provider swallows it).
//! - the listing is `GET /v2/sandboxes?metadata=…&state=running,paused&limit=…`,
//!   page after page by the `X-Next-Token` header, filtered server-side by our
//!   owner metadata. Paused sandboxes still bill (their snapshot), so they are
//!   listed and swept. E2B reports no creation time: `startedAt` is used, never
//!   earlier than creation, so the orphan grace only grows.
//!
//! Auth is the `X-API-KEY` header from `E2B_API_KEY` (or [`E2bConfig::api_key`]);
//! the base URL is [`E2bConfig::api_url`], else `E2B_API_URL`, else
//! `https://api.$E2B_DOMAIN` (default domain `e2b.app`), as in the SDK.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;

use super::http::{encode_component, parse_rfc3339_millis, Answer, HostedClient, Vendor};
use super::{validate_id, validate_owner, HostedSandboxProvider, InvalidInput, LABEL_KEY, LABEL_OWNER};
use crate::contract::errors::ProviderError;
use crate::contract::SandboxProvider;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::{HostedSettings, HostedVendor, ListingCeilings};

const VENDOR: Vendor = Vendor { label: "E2B", credential_variable: "E2B_API_KEY", credential_option: "apiKey" };

/// The largest page E2B serves.
pub const E2B_MAX_PAGE_SIZE: u32 = HostedVendor::E2b.max_page_size();

/// How an [`E2bProvider`] reaches E2B.
#[derive(Clone, PartialEq, Eq)]
pub struct E2bConfig {
    /// The name instance records carry in `provider`. Default `e2b`.
    pub name: String,
    /// The owner namespace: the metadata the listing is filtered by.
    pub owner: String,
    /// The API key; `None`: `E2B_API_KEY`.
    pub api_key: Option<String>,
    /// The API base URL; `None`: `E2B_API_URL`, else `https://api.$E2B_DOMAIN`.
    pub api_url: Option<String>,
    /// Sandboxes per listing page, 1 to [`E2B_MAX_PAGE_SIZE`]. Default 100.
    pub page_size: u32,
    /// List every sandbox, not only those under our owner label, so the
    /// sweep also finds unlabelled ones the store's registry names (what
    /// TanStack's providers create). An unlabelled sandbox is listed with
    /// owner `""`; one neither labelled nor registered is never touched.
    /// Default false.
    pub sweep_unlabelled: bool,
    /// How long one HTTP request may take. Default 30 s. A destroy's own
    /// deadline cuts it sooner.
    pub request_timeout: Duration,
    /// How far one listing goes before it fails closed (pages followed,
    /// sandboxes read). Default [`ListingCeilings::default`]; hosts set it
    /// with `maxListingPages` / `maxListingItems`.
    pub listing_ceilings: ListingCeilings,
}

impl Default for E2bConfig {
    fn default() -> Self {
        Self::from(HostedSettings::defaults(HostedVendor::E2b))
    }
}

/// The settings a host's options gave ([`HostedSettings::from_host`]), or the defaults.
impl From<HostedSettings> for E2bConfig {
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
impl fmt::Debug for E2bConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("E2bConfig")
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

/// E2B sandboxes: destroy by kill, list by owner metadata.
pub struct E2bProvider {
    name: String,
    owner: String,
    page_size: u32,
    sweep_unlabelled: bool,
    listing_ceilings: ListingCeilings,
    api_url: String,
    client: HostedClient,
}

impl fmt::Debug for E2bProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("E2bProvider").field("name", &self.name).field("api_url", &self.api_url).finish()
    }
}

/// The base URL the SDK would use: `E2B_API_URL`, else `https://api.$E2B_DOMAIN`.
pub fn e2b_default_api_url() -> String {
    let variable = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    variable("E2B_API_URL")
        .unwrap_or_else(|| format!("https://api.{}", variable("E2B_DOMAIN").unwrap_or_else(|| "e2b.app".to_owned())))
}

impl E2bProvider {
    /// Checks the config and resolves the key and URL from the environment.
    /// Sends nothing; see [`HostedSandboxProvider::check_access`].
    pub fn new(config: E2bConfig) -> Result<Self, ProviderError> {
        super::validate_provider_name(&config.name)?;
        validate_owner(&config.owner)?;
        if !(1..=E2B_MAX_PAGE_SIZE).contains(&config.page_size) {
            let reason = format!("must be between 1 and {E2B_MAX_PAGE_SIZE}, got {}", config.page_size);
            return Err(InvalidInput::new("pageSize", reason).into());
        }
        let api_key = config.api_key.clone().or_else(|| std::env::var("E2B_API_KEY").ok()).unwrap_or_default();
        let api_url = config.api_url.clone().unwrap_or_else(e2b_default_api_url);
        let client = HostedClient::new(VENDOR, &api_url, "x-api-key", "", &api_key, config.request_timeout)?;
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

    fn list_path(&self, next_token: Option<&str>) -> String {
        // The SDK's encoding, byte for byte: each side of `k=v` is
        // percent-encoded twice (encodeURIComponent, then URLSearchParams),
        // and the pair once more as the query value. E2B decodes all three.
        let twice = |text: &str| encode_component(&encode_component(text));
        let mut path = "/v2/sandboxes?".to_owned();
        if !self.sweep_unlabelled {
            let filter = format!("{}={}", twice(LABEL_OWNER), twice(&self.owner));
            path.push_str(&format!("metadata={}&", encode_component(&filter)));
        }
        path.push_str(&format!("state=running,paused&limit={}", self.page_size));
        if let Some(token) = next_token {
            path.push_str("&nextToken=");
            path.push_str(&encode_component(token));
        }
        path
    }
}

/// A sandbox as `GET /v2/sandboxes` lists it (the fields the sweep reads).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListedE2bSandbox {
    #[serde(rename = "sandboxID")]
    sandbox_id: String,
    started_at: String,
    state: String,
    #[serde(default)]
    metadata: Option<BTreeMap<String, String>>,
}

impl ListedE2bSandbox {
    fn into_listed(self) -> Result<ListedSandbox, String> {
        if !matches!(self.state.as_str(), "running" | "paused") {
            return Err(format!("sandbox {:?} is in unknown state {:?}", self.sandbox_id, self.state));
        }
        let created_at = parse_rfc3339_millis(&self.started_at);
        let metadata = self.metadata.unwrap_or_default();
        Ok(ListedSandbox {
            id: self.sandbox_id,
            created_at,
            owner: metadata.get(LABEL_OWNER).cloned(),
            key: metadata.get(LABEL_KEY).cloned(),
            deleting: false,
        })
    }
}

#[async_trait]
impl HostedSandboxProvider for E2bProvider {
    fn api_url(&self) -> &str {
        &self.api_url
    }

    /// `GET /v2/sandboxes?limit=1`: refused (naming `E2B_API_KEY`) when E2B
    /// refuses the key, so a command can stop before its first pass.
    async fn check_access(&self) -> Result<(), ProviderError> {
        self.client.check("/v2/sandboxes?limit=1").await
    }
}

#[async_trait]
impl SandboxProvider for E2bProvider {
    fn name(&self) -> &str {
        &self.name
    }

    /// `DELETE /sandboxes/{id}`: killed, or already gone (`404`).
    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError> {
        validate_id(provider_sandbox_id)?;
        self.client.delete_tolerating_gone(&format!("/sandboxes/{provider_sandbox_id}")).await
    }

    fn can_list(&self) -> bool {
        true
    }

    /// Every page under our owner metadata, by the `X-Next-Token` header.
    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        let read = |answer: &Answer| {
            let page: Vec<ListedE2bSandbox> = answer.json()?;
            let listed = page.into_iter().map(ListedE2bSandbox::into_listed).collect::<Result<Vec<_>, _>>()?;
            let listed = super::http::unlabelled_as_empty(listed, self.sweep_unlabelled);
            Ok((listed, answer.header("x-next-token").map(str::to_owned)))
        };
        self.client.list_pages(self.listing_ceilings, |token| self.list_path(token), read).await
    }

    fn owner(&self) -> Option<&str> {
        Some(&self.owner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(owner: &str) -> E2bProvider {
        let config = E2bConfig {
            owner: owner.to_owned(),
            api_key: Some("e2b_secret".to_owned()),
            api_url: Some("http://127.0.0.1:9".to_owned()),
            page_size: 7,
            ..E2bConfig::default()
        };
        E2bProvider::new(config).unwrap()
    }

    #[test]
    fn the_listing_filters_by_owner_metadata_as_the_sdk_encodes_it_captured_from_e2b_2_51() {
        let path = provider("team a&b").list_path(Some("tok/1"));
        assert_eq!(
            path,
            "/v2/sandboxes?metadata=io.sandbox-reclaim.owner%3Dteam%252520a%252526b&state=running,paused&limit=7\
             &nextToken=tok%2F1"
        );
    }

    #[test]
    fn the_config_never_prints_its_key() {
        let config = E2bConfig { api_key: Some("e2b_secret".to_owned()), ..E2bConfig::default() };
        assert!(!format!("{config:?}").contains("e2b_secret"));
        assert!(!format!("{:?}", provider("o")).contains("e2b_secret"));
    }

    #[test]
    fn bad_config_names_its_field_before_any_request() {
        let bad_url = E2bConfig { api_key: Some("k".into()), api_url: Some("ftp://x".into()), ..E2bConfig::default() };
        let page = E2bConfig { api_key: Some("k".into()), page_size: 0, ..E2bConfig::default() };
        let no_key = E2bConfig { api_key: Some(String::new()), ..E2bConfig::default() };
        for (config, field) in [(bad_url, "apiUrl"), (page, "pageSize"), (no_key, "apiKey")] {
            let error = E2bProvider::new(config).unwrap_err();
            let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
            assert_eq!(inner.downcast_ref::<InvalidInput>().map(|invalid| invalid.field), Some(field), "{error}");
        }
        let message = E2bProvider::new(E2bConfig { api_key: Some(String::new()), ..E2bConfig::default() })
            .unwrap_err()
            .to_string();
        assert!(message.contains("E2B_API_KEY"), "{message}");
    }

    #[test]
    fn listed_sandboxes_read_started_at_owner_and_key() {
        let page = r#"[{"sandboxID":"i1","startedAt":"1970-01-01T00:00:01Z","state":"paused",
            "metadata":{"io.sandbox-reclaim.owner":"o","io.sandbox-reclaim.key":"k"},"extra":1}]"#;
        let parsed: Vec<ListedE2bSandbox> = serde_json::from_str(page).unwrap();
        let listed = parsed.into_iter().next().unwrap().into_listed().unwrap();
        assert_eq!(
            listed,
            ListedSandbox {
                id: "i1".into(),
                created_at: Some(1000),
                owner: Some("o".into()),
                key: Some("k".into()),
                deleting: false
            }
        );
        let odd = r#"[{"sandboxID":"i2","startedAt":"yesterday","state":"killing"}]"#;
        let parsed: Vec<ListedE2bSandbox> = serde_json::from_str(odd).unwrap();
        assert!(parsed.into_iter().next().unwrap().into_listed().is_err());
    }
}
