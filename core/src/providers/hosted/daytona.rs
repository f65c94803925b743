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

/// The largest page Daytona serves.
pub const DAYTONA_MAX_PAGE_SIZE: u32 = SPEC.max_page_size;

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

/// Daytona as hosts, the command and the docs see it: its row of the one
/// vendor list (`hosted/vendors.rs`), from which the options, the Node and
/// Python classes, the command's flag and section and README's row come.
pub const SPEC: VendorSpec = VendorSpec {
    key: "daytona",
    label: "Daytona",
    class: "DaytonaProvider",
    credential_variables: &["DAYTONA_API_KEY"],
    credential_options: &[],
    api_url_variable: Some("DAYTONA_API_URL"),
    api_url_doc: "DAYTONA_API_URL, else https://app.daytona.io/api",
    scope_options: &[],
    default_page_size: 100,
    max_page_size: 200,
    owner_filter: OwnerFilter::Server,
    marks: Marks::Labels { field: "labels" },
    destroy_doc: "DELETE /sandbox/{id}",
    gone_doc: "404; `destroying` or desiredState `destroyed` is deleting",
};

/// A provider from a host's or the command's settings (sends nothing).
pub(crate) fn build(settings: HostedSettings) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    super::build_entry::<Daytona>(settings)
}

/// Daytona (the marker of [`DaytonaConfig`] and [`DaytonaProvider`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Daytona;

impl Vendor for Daytona {
    const ENTRY: &'static Entry = &Entry {
        spec: &SPEC,
        credential_hint: "DAYTONA_API_KEY",
        auth: ("authorization", "Bearer "),
        headers: &[],
        default_api_url: daytona_default_api_url,
        scope: unscoped,
        check_path: |_| "/sandbox?limit=1".to_owned(),
        list_path,
        read_page,
        destroy: (Verb::Delete, |_, id| format!("/sandbox/{id}")),
        get: Some(Get { path: |_, id| format!("/sandbox/{id}"), read: read_one }),
    };
}

/// How a [`DaytonaProvider`] reaches Daytona.
pub type DaytonaConfig = HostedConfig<Daytona>;

/// Daytona sandboxes: destroy by delete, list by owner label.
pub type DaytonaProvider = HostedProvider<Daytona>;

/// The base URL the SDK would use: `DAYTONA_API_URL`, else the public API.
pub fn daytona_default_api_url() -> String {
    variable("DAYTONA_API_URL").unwrap_or_else(|| DAYTONA_PUBLIC_API_URL.to_owned())
}

fn list_path(listing: &Listing<'_>, cursor: Option<&str>) -> String {
    // The SDK sends the filter as JSON; Daytona matches it by containment.
    let mut path = "/sandbox?".to_owned();
    if let Some(owner) = listing.owner {
        let labels = serde_json::json!({ LABEL_OWNER: owner }).to_string();
        path.push_str(&format!("labels={}&", encode_component(&labels)));
    }
    path.push_str(&format!("limit={}", listing.page_size));
    with_cursor(path, "cursor", cursor)
}

/// `GET /sandbox/{id}`: the sandbox, read as a listed one.
fn read_one(answer: &Answer) -> Result<Option<ListedSandbox>, String> {
    answer.json::<ListedDaytonaSandbox>()?.into_listed().map(Some)
}

/// A page of `GET /sandbox`, the next by `nextCursor`.
fn read_page(answer: &Answer) -> Result<HostedPage, String> {
    let page: Page = answer.json()?;
    let listed = listed(page.items, ListedDaytonaSandbox::into_listed)?;
    Ok((listed, page.next_cursor))
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
