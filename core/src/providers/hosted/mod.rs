//! Hosted vendors as data: one engine ([`HostedProvider`]) runs any vendor
//! [`Entry`], the way `opendal`'s services sit on its shared raw layer.
//!
//! An entry is a vendor's wire format and nothing else: its credential and
//! base-URL resolution, its auth header, its listing request and how a page
//! reads, its destroy request. Everything a vendor does not decide is the
//! engine's, once: option checks (name, owner, page size), the client
//! ([`client`]: rustls, the credential header marked sensitive, `429
//! Retry-After`, redacted errors), paging that always ends (a repeated item
//! once, a cursor cycle or a ceiling fails the listing closed), the owner
//! filter's client-side fallback and the "already gone" answers.
//!
//! A vendor is a marker type implementing [`Vendor`] (its entry), so the Rust
//! API keeps one config and provider type per vendor (`E2bConfig`,
//! `E2bProvider`, ...) with the vendor's own defaults.
//!
//! A vendor off the REST pattern adds [`Extras`] to its entry
//! ([`Vendor::EXTRAS`]; none by default): a JSON body for each request (then
//! sent by `POST` to the entry's path), its own verdict on answers (a GraphQL
//! error under HTTP 200; "already gone") and an auth header that depends on
//! which variable gave the credential. Railway's GraphQL API is the one so far.

pub mod blaxel;
pub mod boxd;
pub(crate) mod client;
pub mod daytona;
pub mod e2b;
#[cfg(any(feature = "modal", feature = "boxd"))]
pub(crate) mod grpc;
pub mod kubernetes;
pub mod marks;
pub mod modal;
pub(crate) mod paging;
pub mod railway;
pub mod runloop;
pub mod sprites;
pub mod upstash_box;
mod vendors;
pub mod vercel;

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Method;

use self::client::{Answer, HostedClient, Request, Verdict};
use super::{validate_id, validate_owner, validate_provider_name, HostedSandboxProvider, InvalidInput};
use crate::contract::errors::ProviderError;
use crate::contract::SandboxProvider;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::{HostedSettings, ListingCeilings, OwnerFilter, VendorSpec};
use crate::options::Name;
use crate::report::messages;
use std::collections::BTreeMap;

pub use client::Verb;
pub use paging::HostedError;
pub use vendors::{build_hosted, HostedVendor, VENDORS};

