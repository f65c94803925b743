//! What a hosted vendor is as data ([`VendorSpec`], a vendor's row), and the
//! options a hosted provider takes from a host, checked once, here: each
//! one's name in each host's spelling, its default and its range (the error
//! texts come from [`crate::report::messages`] through [`HostOptions`]).
//!
//! Each vendor's row lives in its own module in the runtime crate
//! (`core/src/providers/hosted/<vendor>`), beside its wire format, with the
//! options only it takes; the runtime crate's one list of vendors
//! (`hosted/vendors.rs`) is what hosts, the command and the generator read.
//! A binding reads the properties a row names ([`VendorSpec::names`]) from
//! the user's options, once each, and hands them over as plain values, as it
//! does a flow's options. The core answers [`HostedSettings`], every default
//! applied, which the vendor's config is built from; the command and the
//! Rust API start from [`HostedSettings::defaults`].

use std::collections::BTreeMap;
use std::time::Duration;

use crate::options::{
    defaults, duration, name, HostOptionError, HostOptions, Name, NoneMeansDefault, OptionId, OWNER as OWNER_NAME,
};

pub const NAME: Name = name(OptionId::ProviderName, "name", "name");
pub const OWNER: Name = OWNER_NAME;
pub const API_KEY: Name = name(OptionId::ApiKey, "apiKey", "api_key");
pub const API_URL: Name = name(OptionId::ApiUrl, "apiUrl", "api_url");
pub const PAGE_SIZE: Name = name(OptionId::PageSize, "pageSize", "page_size");
pub const REQUEST_TIMEOUT: Name = duration(OptionId::RequestTimeout, "requestTimeoutMs", "request_timeout");
pub const SWEEP_UNLABELLED: Name = name(OptionId::SweepUnlabelled, "sweepUnlabelled", "sweep_unlabelled");
pub const MAX_LISTING_PAGES_NAME: Name = name(OptionId::MaxListingPages, "maxListingPages", "max_listing_pages");
pub const MAX_LISTING_ITEMS_NAME: Name = name(OptionId::MaxListingItems, "maxListingItems", "max_listing_items");

/// How long one HTTP request may take unless told.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 30_000;
/// The longest request timeout taken: a day.
pub const MAX_REQUEST_TIMEOUT_MS: u64 = 86_400_000;

/// The most pages one listing follows. Past it the listing fails closed (the
/// sweep is `unavailable`, naming the ceiling), whatever cursors the vendor
/// offers: a listing ends even when the vendor's pages never do. 10,000 pages
/// of the smallest largest page (Vercel's 50) is 500,000 sandboxes.
pub const MAX_LISTING_PAGES: u32 = 10_000;
/// The most sandboxes one listing reads (duplicates included). Past it the
/// listing fails closed, naming the ceiling, so its memory stays bounded.
pub const MAX_LISTING_ITEMS: u64 = 1_000_000;

/// The most a host may raise the page ceiling to.
pub const HIGHEST_LISTING_PAGES: u32 = 1_000_000;
/// The most a host may raise the sandbox ceiling to.
pub const HIGHEST_LISTING_ITEMS: u32 = 100_000_000;

/// How far one hosted listing may go before it fails closed: the options
/// `maxListingPages` / `max_listing_pages` and `maxListingItems` /
/// `max_listing_items` (defaults [`MAX_LISTING_PAGES`] and
/// [`MAX_LISTING_ITEMS`]), a vendor config's `listing_ceilings` in Rust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListingCeilings {
    /// Pages per listing, at least 1.
    pub pages: u32,
    /// Sandboxes read per listing, duplicates included.
    pub items: u64,
}

impl Default for ListingCeilings {
    fn default() -> Self {
        Self { pages: MAX_LISTING_PAGES, items: MAX_LISTING_ITEMS }
    }
}

/// Where a vendor's listing is filtered to our owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerFilter {
    /// The listing request names the owner label; the vendor filters.
    Server,
    /// The vendor lists every sandbox of the account; the engine keeps those
    /// whose listed labels name our owner.
    Client,
}

