//! [`UpstashBoxProvider`]: Upstash Box boxes through the Box REST API, with an
//! honest destroy and a listing the orphan sweep can trust.
//!
//! The wire calls are the official SDKs' (npm `@upstash/box` 0.5.5,
//! `dist/client.js`; PyPI `upstash-box` 0.4.0, `upstash_box/_sync/client.py`),
//! as `docs/research/upstash-box.md` cites them line by line:
//! - destroy is `DELETE /v2/box/{id}` (the SDKs' `box.delete()`, "Delete this
//!   box permanently"): a delete, not a stop. `404` ("Box not found", or "Box
//!   has been deleted", TanStack's measurement) means already gone, success;
//!   any other failure fails the destroy, so it reaches the leak ledger. The
//!   SDKs' bulk `DELETE /v2/box` `{"ids"}` is never sent: an empty scope there
//!   may read as "every box" (the Python SDK's warning).
//! - the listing is `GET /v2/box?label=<label>` (`Box.list({label})`, the label
//!   percent-encoded as the SDK's `encodeURIComponent`), filtered server-side
//!   by our owner label, or `GET /v2/box` with `sweep_unlabelled`. It answers
//!   a bare JSON array and has **no paging** (no cursor, offset or limit in
//!   either SDK), so the provider takes no page size. A box is `BoxData`:
//!   `id`, `status` (`creating`, `idle`, `running`, `paused`, `error`, and
//!   `deleted`, which is gone and left out; there is no "deleting" status),
//!   `created_at` (an integer; the SDK tests use epoch seconds, the vendor's
//!   CLI takes a value `>= 1e12` as milliseconds, and so do we), `labels`
//!   (plain strings). Anything else fails the listing closed: a body that is
//!   not an array, a box without an `id`, a status the SDKs do not declare, a
//!   `created_at` that is not a non-negative integer.
//! - the get is `GET /v2/box/{id}` (`Box.get`): a deleted box still answers
//!   `200` with `status: "deleted"` (TanStack's measurement), read as gone, as
//!   `404` is.
//!
//! Box labels are plain strings of at most 20 letters, digits, `.`, `_`, `-`
//! and `:` (the SDK's documented rule, `types.d.ts` `BoxConfig.labels`), so
//! `io.sandbox-reclaim.owner=<owner>` cannot be one: our owner label is
//! [`UPSTASH_BOX_OWNER_LABEL_PREFIX`] and the owner, `sr:<owner>`
//! ([`upstash_box_owner_label`]), and an owner is at most 17 such characters.
//! There is no key label (a box's key is never listed).
//!
//! Auth is the `X-Box-Api-Key` header (no `Authorization`) from
//! `UPSTASH_BOX_API_KEY` (or [`UpstashBoxConfig::api_key`]); the base URL is
//! [`UpstashBoxConfig::api_url`], else `UPSTASH_BOX_BASE_URL`, else
//! `https://us-east-1.box.upstash.com`, as in both SDKs.

use serde::Deserialize;

use super::client::{encode_component, Answer};
use super::{
    listed, unscoped, variable, Entry, Extras, Get, HostedConfig, HostedProvider, Listing, Page, Vendor, Verb,
};
use crate::contract::errors::ProviderError;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::{HostedSettings, Marks, OwnerFilter, VendorSpec};
use crate::providers::HostedSandboxProvider;
use crate::providers::InvalidInput;

/// Upstash Box's public API (both SDKs' default).
pub const UPSTASH_BOX_PUBLIC_API_URL: &str = "https://us-east-1.box.upstash.com";

/// What our owner label on a box starts with: the label is `sr:<owner>`
/// (Box labels are plain strings of at most [`UPSTASH_BOX_MAX_LABEL_CHARS`]
/// characters, too short for `io.sandbox-reclaim.owner=<owner>`).
pub const UPSTASH_BOX_OWNER_LABEL_PREFIX: &str = "sr:";

