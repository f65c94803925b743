//! [`SpritesProvider`]: Fly.io Sprites through the Sprites REST API.
//!
//! The wire calls are the official SDKs' (npm `@fly/sprites` 0.1, PyPI
//! `sprites-py` 0.7; `docs/research/sprites.md`); a sprite is identified by
//! its name, which is what TanStack's Sprites provider records as
//! `providerSandboxId` (the 16-hex sandbox key):
//! - destroy is `DELETE /v1/sprites/{name}`: permanent. `404` ("sprite not
//!   found") means already gone, success (both SDKs raise on it; TanStack's
//!   provider treats it as gone, as we do).
//! - the listing is `GET /v1/sprites?max_results=…`, page after page by
//!   `continuation_token` while `has_more` (a `has_more` without a token
//!   fails the listing closed). Sprites has no label filter: the engine keeps
//!   the sprites whose labels name our owner. Labels are a list of strings,
//!   so ours are `io.sandbox-reclaim.owner=<owner>` and
//!   `io.sandbox-reclaim.key=<key>`. There is no "being deleted" status: every
//!   listed sprite (`cold`, `warm`, `running`) bills its storage.
//!
//! Auth is `Authorization: Bearer` from `SPRITES_API_KEY` (what TanStack's
//! provider reads), else `SPRITE_TOKEN` (the vendor's docs); the SDKs read
//! no variable. The base URL is the option, else `SPRITES_API_URL`, else
//! `https://api.sprites.dev`.

use serde::Deserialize;

use super::client::{encode_component, parse_rfc3339_millis, Answer};
use super::{
    listed, unscoped, variable, with_cursor, Entry, Get, HostedConfig, HostedProvider, Listing, Page, Vendor, Verb,
};
use crate::contract::errors::ProviderError;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::{HostedSettings, Marks, OwnerFilter, VendorSpec};
use crate::providers::HostedSandboxProvider;
use crate::providers::{LABEL_KEY, LABEL_OWNER};

/// Sprites' public API.
pub const SPRITES_PUBLIC_API_URL: &str = "https://api.sprites.dev";

/// Sprites as hosts, the command and the docs see it: its row of the one
/// vendor list (`hosted/vendors.rs`), from which the options, the Node and
/// Python classes, the command's flag and section and README's row come.
pub const SPEC: VendorSpec = VendorSpec {
    key: "sprites",
    label: "Sprites",
    class: "SpritesProvider",
    credential_variables: &["SPRITES_API_KEY", "SPRITE_TOKEN"],
    credential_options: &[],
    api_url_variable: Some("SPRITES_API_URL"),
    api_url_doc: "SPRITES_API_URL, else https://api.sprites.dev",
    scope_options: &[],
    default_page_size: 50,
    max_page_size: 50,
    owner_filter: OwnerFilter::Client,
    marks: Marks::Pairs { field: "labels" },
    destroy_doc: "DELETE /v1/sprites/{name}",
    gone_doc: "404 (no deleting status: a deleted sprite may stay listed a while)",
};

/// A provider from a host's or the command's settings (sends nothing).
pub(crate) fn build(settings: HostedSettings) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    super::build_entry::<Sprites>(settings)
}

/// Fly Sprites (the marker of [`SpritesConfig`] and [`SpritesProvider`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sprites;

impl Vendor for Sprites {
    const ENTRY: &'static Entry = &Entry {
        spec: &SPEC,
        credential_hint: "SPRITES_API_KEY (or SPRITE_TOKEN)",
        auth: ("authorization", "Bearer "),
        headers: &[],
        default_api_url: || variable("SPRITES_API_URL").unwrap_or_else(|| SPRITES_PUBLIC_API_URL.to_owned()),
        scope: unscoped,
        check_path: |_| "/v1/sprites?max_results=1".to_owned(),
        list_path: |listing: &Listing<'_>, cursor| {
            with_cursor(format!("/v1/sprites?max_results={}", listing.page_size), "continuation_token", cursor)
        },
        read_page,
        destroy: (Verb::Delete, |_, name| format!("/v1/sprites/{}", encode_component(name))),
        get: Some(Get { path: |_, name| format!("/v1/sprites/{}", encode_component(name)), read: read_one }),
    };
}

/// How a [`SpritesProvider`] reaches Sprites (`api_key` is the token).
pub type SpritesConfig = HostedConfig<Sprites>;

/// Fly Sprites: destroy by delete, list every sprite and keep ours by label.
pub type SpritesProvider = HostedProvider<Sprites>;

/// The labels a sprite carries so the sweep knows it: `key=value` strings,
/// as Sprites labels are plain strings.
pub fn sprite_labels(owner: &str, key: &str) -> Vec<String> {
    vec![format!("{LABEL_OWNER}={owner}"), format!("{LABEL_KEY}={key}")]
}

/// `GET /v1/sprites/{name}`: the bare sprite, read as a listed one.
fn read_one(answer: &Answer) -> Result<Option<ListedSandbox>, String> {
    answer.json::<ListedSprite>()?.into_listed().map(Some)
}

/// A page of `GET /v1/sprites`, the next by `next_continuation_token`.
fn read_page(answer: &Answer) -> Result<Page, String> {
    let page: SpritesPage = answer.json()?;
    let next = match (page.has_more, page.next_continuation_token) {
        (false, _) => None,
        (true, Some(token)) if !token.is_empty() => Some(token),
        (true, _) => return Err("`has_more` without a `next_continuation_token`".to_owned()),
    };
    Ok((listed(page.sprites, ListedSprite::into_listed)?, next))
}

#[derive(Deserialize)]
struct SpritesPage {
    sprites: Vec<ListedSprite>,
    #[serde(default)]
    has_more: bool,
    next_continuation_token: Option<String>,
}

/// A sprite as the listing shows it (the fields the sweep reads).
#[derive(Deserialize)]
struct ListedSprite {
    name: String,
    created_at: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
}

impl ListedSprite {
    fn into_listed(self) -> Result<ListedSandbox, String> {
        let label = |name: &str| {
            let prefix = format!("{name}=");
            self.labels.iter().find_map(|label| label.strip_prefix(&prefix).map(str::to_owned))
        };
        Ok(ListedSandbox {
            // Unreadable: `None`, and the sweep leaves the sprite alone.
            created_at: self.created_at.as_deref().and_then(parse_rfc3339_millis),
            owner: label(LABEL_OWNER),
            key: label(LABEL_KEY),
            id: self.name,
            deleting: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_key_value_strings_and_read_back() {
        let labels = sprite_labels("team-a", "0123456789abcdef");
        let sprite = ListedSprite { name: "s1".into(), created_at: Some("2026-01-01T00:00:00.5Z".into()), labels };
        let listed = sprite.into_listed().unwrap();
        assert_eq!(listed.owner.as_deref(), Some("team-a"));
        assert_eq!(listed.key.as_deref(), Some("0123456789abcdef"));
        assert_eq!(listed.created_at, Some(1_767_225_600_500));
    }

    #[test]
    fn more_pages_need_a_token() {
        let page = |body: &str| read_page(&Answer::for_test(200, body));
        let (listed, next) =
            page(r#"{"sprites":[{"name":"a"}],"has_more":true,"next_continuation_token":"t"}"#).unwrap();
        assert_eq!((listed.len(), next.as_deref()), (1, Some("t")));
        assert!(page(r#"{"sprites":[],"has_more":true,"next_continuation_token":null}"#).is_err());
        assert_eq!(page(r#"{"sprites":[],"has_more":false}"#).unwrap().1, None);
        assert!(page(r#"{"sprites":"nope","has_more":false}"#).is_err());
    }
}