/// What a vendor's sandboxes carry, set at create, for the sweep to know one
/// as ours and for which key: the shape `ownerLabels(owner, key, vendor)`
/// gives, and the create argument it goes in (`field`, for the docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marks {
    /// Name/value labels, the owner and the key (E2B's `metadata`).
    Labels { field: &'static str },
    /// Plain strings, `name=value`, the owner and the key (Sprites' `labels`).
    Pairs { field: &'static str },
    /// One plain string, `prefix` then the owner, of at most `max_chars`
    /// (letters, digits, `.`, `_`, `-`, `:`): the vendor's labels are too
    /// short for the key (Upstash Box's).
    OwnerTag { field: &'static str, prefix: &'static str, max_chars: usize },
    /// Object metadata: the owner a label (so a label value), the key an
    /// annotation (a key is rarely a label value).
    Metadata,
    /// Nothing: the vendor's sandboxes carry no labels, so the sweep knows
    /// them only through the store's registry (Railway's).
    Unlabelled,
}

impl Marks {
    /// Whether `owner` can be written in this shape (the one rule for the
    /// marks and for the owner a vendor's provider is built with).
    pub fn owner_fits(self, owner: &str) -> bool {
        let bytes = owner.as_bytes();
        match self {
            Marks::OwnerTag { prefix, max_chars, .. } => {
                let fits = |byte: &u8| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-' | b':');
                !bytes.is_empty() && prefix.len() + bytes.len() <= max_chars && bytes.iter().all(fits)
            }
            // A Kubernetes label value: at most 63, alphanumeric at both ends,
            // `-`, `_`, `.` inside.
            Marks::Metadata => {
                let inner = |byte: &u8| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.');
                let ends = bytes.first().is_some_and(u8::is_ascii_alphanumeric)
                    && bytes.last().is_some_and(u8::is_ascii_alphanumeric);
                bytes.len() <= 63 && ends && bytes.iter().all(inner)
            }
            Marks::Labels { .. } | Marks::Pairs { .. } | Marks::Unlabelled => true,
        }
    }
}

/// One hosted vendor as hosts, the command and the docs see it.
#[derive(Debug, PartialEq, Eq)]
pub struct VendorSpec {
    /// The vendor's key: the command's flag (`--sprites`) and config section
    /// (`[sprites]`), and the provider name records carry unless told.
    pub key: &'static str,
    /// Its name in messages (`Sprites`).
    pub label: &'static str,
    /// The provider class in Node and Python (`SpritesProvider`).
    pub class: &'static str,
    /// The variables read, in order, when no option gives the credential;
    /// with `credential_options`, the variables of its parts (all needed).
    pub credential_variables: &'static [&'static str],
    /// A credential of several parts (Modal's token id and secret): each an
    /// option read from its variable when not given, taken in place of the
    /// one `apiKey`. Empty for a vendor with one key.
    pub credential_options: &'static [ScopeOption],
    /// The variable that overrides the API base URL, if the vendor has one.
    pub api_url_variable: Option<&'static str>,
    /// How the API base URL resolves when no option gives it.
    pub api_url_doc: &'static str,
    /// The options beyond the shared ones that scope its requests (Vercel's
    /// team and project, Blaxel's workspace), each with the variable it
    /// defaults to and whether it is required.
    pub scope_options: &'static [ScopeOption],
    /// Sandboxes per listing page unless told; 0 (with `max_page_size` 0):
    /// the vendor sizes its pages itself (Modal's listing takes no size), so
    /// the provider takes no `pageSize`.
    pub default_page_size: u32,
    pub max_page_size: u32,
    pub owner_filter: OwnerFilter,
    /// What its sandboxes carry for the sweep, set at create.
    pub marks: Marks,
    /// How destroy ends a sandbox, for the docs (`DELETE /v1/sprites/{name}`).
    pub destroy_doc: &'static str,
    /// What the vendor calls gone or going: never destroyed again.
    pub gone_doc: &'static str,
}