/// One hosted vendor's wire format: what the engine cannot know. (Built in
/// this crate only: its fields read the client's answers.) What hosts see of
/// the vendor (its key, label, variables, page sizes, owner filter) is its
/// row ([`VendorSpec`]), beside the entry in the vendor's module.
pub struct Entry {
    /// Its row: options, defaults, variables, largest page.
    pub(crate) spec: &'static VendorSpec,
    /// What a message tells the user to set (`VERCEL_TOKEN (with VERCEL_TEAM_ID)`).
    pub(crate) credential_hint: &'static str,
    /// The credential's header (lowercase), and the text before the credential in it.
    pub(crate) auth: AuthHeader,
    /// Headers every request carries (lowercase names), e.g. an API version.
    pub(crate) headers: &'static [(&'static str, &'static str)],
    /// The base URL when no option gives one: the SDK's own variables, else its public API.
    pub(crate) default_api_url: fn() -> String,
    /// What the vendor scopes every request by, from the configured scope
    /// options, checked before any request (most vendors have none).
    pub(crate) scope: fn(&ScopeOptions<'_>) -> Result<Scope, InvalidInput>,
    /// One small authenticated call: `check_access`.
    pub(crate) check_path: fn(&Scope) -> String,
    /// A listing page's request (`cursor` `None`: the first page).
    pub(crate) list_path: fn(&Listing<'_>, Option<&str>) -> String,
    /// A page's sandboxes and the next cursor (`None`: the last page). An
    /// `Err` says why the page does not read as documented: the listing
    /// fails closed. A sandbox the vendor calls gone is left out; one it is
    /// deleting is listed `deleting`.
    pub(crate) read_page: fn(&Answer) -> Result<Page, String>,
    /// The request that destroys sandbox `id` (`404`: already gone).
    pub(crate) destroy: (Verb, fn(&Scope, &str) -> String),
    /// How one sandbox is read by id (the vendor's get), for the sweep's
    /// lookup of registered sandboxes; `None`: the vendor has no get.
    pub(crate) get: Option<Get>,
}

/// A credential's header (lowercase), and the text before the credential
/// in it (`("authorization", "Bearer ")`).
pub type AuthHeader = (&'static str, &'static str);

/// A vendor's get: its request, and how its answer reads as a listed
/// sandbox (`None`: a state the vendor calls gone; `404` is gone too).
pub(crate) struct Get {
    pub path: fn(&Scope, &str) -> String,
    pub read: fn(&Answer) -> Result<Option<ListedSandbox>, String>,
}

/// What a vendor off the REST pattern adds to its [`Entry`] (each part
/// `None`: the REST way). Built in this crate only, like an entry.
pub struct Extras {
    /// A JSON body for each request: with one, the check, a listing page
    /// and a get go by `POST` (a destroy by the entry's verb) to the
    /// entry's path. GraphQL: every call a `POST` to the one endpoint.
    pub(crate) bodies: Option<Bodies>,
    /// How an answer reads, when its status does not say (GraphQL answers
    /// its errors, refusals and "not found" under HTTP 200, `errors` before
    /// `data`). `None`: by status (2xx done, `404` gone). `401`/`403` are
    /// refusals and `429`s are waited out before any verdict.
    pub(crate) verdict: Option<fn(&Answer) -> Verdict>,
    /// The credential's header and prefix by the variable that gave the
    /// credential (`None`: the `apiKey` option), for a vendor whose kinds of
    /// token go in different headers (Railway: `RAILWAY_TOKEN` in
    /// `project-access-token`, the others as `Authorization: Bearer`).
    /// `None`: always the entry's `auth`. Variables are read in the row's order.
    pub(crate) auth_for: Option<fn(Option<&str>) -> AuthHeader>,
    /// What the vendor's labels can carry of an owner, checked when the
    /// provider is built (Upstash Box: `sr:<owner>` within 20 characters).
    /// `None`: any owner the engine takes.
    pub(crate) check_owner: Option<OwnerCheck>,
}

impl Extras {
    /// Nothing beyond the entry (every REST vendor).
    pub const NONE: Extras = Extras { bodies: None, verdict: None, auth_for: None, check_owner: None };
}

/// A vendor's own check of an owner (what its labels can carry).
pub(crate) type OwnerCheck = fn(&str) -> Result<(), InvalidInput>;

/// The JSON bodies of an entry's requests, each with the name messages
/// call the request by (the GraphQL root field: `sandboxes`), as the
/// entry's paths are built: from the scope, the listing and cursor, the id.
pub(crate) struct Bodies {
    pub check: fn(&Scope) -> Body,
    pub list: fn(&Listing<'_>, Option<&str>) -> Body,
    pub get: fn(&Scope, &str) -> Body,
    pub destroy: fn(&Scope, &str) -> Body,
}

/// A request's JSON body, and what messages call the request.
pub(crate) struct Body {
    pub json: serde_json::Value,
    pub name: &'static str,
}

/// Gets in flight at once in one lookup.
const LOOKUP_CONCURRENCY: usize = 8;

/// The scope options a provider was configured with (`None`: the vendor's variable).
#[derive(Debug, Clone, Copy)]
pub struct ScopeOptions<'a> {
    /// The vendor's own options given, by Node name (`HostedConfig::options`).
    pub options: &'a BTreeMap<&'static str, String>,
}

impl ScopeOptions<'_> {
    /// The vendor's own option `name`, when given (`None`: its variable).
    pub fn get(&self, name: Name) -> Option<&str> {
        self.options.get(name.node).map(String::as_str)
    }
}

/// One listing page read: its sandboxes and the next cursor (`None`: the last page).
pub type Page = (Vec<ListedSandbox>, Option<String>);

/// What a vendor scopes its requests by, beyond the credential (query text
/// the entry builds, `teamId=…&`; headers; empty for most vendors).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub query: String,
    /// The project a listing and a destroy name (Vercel); the environment
    /// every request names (Railway).
    pub project: String,
    /// Headers every request carries (Blaxel's workspace), lowercase names.
    pub headers: Vec<(&'static str, String)>,
}

/// What one listing request is for.
pub struct Listing<'a> {
    pub scope: &'a Scope,
    /// The owner the vendor filters by; `None`: every sandbox (`sweepUnlabelled`,
    /// or a vendor that cannot filter: the engine filters what it lists).
    pub owner: Option<&'a str>,
    pub page_size: u32,
}

/// A hosted vendor, by its entry: the marker type behind `E2bConfig`,
/// `E2bProvider` and their siblings.
pub trait Vendor: Send + Sync + 'static {
    const ENTRY: &'static Entry;
    /// What the vendor adds beyond its entry (Railway's GraphQL); nothing by default.
    const EXTRAS: &'static Extras = &Extras::NONE;
}