/// The longest label Upstash Box takes (the SDK's documented rule).
pub const UPSTASH_BOX_MAX_LABEL_CHARS: usize = 20;

/// The longest owner that fits our label: 20 less the prefix.
pub const UPSTASH_BOX_MAX_OWNER_CHARS: usize = UPSTASH_BOX_MAX_LABEL_CHARS - UPSTASH_BOX_OWNER_LABEL_PREFIX.len();

/// Every status both SDKs declare (`BoxStatus`) for a box that exists: each
/// is swept (a paused box keeps its disk, an error box is deletable).
const LIVE_STATUSES: &[&str] = &["creating", "idle", "running", "paused", "error"];

/// The one other status both SDKs declare: the box is gone (left out).
const GONE_STATUS: &str = "deleted";

/// A `created_at` at or past this is in milliseconds, below it in seconds
/// (the vendor CLI's reading: `ts < 1e12 ? ts * 1000 : ts`).
const MILLIS_FROM: u64 = 1_000_000_000_000;

/// Upstash Box as hosts, the command and the docs see it: its row of the one
/// vendor list (`hosted/vendors.rs`), from which the options, the Node and
/// Python classes, the command's flag and section and README's row come.
pub const SPEC: VendorSpec = VendorSpec {
    key: "upstash-box",
    label: "Upstash Box",
    class: "UpstashBoxProvider",
    credential_variables: &["UPSTASH_BOX_API_KEY"],
    credential_options: &[],
    api_url_variable: Some("UPSTASH_BOX_BASE_URL"),
    api_url_doc: "UPSTASH_BOX_BASE_URL, else https://us-east-1.box.upstash.com",
    scope_options: &[],
    default_page_size: 0,
    max_page_size: 0,
    owner_filter: OwnerFilter::Server,
    marks: Marks::OwnerTag {
        field: "labels",
        prefix: UPSTASH_BOX_OWNER_LABEL_PREFIX,
        max_chars: UPSTASH_BOX_MAX_LABEL_CHARS,
    },
    destroy_doc: "DELETE /v2/box/{id}",
    gone_doc: "404 and `deleted` (a deleted box still reads by GET)",
};

/// A provider from a host's or the command's settings (sends nothing).
pub(crate) fn build(settings: HostedSettings) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    super::build_entry::<UpstashBox>(settings)
}

/// Upstash Box (the marker of [`UpstashBoxConfig`] and [`UpstashBoxProvider`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstashBox;

impl Vendor for UpstashBox {
    const ENTRY: &'static Entry = &Entry {
        spec: &SPEC,
        credential_hint: "UPSTASH_BOX_API_KEY",
        auth: ("x-box-api-key", ""),
        headers: &[],
        default_api_url: upstash_box_default_api_url,
        scope: unscoped,
        // The listing is the only account-wide read and has no limit: filtered
        // by the bare prefix, a label no box of ours carries, it answers small.
        check_path: |_| format!("/v2/box?label={}", encode_component(UPSTASH_BOX_OWNER_LABEL_PREFIX)),
        list_path,
        read_page,
        // `validate_id` keeps ids to `[A-Za-z0-9_.-]`: sent as the SDKs send them, unencoded.
        destroy: (Verb::Delete, |_, id| format!("/v2/box/{id}")),
        get: Some(Get { path: |_, id| format!("/v2/box/{id}"), read: read_one }),
    };
    const EXTRAS: &'static Extras = &Extras { check_owner: Some(check_owner), ..Extras::NONE };
}

/// How an [`UpstashBoxProvider`] reaches Upstash Box (it takes no page size:
/// the listing has no paging).
pub type UpstashBoxConfig = HostedConfig<UpstashBox>;

/// Upstash Box: destroy by delete, list by our owner label.
pub type UpstashBoxProvider = HostedProvider<UpstashBox>;

/// The base URL the SDKs would use: `UPSTASH_BOX_BASE_URL`, else the public API.
pub fn upstash_box_default_api_url() -> String {
    variable("UPSTASH_BOX_BASE_URL").unwrap_or_else(|| UPSTASH_BOX_PUBLIC_API_URL.to_owned())
}