/// A vendor's own option (a scope or a credential part): the option (its
/// id `OptionId::Vendor`, named in the vendor's module), the variable it
/// defaults to (`None`: the vendor's client has none, Modal's app id), and
/// whether the provider needs it.
#[derive(Debug, PartialEq, Eq)]
pub struct ScopeOption {
    pub name: Name,
    pub variable: Option<&'static str>,
    pub required: bool,
}

/// A vendor's own option (scope, or a part of its credential): declared in
/// the vendor's module, every one with this id; told apart by its name.
pub const fn vendor_option(node: &'static str, python: &'static str) -> Name {
    name(OptionId::Vendor, node, python)
}

impl VendorSpec {
    /// The options the vendor's provider takes, in the order they are checked.
    pub fn names(&self) -> Vec<Name> {
        let credential: Vec<Name> = match self.credential_options {
            [] => vec![API_KEY],
            parts => parts.iter().map(|option| option.name).collect(),
        };
        let scope = self.scope_options.iter().map(|option| option.name);
        let page_size = self.takes_page_size().then_some(PAGE_SIZE);
        [NAME, OWNER]
            .into_iter()
            .chain(credential)
            .chain(scope)
            .chain([API_URL])
            .chain(page_size)
            .chain([REQUEST_TIMEOUT, SWEEP_UNLABELLED, MAX_LISTING_PAGES_NAME, MAX_LISTING_ITEMS_NAME])
            .collect()
    }

    /// The vendor's own options (credential parts, then scope), in its row's order.
    pub fn own_options(&self) -> impl Iterator<Item = &ScopeOption> {
        self.credential_options.iter().chain(self.scope_options)
    }

    /// Whether the vendor's listing takes a page size (Modal's does not).
    pub const fn takes_page_size(&self) -> bool {
        self.max_page_size > 0
    }

    /// The vendor's credential variables as a text for messages and docs
    /// (`E2B_API_KEY`; `SPRITES_API_KEY, else SPRITE_TOKEN`; `MODAL_TOKEN_ID
    /// + MODAL_TOKEN_SECRET`).
    pub fn credential_doc(&self) -> String {
        let joiner = if self.credential_options.is_empty() { ", else " } else { " + " };
        self.credential_variables.join(joiner)
    }

    /// Whether the vendor's provider takes option `name` at all.
    pub fn takes(&self, name: Name) -> bool {
        self.names().iter().any(|taken| taken.id == name.id && taken.node == name.node)
    }
}

/// A hosted provider's settings, every default applied. Credentials and
/// URLs left `None` are read from the vendor's environment variables when
/// the provider is built.
#[derive(Clone, PartialEq, Eq)]
pub struct HostedSettings {
    /// The vendor's row.
    pub vendor: &'static VendorSpec,
    pub name: String,
    pub owner: String,
    pub api_key: Option<String>,
    pub api_url: Option<String>,
    /// The vendor's own options given (its row's `credential_options` and
    /// `scope_options`), by Node name; absent: the option's variable.
    pub options: BTreeMap<&'static str, String>,
    /// 0 for a vendor that sizes its pages itself (Modal).
    pub page_size: u32,
    pub request_timeout: Duration,
    pub sweep_unlabelled: bool,
    pub listing_ceilings: ListingCeilings,
}

impl HostedSettings {
    /// What `vendor`'s provider uses when told nothing.
    pub fn defaults(vendor: impl Into<&'static VendorSpec>) -> Self {
        let vendor = vendor.into();
        Self {
            vendor,
            name: vendor.key.to_owned(),
            owner: defaults::OWNER.to_owned(),
            api_key: None,
            api_url: None,
            options: BTreeMap::new(),
            page_size: vendor.default_page_size,
            request_timeout: Duration::from_millis(DEFAULT_REQUEST_TIMEOUT_MS),
            sweep_unlabelled: false,
            listing_ceilings: ListingCeilings::default(),
        }
    }

