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

use serde::Deserialize;

use super::client::{encode_component, parse_rfc3339_millis, Answer};
use super::{
    listed, unscoped, variable, with_cursor, Entry, Get, HostedConfig, HostedProvider, Listing, Page as HostedPage,
    Vendor, Verb,
};
use crate::contract::errors::ProviderError;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::{HostedSettings, Marks, OwnerFilter, VendorSpec};
use crate::providers::HostedSandboxProvider;
use crate::providers::{LABEL_KEY, LABEL_OWNER};

/// The largest page E2B serves.
pub const E2B_MAX_PAGE_SIZE: u32 = SPEC.max_page_size;

/// E2B as hosts, the command and the docs see it: its row of the one
/// vendor list (`hosted/vendors.rs`), from which the options, the Node and
/// Python classes, the command's flag and section and README's row come.
pub const SPEC: VendorSpec = VendorSpec {
    key: "e2b",
    label: "E2B",
    class: "E2bProvider",
    credential_variables: &["E2B_API_KEY"],
    credential_options: &[],
    api_url_variable: Some("E2B_API_URL"),
    api_url_doc: "E2B_API_URL, else https://api.$E2B_DOMAIN, else https://api.e2b.app",
    scope_options: &[],
    default_page_size: 100,
    max_page_size: 100,
    owner_filter: OwnerFilter::Server,
    marks: Marks::Labels { field: "metadata" },
    destroy_doc: "DELETE /sandboxes/{id}",
    gone_doc: "404; a listed sandbox is running or paused (both bill)",
};

/// A provider from a host's or the command's settings (sends nothing).
pub(crate) fn build(settings: HostedSettings) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    super::build_entry::<E2b>(settings)
}

/// E2B (the marker of [`E2bConfig`] and [`E2bProvider`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct E2b;

impl Vendor for E2b {
    const ENTRY: &'static Entry = &Entry {
        spec: &SPEC,
        credential_hint: "E2B_API_KEY",
        auth: ("x-api-key", ""),
        headers: &[],
        default_api_url: e2b_default_api_url,
        scope: unscoped,
        check_path: |_| "/v2/sandboxes?limit=1".to_owned(),
        list_path,
        read_page,
        destroy: (Verb::Delete, |_, id| format!("/sandboxes/{id}")),
        get: Some(Get { path: |_, id| format!("/sandboxes/{id}"), read: read_one }),
    };
}

/// How an [`E2bProvider`] reaches E2B.
pub type E2bConfig = HostedConfig<E2b>;

/// E2B sandboxes: destroy by kill, list by owner metadata.
pub type E2bProvider = HostedProvider<E2b>;

/// The base URL the SDK would use: `E2B_API_URL`, else `https://api.$E2B_DOMAIN`.
pub fn e2b_default_api_url() -> String {
    variable("E2B_API_URL")
        .unwrap_or_else(|| format!("https://api.{}", variable("E2B_DOMAIN").unwrap_or_else(|| "e2b.app".to_owned())))
}

fn list_path(listing: &Listing<'_>, next_token: Option<&str>) -> String {
    // The SDK's encoding, byte for byte: each side of `k=v` is
    // percent-encoded twice (encodeURIComponent, then URLSearchParams),
    // and the pair once more as the query value. E2B decodes all three.
    let twice = |text: &str| encode_component(&encode_component(text));
    let mut path = "/v2/sandboxes?".to_owned();
    if let Some(owner) = listing.owner {
        let filter = format!("{}={}", twice(LABEL_OWNER), twice(owner));
        path.push_str(&format!("metadata={}&", encode_component(&filter)));
    }
    path.push_str(&format!("state=running,paused&limit={}", listing.page_size));
    with_cursor(path, "nextToken", next_token)
}

/// A page of `GET /v2/sandboxes` (a bare array), the next by the `X-Next-Token` header.
/// `GET /sandboxes/{id}`: the sandbox's detail, read as a listed one.
fn read_one(answer: &Answer) -> Result<Option<ListedSandbox>, String> {
    answer.json::<ListedE2bSandbox>()?.into_listed().map(Some)
}

fn read_page(answer: &Answer) -> Result<HostedPage, String> {
    let page: Vec<ListedE2bSandbox> = answer.json()?;
    let listed = listed(page, ListedE2bSandbox::into_listed)?;
    Ok((listed, answer.header("x-next-token").map(str::to_owned)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::errors::ProviderError;
    use crate::providers::InvalidInput;

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