/// The label a box carries so the sweep knows it is `owner`'s: `sr:<owner>`.
/// An owner that cannot be part of a Box label (more than
/// [`UPSTASH_BOX_MAX_OWNER_CHARS`] characters, or any character but letters,
/// digits, `.`, `_`, `-` and `:`) is refused, naming `owner`.
pub fn upstash_box_owner_label(owner: &str) -> Result<String, InvalidInput> {
    check_owner(owner)?;
    Ok(format!("{UPSTASH_BOX_OWNER_LABEL_PREFIX}{owner}"))
}

/// Refuses an owner whose label `sr:<owner>` Upstash Box would not take: more
/// than [`UPSTASH_BOX_MAX_OWNER_CHARS`] characters, or any character but
/// letters, digits, `.`, `_`, `-` and `:`. (For the engine's owner check when
/// the provider is built.)
pub(crate) fn check_owner(owner: &str) -> Result<(), InvalidInput> {
    super::marks::check_owner(&SPEC, owner)
}

/// `GET /v2/box`, under our owner label (percent-encoded, as the SDKs send
/// it) unless every box is listed. One answer holds every box: no cursor.
fn list_path(listing: &Listing<'_>, _cursor: Option<&str>) -> String {
    match listing.owner {
        Some(owner) => {
            format!("/v2/box?label={}", encode_component(&format!("{UPSTASH_BOX_OWNER_LABEL_PREFIX}{owner}")))
        }
        None => "/v2/box".to_owned(),
    }
}

/// `GET /v2/box`: a bare array, the whole listing (no next page).
fn read_page(answer: &Answer) -> Result<Page, String> {
    let boxes: Vec<ListedBox> =
        answer.json().map_err(|why| format!("the listing is not a JSON array of boxes: {why}"))?;
    let live = boxes.into_iter().filter(|listed_box| !listed_box.is_gone()).collect();
    Ok((listed(live, ListedBox::into_listed)?, None))
}

/// `GET /v2/box/{id}`: the box, read as a listed one; `deleted` is gone.
fn read_one(answer: &Answer) -> Result<Option<ListedSandbox>, String> {
    let listed_box: ListedBox = answer.json()?;
    if listed_box.is_gone() {
        return Ok(None);
    }
    listed_box.into_listed().map(Some)
}

/// A box as `GET /v2/box` lists it (`BoxData`, the fields the sweep reads;
/// the rest is ignored, as the SDKs ignore it).
#[derive(Deserialize)]
struct ListedBox {
    id: String,
    status: String,
    /// Epoch seconds, or milliseconds when `>= 1e12`.
    #[serde(default)]
    created_at: Option<u64>,
    #[serde(default)]
    labels: Option<Vec<String>>,
}

impl ListedBox {
    /// Deleted, and named (a deleted box without an id still fails closed).
    fn is_gone(&self) -> bool {
        self.status == GONE_STATUS && !self.id.is_empty()
    }