    /// The vendor's own option `name`, when given.
    pub fn option(&self, name: Name) -> Option<&str> {
        self.options.get(name.node).map(String::as_str)
    }

    /// Sets (`Some`) or clears (`None`) the vendor's own option `name`.
    pub fn set_option(&mut self, name: Name, value: Option<String>) {
        match value {
            Some(value) => self.options.insert(name.node, value),
            None => self.options.remove(name.node),
        };
    }

    /// The settings a host's options give (absent ones defaulted), or the
    /// first option refused. Python's `None` is the default for the
    /// credentials and URLs (they default to `None` there), a wrong type
    /// for the others.
    pub fn from_host(vendor: impl Into<&'static VendorSpec>, options: &HostOptions) -> Result<Self, HostOptionError> {
        let vendor = vendor.into();
        let mut settings = Self::defaults(vendor);
        let (yes, no) = (NoneMeansDefault::Yes, NoneMeansDefault::No);
        if let Some(name) = options.text(NAME, no)? {
            settings.name = name;
        }
        if let Some(owner) = options.text(OWNER, no)? {
            settings.owner = owner;
        }
        if vendor.credential_options.is_empty() {
            settings.api_key = options.text(API_KEY, yes)?;
        }
        for option in vendor.own_options() {
            settings.set_option(option.name, options.text(option.name, yes)?);
        }
        settings.api_url = options.text(API_URL, yes)?;
        if vendor.takes_page_size() {
            if let Some(page_size) = options.count_up_to(PAGE_SIZE, 1, vendor.max_page_size, no)? {
                settings.page_size = page_size;
            }
        }
        if let Some(millis) = options.millis_up_to(REQUEST_TIMEOUT, 1, MAX_REQUEST_TIMEOUT_MS, no)? {
            settings.request_timeout = Duration::from_millis(millis);
        }
        if let Some(sweep) = options.flag(SWEEP_UNLABELLED, no)? {
            settings.sweep_unlabelled = sweep;
        }
        if let Some(pages) = options.count_up_to(MAX_LISTING_PAGES_NAME, 1, HIGHEST_LISTING_PAGES, no)? {
            settings.listing_ceilings.pages = pages;
        }
        if let Some(items) = options.count_up_to(MAX_LISTING_ITEMS_NAME, 1, HIGHEST_LISTING_ITEMS, no)? {
            settings.listing_ceilings.items = u64::from(items);
        }
        Ok(settings)
    }
}