/// How a [`HostedProvider`] reaches vendor `V`. Its `Default` is the
/// vendor's defaults (`proto/src/options/provider.rs`).
#[derive(Clone, PartialEq, Eq)]
pub struct HostedConfig<V> {
    /// The name instance records carry in `provider`. Default: the vendor's (`e2b`, `daytona`, `vercel`).
    pub name: String,
    /// The owner namespace: the label the listing is filtered by.
    pub owner: String,
    /// The credential; `None`: the vendor's variable (`E2B_API_KEY`, ...).
    pub api_key: Option<String>,
    /// The API base URL; `None`: the SDK's own variables, else the public API.
    pub api_url: Option<String>,
    /// The vendor's own options given (Vercel's `teamId` and `projectId`,
    /// Blaxel's `workspace`, Railway's `environmentId`: the consts in the
    /// vendor's module), by Node name; absent: the option's variable.
    pub options: BTreeMap<&'static str, String>,
    /// Sandboxes per listing page, 1 to the vendor's largest page.
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
    /// sandboxes read); hosts set it with `maxListingPages` / `maxListingItems`.
    pub listing_ceilings: ListingCeilings,
    /// The vendor (a marker).
    pub vendor: PhantomData<V>,
}

impl<V: Vendor> Default for HostedConfig<V> {
    fn default() -> Self {
        Self::from(HostedSettings::defaults(V::ENTRY.spec))
    }
}

impl<V> HostedConfig<V> {
    /// This config with the vendor's own option `name` set to `value`
    /// (`VercelConfig::default().with(vercel::PROJECT_ID, "prj_1")`).
    pub fn with(mut self, name: Name, value: &str) -> Self {
        self.options.insert(name.node, value.to_owned());
        self
    }
}

/// An engine vendor's provider from a host's or the command's settings (its
/// module's `build`).
pub(crate) fn build_entry<V: Vendor>(
    settings: HostedSettings,
) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    Ok(Box::new(HostedProvider::<V>::new(HostedConfig::from(settings))?))
}

/// The settings a host's options gave ([`HostedSettings::from_host`]), or the defaults.
impl<V> From<HostedSettings> for HostedConfig<V> {
    fn from(settings: HostedSettings) -> Self {
        Self {
            name: settings.name,
            owner: settings.owner,
            api_key: settings.api_key,
            api_url: settings.api_url,
            options: settings.options,
            page_size: settings.page_size,
            sweep_unlabelled: settings.sweep_unlabelled,
            request_timeout: settings.request_timeout,
            listing_ceilings: settings.listing_ceilings,
            vendor: PhantomData,
        }
    }
}

// By hand, so the credential never reaches a log line through `{:?}`.
impl<V: Vendor> fmt::Debug for HostedConfig<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(&format!("{}Config", V::ENTRY.spec().label))
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_url", &self.api_url)
            .field("options", &self.options)
            .field("page_size", &self.page_size)
            .field("sweep_unlabelled", &self.sweep_unlabelled)
            .field("request_timeout", &self.request_timeout)
            .field("listing_ceilings", &self.listing_ceilings)
            .finish()
    }
}

/// Any hosted vendor's provider: the engine running its [`Entry`]. It only
/// destroys and lists (the vendor's SDK creates).
pub struct HostedProvider<V> {
    entry: &'static Entry,
    extras: &'static Extras,
    name: String,
    owner: String,
    page_size: u32,
    sweep_unlabelled: bool,
    listing_ceilings: ListingCeilings,
    api_url: String,
    scope: Scope,
    client: HostedClient,
    vendor: PhantomData<V>,
}

impl<V> fmt::Debug for HostedProvider<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(&format!("{}Provider", self.entry.spec().label))
            .field("name", &self.name)
            .field("api_url", &self.api_url)
            .finish()
    }
}