    /// A box that exists, as listed; anything undocumented is refused.
    fn into_listed(self) -> Result<ListedSandbox, String> {
        if self.id.is_empty() {
            return Err("a box has an empty id".to_owned());
        }
        if !LIVE_STATUSES.contains(&self.status.as_str()) {
            return Err(format!("box {:?} is in unknown status {:?}", self.id, self.status));
        }
        let created_at = self.created_at.map(|at| if at >= MILLIS_FROM { at } else { at.saturating_mul(1_000) });
        // Our label, `sr:<owner>` (the first; a bare `sr:` names no owner).
        let owner = self.labels.unwrap_or_default().into_iter().find_map(|label| {
            label.strip_prefix(UPSTASH_BOX_OWNER_LABEL_PREFIX).filter(|owner| !owner.is_empty()).map(str::to_owned)
        });
        Ok(ListedSandbox { id: self.id, created_at, owner, key: None, deleting: false })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::errors::ProviderError;

    fn config(owner: &str) -> UpstashBoxConfig {
        UpstashBoxConfig {
            owner: owner.to_owned(),
            api_key: Some("box_secret".to_owned()),
            api_url: Some("http://127.0.0.1:9".to_owned()),
            ..UpstashBoxConfig::default()
        }
    }

    fn provider(owner: &str) -> UpstashBoxProvider {
        UpstashBoxProvider::new(config(owner)).unwrap()
    }

    fn page(body: &str) -> Result<Vec<ListedSandbox>, String> {
        let (listed, next) = read_page(&Answer::for_test(200, body))?;
        assert_eq!(next, None, "the listing has no next page");
        Ok(listed)
    }

    #[test]
    fn the_listing_filters_by_our_label_percent_encoded_as_the_sdk_encodes_it_or_takes_every_box() {
        assert_eq!(provider("team.a-1").list_path(None), "/v2/box?label=sr%3Ateam.a-1");
        assert_eq!(provider("a:b_c").list_path(None), "/v2/box?label=sr%3Aa%3Ab_c");
        let every = UpstashBoxConfig { sweep_unlabelled: true, ..config("o") };
        assert_eq!(UpstashBoxProvider::new(every).unwrap().list_path(None), "/v2/box");
    }

    #[test]
    fn the_default_config_is_the_public_api_without_a_page_size() {
        let config = UpstashBoxConfig::default();
        assert_eq!(config.page_size, 0);
        assert_eq!(config.name, "upstash-box");
        assert_eq!(config.owner, "sandbox-reclaim");
        assert!(check_owner(&config.owner).is_ok(), "the default owner fits a label");
        assert!(!SPEC.takes_page_size());
        if std::env::var_os("UPSTASH_BOX_BASE_URL").is_none() {
            assert_eq!(upstash_box_default_api_url(), UPSTASH_BOX_PUBLIC_API_URL);
        }
    }

    #[test]
    fn owners_that_fit_a_box_label_pass_and_others_are_refused_naming_owner() {
        for owner in ["sandbox-reclaim", "a", "A.b_c-d:e", &"x".repeat(UPSTASH_BOX_MAX_OWNER_CHARS)] {
            assert_eq!(check_owner(owner), Ok(()), "{owner}");
            let label = upstash_box_owner_label(owner).unwrap();
            assert!(label.len() <= UPSTASH_BOX_MAX_LABEL_CHARS && label.starts_with("sr:"), "{label}");
        }
        for owner in ["", &"x".repeat(UPSTASH_BOX_MAX_OWNER_CHARS + 1), "team a", "team/a", "équipe", "a=b", "a\0"] {
            let refused = check_owner(owner).unwrap_err();
            assert_eq!(refused.field, "owner", "{owner:?}");
            assert!(refused.reason.contains("Upstash Box") && refused.reason.contains("17"), "{}", refused.reason);
            assert!(upstash_box_owner_label(owner).is_err(), "{owner:?}");
        }
    }

    #[test]
    fn the_config_never_prints_its_key() {
        assert!(!format!("{:?}", config("o")).contains("box_secret"));
        assert!(!format!("{:?}", provider("o")).contains("box_secret"));
    }

    #[test]
    fn bad_config_names_its_field_before_any_request() {
        let bad_url = UpstashBoxConfig { api_url: Some("ftp://x".into()), ..config("o") };
        let no_key = UpstashBoxConfig { api_key: Some(String::new()), ..config("o") };
        let no_name = UpstashBoxConfig { name: String::new(), ..config("o") };
        for (config, field) in [(bad_url, "apiUrl"), (no_key, "apiKey"), (no_name, "name")] {
            let error = UpstashBoxProvider::new(config).unwrap_err();
            let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
            assert_eq!(inner.downcast_ref::<InvalidInput>().map(|invalid| invalid.field), Some(field), "{error}");
        }
        let message =
            UpstashBoxProvider::new(UpstashBoxConfig { api_key: Some(String::new()), ..config("o") }).unwrap_err();
        assert!(message.to_string().contains("UPSTASH_BOX_API_KEY"), "{message}");
    }

    #[test]
    fn listed_boxes_read_created_at_in_seconds_or_millis_and_owner_from_our_first_label() {
        let listed = page(
            r#"[{"id":"box_1","name":"0123456789abcdef","status":"idle","created_at":1672531200,
                 "updated_at":1672531200,"labels":["team","sr:o","sr:p"],"size":"small","extra":{"x":1}},
                {"id":"box_2","status":"paused","created_at":1672531200123,"labels":[]},
                {"id":"box_3","status":"error","labels":["sr:"]},
                {"id":"box_4","status":"creating","created_at":0,"labels":null},
                {"id":"box_5","status":"running","created_at":5}]"#,
        )
        .unwrap();
        let read: Vec<(&str, Option<u64>, Option<&str>)> =
            listed.iter().map(|sandbox| (sandbox.id.as_str(), sandbox.created_at, sandbox.owner.as_deref())).collect();
        assert_eq!(
            read,
            [
                ("box_1", Some(1_672_531_200_000), Some("o")),
                ("box_2", Some(1_672_531_200_123), None),
                ("box_3", None, None),
                ("box_4", Some(0), None),
                ("box_5", Some(5_000), None),
            ]
        );
        assert!(listed.iter().all(|sandbox| sandbox.key.is_none() && !sandbox.deleting));
    }

    #[test]
    fn deleted_boxes_are_gone_from_a_page_and_from_a_get() {
        let listed =
            page(r#"[{"id":"box_1","status":"deleted","created_at":1},{"id":"box_2","status":"idle","created_at":1}]"#)
                .unwrap();
        assert_eq!(listed.iter().map(|sandbox| sandbox.id.as_str()).collect::<Vec<_>>(), ["box_2"]);
        assert_eq!(page("[]").unwrap(), []);
        let gone = Answer::for_test(200, r#"{"id":"box_1","status":"deleted","created_at":1,"labels":["sr:o"]}"#);
        assert_eq!(read_one(&gone), Ok(None));
        let live = Answer::for_test(200, r#"{"id":"box_1","status":"paused","created_at":1,"labels":["sr:o"]}"#);
        let found = read_one(&live).unwrap().unwrap();
        assert_eq!((found.id.as_str(), found.owner.as_deref(), found.created_at), ("box_1", Some("o"), Some(1_000)));
    }

    #[test]
    fn anything_undocumented_fails_the_page_closed() {
        for body in [
            r#"{"boxes":"x"}"#,
            r#"{"boxes":[]}"#,
            "null",
            "not json",
            r#"[{"status":"idle","created_at":1}]"#,
            r#"[{"id":"","status":"idle","created_at":1}]"#,
            r#"[{"id":"","status":"deleted","created_at":1}]"#,
            r#"[{"id":7,"status":"idle","created_at":1}]"#,
            r#"[{"id":"box_1","status":"stopping","created_at":1}]"#,
            r#"[{"id":"box_1","created_at":1}]"#,
            r#"[{"id":"box_1","status":"idle","created_at":"1672531200"}]"#,
            r#"[{"id":"box_1","status":"idle","created_at":1.5}]"#,
            r#"[{"id":"box_1","status":"idle","created_at":-1}]"#,
            r#"[{"id":"box_1","status":"idle","created_at":1,"labels":[1]}]"#,
            r#"[{"id":"box_1","status":"idle","created_at":1,"labels":"sr:o"}]"#,
        ] {
            assert!(page(body).is_err(), "{body}");
        }
        for body in [r#"{"id":"box_1","status":"stopping"}"#, r#"{"status":"idle"}"#, "[]"] {
            assert!(read_one(&Answer::for_test(200, body)).is_err(), "{body}");
        }
    }
}