// By hand, so a credential never reaches a log line through `{:?}`: the API
// key and every credential part are redacted.
impl std::fmt::Debug for HostedSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secret = |key: &str| self.vendor.credential_options.iter().any(|part| part.name.node == key);
        let options: BTreeMap<&str, &str> = self
            .options
            .iter()
            .map(|(key, value)| (*key, if secret(key) { "<redacted>" } else { value.as_str() }))
            .collect();
        f.debug_struct("HostedSettings")
            .field("vendor", &self.vendor.key)
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_url", &self.api_url)
            .field("options", &options)
            .field("page_size", &self.page_size)
            .field("request_timeout", &self.request_timeout)
            .field("sweep_unlabelled", &self.sweep_unlabelled)
            .field("listing_ceilings", &self.listing_ceilings)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{Dialect, Problem};

    /// A vendor of one key and pages up to 100.
    const PLAIN: VendorSpec = VendorSpec {
        key: "plain",
        label: "Plain",
        class: "PlainProvider",
        credential_variables: &["PLAIN_API_KEY"],
        credential_options: &[],
        api_url_variable: None,
        api_url_doc: "https://plain.example",
        scope_options: &[ScopeOption { name: PROJECT, variable: Some("PLAIN_PROJECT"), required: true }],
        default_page_size: 50,
        max_page_size: 100,
        owner_filter: OwnerFilter::Server,
        marks: Marks::Labels { field: "labels" },
        destroy_doc: "DELETE /x/{id}",
        gone_doc: "404",
    };
    const PROJECT: Name = vendor_option("projectId", "project_id");
    /// A vendor of a two-part credential and no page size.
    const PARTS: VendorSpec = VendorSpec {
        key: "parts",
        label: "Parts",
        class: "PartsProvider",
        credential_variables: &["PARTS_ID", "PARTS_SECRET"],
        credential_options: &[
            ScopeOption { name: PART_ID, variable: Some("PARTS_ID"), required: true },
            ScopeOption { name: PART_SECRET, variable: Some("PARTS_SECRET"), required: true },
        ],
        api_url_variable: None,
        api_url_doc: "https://parts.example",
        scope_options: &[],
        default_page_size: 0,
        max_page_size: 0,
        owner_filter: OwnerFilter::Client,
        marks: Marks::Labels { field: "labels" },
        destroy_doc: "Terminate",
        gone_doc: "NOT_FOUND",
    };
    const PART_ID: Name = vendor_option("tokenId", "token_id");
    const PART_SECRET: Name = vendor_option("tokenSecret", "token_secret");

    fn node(vendor: &'static VendorSpec, json: &str) -> Result<HostedSettings, HostOptionError> {
        HostedSettings::from_host(vendor, &HostOptions::parse(json, Dialect::Node).unwrap())
    }

    fn python(vendor: &'static VendorSpec, json: &str) -> Result<HostedSettings, HostOptionError> {
        HostedSettings::from_host(vendor, &HostOptions::parse(json, Dialect::Python).unwrap())
    }

    #[test]
    fn nothing_given_is_the_vendors_defaults() {
        for vendor in [&PLAIN, &PARTS] {
            assert_eq!(node(vendor, "{}").unwrap(), HostedSettings::defaults(vendor));
            assert_eq!(python(vendor, r#"{"api_key": null}"#).unwrap(), HostedSettings::defaults(vendor));
        }
        let plain = HostedSettings::defaults(&PLAIN);
        assert_eq!((plain.name.as_str(), plain.page_size), ("plain", 50));
        assert_eq!(plain.request_timeout, Duration::from_secs(30));
    }

    #[test]
    fn listing_ceilings_are_options_with_the_defaults_of_the_constants() {
        let given = node(&PLAIN, r#"{"maxListingPages": 3, "maxListingItems": 250}"#).unwrap();
        assert_eq!(given.listing_ceilings, ListingCeilings { pages: 3, items: 250 });
        let given = python(&PLAIN, r#"{"max_listing_pages": 7}"#).unwrap();
        assert_eq!(given.listing_ceilings, ListingCeilings { pages: 7, items: MAX_LISTING_ITEMS });
        let zero = node(&PLAIN, r#"{"maxListingPages": 0}"#).unwrap_err();
        assert_eq!(zero.message, "options.maxListingPages must be a whole number between 1 and 1000000");
        let huge = python(&PLAIN, r#"{"max_listing_items": 100000001}"#).unwrap_err();
        assert_eq!(huge.problem, Problem::Range);
    }

    #[test]
    fn page_sizes_are_ranged_per_vendor() {
        assert_eq!(node(&PLAIN, r#"{"pageSize": 100}"#).unwrap().page_size, 100);
        let too_big = node(&PLAIN, r#"{"pageSize": 101}"#).unwrap_err();
        assert_eq!(too_big.message, "options.pageSize must be a whole number between 1 and 100");
        let zero = python(&PLAIN, r#"{"page_size": 0}"#).unwrap_err();
        assert_eq!(
            (zero.problem, zero.message.as_str()),
            (Problem::Range, "`page_size` must be a whole number between 1 and 100, got 0")
        );
        let flag = python(&PLAIN, r#"{"page_size": true}"#).unwrap_err();
        assert_eq!((flag.problem, flag.message.as_str()), (Problem::Type, "`page_size` must be an int, got bool"));
        assert_eq!(python(&PARTS, r#"{"page_size": 5}"#).unwrap().page_size, 0, "a vendor that sizes its pages");
    }

    #[test]
    fn request_timeouts_are_milliseconds_in_node_and_seconds_in_python_up_to_a_day() {
        let node_given = node(&PLAIN, r#"{"requestTimeoutMs": 1500}"#).unwrap();
        assert_eq!(node_given.request_timeout, Duration::from_millis(1500));
        let python_given = python(&PLAIN, r#"{"request_timeout": 1.5}"#).unwrap();
        assert_eq!(python_given.request_timeout, Duration::from_millis(1500));
        let zero = python(&PLAIN, r#"{"request_timeout": 0}"#).unwrap_err();
        assert_eq!(
            (zero.problem, zero.message.as_str()),
            (Problem::Range, "`request_timeout` must be at least 0.001 seconds, got 0")
        );
        let long = node(&PLAIN, r#"{"requestTimeoutMs": 86400001}"#).unwrap_err();
        assert_eq!(long.message, "options.requestTimeoutMs must be a whole number between 1 and 86400000");
        let long = python(&PLAIN, r#"{"request_timeout": 86401}"#).unwrap_err();
        assert_eq!(long.problem, Problem::Range);
    }

    #[test]
    fn strings_and_flags_are_typed() {
        let owner = node(&PLAIN, r#"{"owner": 7}"#).unwrap_err();
        assert_eq!(owner.message, "options.owner must be a string");
        let name = python(&PLAIN, r#"{"name": null}"#).unwrap_err();
        assert_eq!(name.message, "`name` must be a str, got NoneType");
        let sweep = node(&PLAIN, r#"{"sweepUnlabelled": "yes"}"#).unwrap_err();
        assert_eq!(sweep.message, "options.sweepUnlabelled must be a boolean");
        let key = node(&PLAIN, r#"{"apiKey": {"$loneSurrogate": true}}"#).unwrap_err();
        assert_eq!(key.field, "apiKey");
        let typed = node(&PLAIN, r#"{"projectId": 5}"#).unwrap_err();
        assert_eq!(typed.field, "projectId");
    }

    #[test]
    fn a_vendors_own_options_are_read_by_its_row_and_no_other() {
        let given = node(&PLAIN, r#"{"projectId": "p1", "tokenId": "ignored", "sweepUnlabelled": true}"#).unwrap();
        assert_eq!((given.option(PROJECT), given.option(PART_ID)), (Some("p1"), None));
        assert!(given.sweep_unlabelled);
        let names: Vec<&str> = PLAIN.names().iter().map(|name| name.python).collect();
        assert_eq!(&names[..5], ["name", "owner", "api_key", "project_id", "api_url"]);
        let parts: Vec<&str> = PARTS.names().iter().map(|name| name.node).collect();
        assert_eq!(&parts[..4], ["name", "owner", "tokenId", "tokenSecret"]);
        assert!(!parts.contains(&"apiKey") && !parts.contains(&"pageSize"), "{parts:?}");
        assert!(PARTS.takes(PART_SECRET) && !PARTS.takes(PROJECT) && !PARTS.takes(API_KEY));
        assert_eq!(PARTS.credential_doc(), "PARTS_ID + PARTS_SECRET");
        let mut cleared = given.clone();
        cleared.set_option(PROJECT, None);
        assert_eq!(cleared.option(PROJECT), None);
    }

    #[test]
    fn a_listing_is_ceilinged_at_ten_thousand_pages_and_a_million_sandboxes() {
        assert_eq!(ListingCeilings::default(), ListingCeilings { pages: 10_000, items: 1_000_000 });
    }

    #[test]
    fn a_credential_never_shows_in_debug() {
        let settings = node(&PLAIN, r#"{"apiKey": "plain_secret", "projectId": "visible"}"#).unwrap();
        let printed = format!("{settings:?}");
        assert!(!printed.contains("plain_secret") && printed.contains("visible"), "{printed}");
        let parts = node(&PARTS, r#"{"tokenId": "ak-secret-id", "tokenSecret": "as-secret"}"#).unwrap();
        let printed = format!("{parts:?}");
        assert!(!printed.contains("ak-secret-id") && !printed.contains("as-secret"), "{printed}");
    }
}