/// A variable's value, when set and not empty.
pub(crate) fn variable(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

impl<V: Vendor> HostedProvider<V> {
    /// Checks the config and resolves the credential, URL and scope from the
    /// environment. Sends nothing; see [`HostedSandboxProvider::check_access`].
    pub fn new(config: HostedConfig<V>) -> Result<Self, ProviderError> {
        let entry = V::ENTRY;
        let spec = entry.spec();
        validate_provider_name(&config.name)?;
        validate_owner(&config.owner)?;
        if let Some(check_owner) = V::EXTRAS.check_owner {
            check_owner(&config.owner)?;
        }
        let largest = spec.max_page_size;
        // A vendor that sizes its pages itself (largest 0) takes no page size.
        if largest > 0 && !(1..=largest).contains(&config.page_size) {
            return Err(InvalidInput::new("pageSize", messages::hosted_page_size(largest, config.page_size)).into());
        }
        let scope = (entry.scope)(&ScopeOptions { options: &config.options })?;
        // The credential, and the variable it came from (`None`: the option).
        let (credential, source) = match config.api_key.clone() {
            Some(key) => (Some(key), None),
            None => spec
                .credential_variables
                .iter()
                .find_map(|name| variable(name).map(|value| (Some(value), Some(*name))))
                .unwrap_or((None, None)),
        };
        let extras = V::EXTRAS;
        let auth = extras.auth_for.map_or(entry.auth, |auth_for| auth_for(source));
        let api_url = config.api_url.clone().unwrap_or_else(entry.default_api_url);
        let vendor = client::Vendor {
            label: spec.label,
            credential_variable: entry.credential_hint,
            credential_option: "apiKey",
        };
        let headers =
            entry.headers.iter().map(|(name, value)| (*name, (*value).to_owned())).chain(scope.headers.clone());
        let credential = credential.unwrap_or_default();
        let client = HostedClient::new(vendor, &api_url, auth, &credential, headers, config.request_timeout)?
            .with_verdict(extras.verdict);
        Ok(Self {
            entry,
            extras,
            name: config.name,
            owner: config.owner,
            page_size: config.page_size,
            sweep_unlabelled: config.sweep_unlabelled,
            listing_ceilings: config.listing_ceilings,
            api_url,
            scope,
            client,
            vendor: PhantomData,
        })
    }

    /// One sandbox by the vendor's get, as the sandbox asked for (whatever
    /// id form the vendor answers with).
    async fn look_up(&self, get: &Get, id: &str) -> Result<Option<ListedSandbox>, ProviderError> {
        let body = self.extras.bodies.as_ref().map(|bodies| (bodies.get)(&self.scope, id));
        let request = request(Method::GET, (get.path)(&self.scope, id), body);
        let read = self.client.get_one(&request, get.read).await?;
        Ok(read.map(|sandbox| ListedSandbox { id: id.to_owned(), ..sandbox }))
    }

    /// What one listing request is for.
    fn listing(&self) -> Listing<'_> {
        let server_filters = self.entry.spec().owner_filter == OwnerFilter::Server;
        let owner = (server_filters && !self.sweep_unlabelled).then_some(self.owner.as_str());
        Listing { scope: &self.scope, owner, page_size: self.page_size }
    }

    /// A listing page's path, as the entry builds it.
    pub(crate) fn list_path(&self, cursor: Option<&str>) -> String {
        (self.entry.list_path)(&self.listing(), cursor)
    }

    /// A listing page's request: its path, and its body if the entry sends one.
    fn list_request(&self, cursor: Option<&str>) -> Request {
        let body = self.extras.bodies.as_ref().map(|bodies| (bodies.list)(&self.listing(), cursor));
        request(Method::GET, self.list_path(cursor), body)
    }
}

/// `method path`, or with a `body` a `POST` of it (a destroy keeps its verb).
fn request(method: Method, path: String, body: Option<Body>) -> Request {
    match body {
        None => Request::new(method, path),
        Some(Body { json, name }) => {
            let method = if method == Method::GET { Method::POST } else { method };
            Request::new(method, path).with_body(json, name)
        }
    }
}

#[async_trait]
impl<V: Vendor> HostedSandboxProvider for HostedProvider<V> {
    fn api_url(&self) -> &str {
        &self.api_url
    }

    /// The entry's one small call: refused (naming the variable to set)
    /// when the vendor refuses the credential, so a command can stop before
    /// its first pass.
    async fn check_access(&self) -> Result<(), ProviderError> {
        let body = self.extras.bodies.as_ref().map(|bodies| (bodies.check)(&self.scope));
        self.client.check(&request(Method::GET, (self.entry.check_path)(&self.scope), body)).await
    }
}

#[async_trait]
impl<V: Vendor> SandboxProvider for HostedProvider<V> {
    fn name(&self) -> &str {
        &self.name
    }

    /// The entry's destroy request: destroyed, or already gone (`404`, or
    /// the entry's verdict).
    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError> {
        validate_id(provider_sandbox_id)?;
        let (verb, path) = self.entry.destroy;
        let body = self.extras.bodies.as_ref().map(|bodies| (bodies.destroy)(&self.scope, provider_sandbox_id));
        let request = request(verb.method(), path(&self.scope, provider_sandbox_id), body);
        self.client.destroy_tolerating_gone(&request).await
    }

    fn can_list(&self) -> bool {
        true
    }

    /// Every page, by the entry's cursor; each sandbox once. Where the
    /// vendor cannot filter by owner, the engine keeps ours (every sandbox
    /// with `sweep_unlabelled`, as a filtering vendor's listing then is).
    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        let client_filters = self.entry.spec().owner_filter == OwnerFilter::Client && !self.sweep_unlabelled;
        let read = |answer: &Answer| {
            let (mut listed, next) = (self.entry.read_page)(answer)?;
            if client_filters {
                listed.retain(|sandbox| sandbox.owner.as_deref() == Some(self.owner.as_str()));
            }
            Ok((client::unlabelled_as_empty(listed, self.sweep_unlabelled), next))
        };
        self.client.list_pages(self.listing_ceilings, |cursor| self.list_request(cursor), read).await
    }

    fn owner(&self) -> Option<&str> {
        Some(&self.owner)
    }

    /// A vendor with a get looks up what the registry names, unless the
    /// listing already takes every sandbox (`sweep_unlabelled`).
    fn can_lookup(&self) -> bool {
        self.entry.get.is_some() && !self.sweep_unlabelled
    }

    /// Each id by the vendor's get, a few at once: what exists, as listed;
    /// a `404` or a gone state leaves it out; any other failure, or an
    /// answer that does not read, fails the lookup (the sweep fails closed).
    async fn lookup_sandboxes(&self, ids: &[String]) -> Result<Vec<ListedSandbox>, ProviderError> {
        let Some(get) = &self.entry.get else { return Ok(Vec::new()) };
        look_up_each(ids, |id| self.look_up(get, id)).await
    }
}

/// Each id by `look_up`, a few at once: what exists; the first failure
/// fails the lookup (the sweep fails closed). An id no sandbox of ours can
/// carry is nothing to look up.
pub(crate) async fn look_up_each<'a, F, Fut>(ids: &'a [String], look_up: F) -> Result<Vec<ListedSandbox>, ProviderError>
where
    F: Fn(&'a str) -> Fut,
    Fut: std::future::Future<Output = Result<Option<ListedSandbox>, ProviderError>>,
{
    let ids: Vec<&String> = ids.iter().filter(|id| validate_id(id).is_ok()).collect();
    // A sliding window: a slow get holds one slot, not a whole batch.
    let mut pending = ids.into_iter();
    let mut reads = futures_util::stream::FuturesOrdered::new();
    for id in pending.by_ref().take(LOOKUP_CONCURRENCY) {
        reads.push_back(look_up(id));
    }
    let mut found = Vec::new();
    while let Some(read) = futures_util::StreamExt::next(&mut reads).await {
        found.extend(read?);
        if let Some(id) = pending.next() {
            reads.push_back(look_up(id));
        }
    }
    Ok(found)
}

impl Entry {
    /// The vendor's row (`proto/src/options/provider.rs`).
    pub(crate) fn spec(&self) -> &'static VendorSpec {
        self.spec
    }
}

/// No scope beyond the credential (most vendors).
pub(crate) fn unscoped(_options: &ScopeOptions<'_>) -> Result<Scope, InvalidInput> {
    Ok(Scope::default())
}

/// Our owner and key from labels kept as a map (`io.sandbox-reclaim.owner` → owner).
pub(crate) fn owner_and_key(labels: &std::collections::BTreeMap<String, String>) -> (Option<String>, Option<String>) {
    use crate::providers::{LABEL_KEY, LABEL_OWNER};
    (labels.get(LABEL_OWNER).cloned(), labels.get(LABEL_KEY).cloned())
}

/// `path` with `&name=cursor` appended when there is a cursor (a listing's next page).
pub(crate) fn with_cursor(mut path: String, name: &str, cursor: Option<&str>) -> String {
    if let Some(cursor) = cursor {
        path.push_str(&format!("&{name}={}", client::encode_component(cursor)));
    }
    path
}

/// Every item of a page as a listed sandbox; the first that does not read fails the page.
pub(crate) fn listed<T>(
    items: Vec<T>,
    read: fn(T) -> Result<ListedSandbox, String>,
) -> Result<Vec<ListedSandbox>, String> {
    items.into_iter().map(read).collect()
}
