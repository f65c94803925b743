//! The hosted vendors as data ([`VENDORS`]), and the options a hosted
//! provider takes from a host,
//! checked once, here: each one's name in each host's spelling, its default
//! and its range (the error texts come from [`crate::report::messages`] through
//! [`HostOptions`]).
//!
//! A binding reads the properties the core names ([`HostedVendor::names`])
//! from the user's options, once each, and hands them over as plain values,
//! as it does a flow's options. The core answers [`HostedSettings`], every
//! default applied, which the vendor's config is built from
//! (`E2bConfig::from(settings)`, ...); the command and the Rust API start
//! from [`HostedSettings::defaults`].

use std::time::Duration;

use crate::options::{
    defaults, duration, name, HostOptionError, HostOptions, Name, NoneMeansDefault, OptionId, OWNER as OWNER_NAME,
};

pub const NAME: Name = name(OptionId::ProviderName, "name", "name");
pub const OWNER: Name = OWNER_NAME;
pub const API_KEY: Name = name(OptionId::ApiKey, "apiKey", "api_key");
pub const API_URL: Name = name(OptionId::ApiUrl, "apiUrl", "api_url");
pub const TEAM_ID: Name = name(OptionId::TeamId, "teamId", "team_id");
pub const PROJECT_ID: Name = name(OptionId::ProjectId, "projectId", "project_id");
pub const WORKSPACE: Name = name(OptionId::Workspace, "workspace", "workspace");
pub const TOKEN_ID: Name = name(OptionId::TokenId, "tokenId", "token_id");
pub const TOKEN_SECRET: Name = name(OptionId::TokenSecret, "tokenSecret", "token_secret");
pub const APP_ID: Name = name(OptionId::AppId, "appId", "app_id");
pub const ENVIRONMENT: Name = name(OptionId::Environment, "environment", "environment");
pub const KUBECONFIG: Name = name(OptionId::Kubeconfig, "kubeconfig", "kubeconfig");
pub const CONTEXT: Name = name(OptionId::Context, "context", "context");
pub const NAMESPACE: Name = name(OptionId::Namespace, "namespace", "namespace");
pub const KIND: Name = name(OptionId::Kind, "kind", "kind");
pub const ENVIRONMENT_ID: Name = name(OptionId::EnvironmentId, "environmentId", "environment_id");
pub const ORG: Name = name(OptionId::Org, "org", "org");
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

/// The vendors whose hosted providers the bindings and the command build.
/// Everything a host or the command shows of a vendor is its [`VendorSpec`]
/// row in [`VENDORS`]; its wire format is its entry in the core
/// (`core/src/providers/hosted/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HostedVendor {
    E2b,
    Daytona,
    Vercel,
    Sprites,
    Runloop,
    Blaxel,
    Modal,
    Kubernetes,
    UpstashBox,
    Boxd,
    Railway,
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

/// One hosted vendor as hosts, the command and the docs see it.
#[derive(Debug)]
pub struct VendorSpec {
    pub vendor: HostedVendor,
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
    /// How destroy ends a sandbox, for the docs (`DELETE /v1/sprites/{name}`).
    pub destroy_doc: &'static str,
    /// What the vendor calls gone or going: never destroyed again.
    pub gone_doc: &'static str,
}

/// A vendor's scope (or credential) option: the option, the variable it
/// defaults to (`None`: the vendor's client has none, Modal's app id), and
/// whether the provider needs it.
#[derive(Debug)]
pub struct ScopeOption {
    pub name: Name,
    pub variable: Option<&'static str>,
    pub required: bool,
}

/// Every hosted vendor, in the command's order.
pub const VENDORS: &[VendorSpec] = &[
    VendorSpec {
        vendor: HostedVendor::E2b,
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
        destroy_doc: "DELETE /sandboxes/{id}",
        gone_doc: "404; a listed sandbox is running or paused (both bill)",
    },
    VendorSpec {
        vendor: HostedVendor::Daytona,
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
        destroy_doc: "DELETE /sandbox/{id}",
        gone_doc: "404; `destroying` or desiredState `destroyed` is deleting",
    },
    VendorSpec {
        vendor: HostedVendor::Vercel,
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
        destroy_doc: "DELETE /v2/sandboxes/{name} (not stop: a stopped sandbox bills)",
        gone_doc: "404; every listed status still bills",
    },
    VendorSpec {
        vendor: HostedVendor::Sprites,
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
        destroy_doc: "DELETE /v1/sprites/{name}",
        gone_doc: "404 (no deleting status: a deleted sprite may stay listed a while)",
    },
    VendorSpec {
        vendor: HostedVendor::Runloop,
        key: "runloop",
        label: "Runloop",
        class: "RunloopProvider",
        credential_variables: &["RUNLOOP_API_KEY"],
        credential_options: &[],
        api_url_variable: Some("RUNLOOP_BASE_URL"),
        api_url_doc: "RUNLOOP_BASE_URL, else https://api.runloop.ai",
        scope_options: &[],
        default_page_size: 100,
        max_page_size: 5000,
        owner_filter: OwnerFilter::Client,
        destroy_doc: "POST /v1/devboxes/{id}/shutdown (Runloop never deletes a devbox)",
        gone_doc: "`shutdown` and `failure` (listed forever, never billed); `suspended` still bills",
    },
    VendorSpec {
        vendor: HostedVendor::Blaxel,
        key: "blaxel",
        label: "Blaxel",
        class: "BlaxelProvider",
        credential_variables: &["BL_API_KEY"],
        credential_options: &[],
        api_url_variable: Some("BL_API_URL"),
        api_url_doc: "BL_API_URL, else https://api.blaxel.ai/v0 (https://api.blaxel.dev/v0 when BL_ENV=dev)",
        scope_options: &[ScopeOption { name: WORKSPACE, variable: Some("BL_WORKSPACE"), required: true }],
        default_page_size: 100,
        max_page_size: 200,
        owner_filter: OwnerFilter::Client,
        destroy_doc: "DELETE /v0/sandboxes/{name}",
        gone_doc: "404 and `TERMINATED` (a tombstone GET still reads); `DELETING` is deleting",
    },
    VendorSpec {
        vendor: HostedVendor::Modal,
        key: "modal",
        label: "Modal",
        class: "ModalProvider",
        credential_variables: &["MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"],
        credential_options: &[
            ScopeOption { name: TOKEN_ID, variable: Some("MODAL_TOKEN_ID"), required: true },
            ScopeOption { name: TOKEN_SECRET, variable: Some("MODAL_TOKEN_SECRET"), required: true },
        ],
        api_url_variable: Some("MODAL_SERVER_URL"),
        api_url_doc: "MODAL_SERVER_URL, else https://api.modal.com (gRPC)",
        scope_options: &[
            ScopeOption { name: APP_ID, variable: None, required: false },
            ScopeOption { name: ENVIRONMENT, variable: Some("MODAL_ENVIRONMENT"), required: false },
        ],
        default_page_size: 0,
        max_page_size: 0,
        owner_filter: OwnerFilter::Server,
        destroy_doc: "SandboxTerminate, or SandboxTerminateV2 for a V2 id (listed by SandboxListV2 within `appId`)",
        gone_doc: "NOT_FOUND and a finished sandbox (its terminate is success)",
    },
    VendorSpec {
        vendor: HostedVendor::Kubernetes,
        key: "kubernetes",
        label: "Kubernetes",
        class: "KubernetesProvider",
        credential_variables: &["KUBECONFIG"],
        credential_options: &[ScopeOption { name: KUBECONFIG, variable: Some("KUBECONFIG"), required: false }],
        api_url_variable: None,
        api_url_doc: "the kubeconfig context's server (KUBECONFIG, else ~/.kube/config), else in-cluster",
        scope_options: &[
            ScopeOption { name: CONTEXT, variable: None, required: false },
            ScopeOption { name: NAMESPACE, variable: None, required: false },
            ScopeOption { name: KIND, variable: None, required: false },
        ],
        default_page_size: 100,
        max_page_size: 500,
        owner_filter: OwnerFilter::Server,
        destroy_doc: "DELETE of the SandboxClaim (or Sandbox, Pod) `{namespace}_{name}`, propagationPolicy Foreground",
        gone_doc: "404; an object with a deletionTimestamp is deleting",
    },
    VendorSpec {
        vendor: HostedVendor::UpstashBox,
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
        destroy_doc: "DELETE /v2/box/{id}",
        gone_doc: "404 and `deleted` (a deleted box still reads by GET)",
    },
    VendorSpec {
        vendor: HostedVendor::Boxd,
        key: "boxd",
        label: "boxd",
        class: "BoxdProvider",
        credential_variables: &["BOXD_TOKEN", "BOXD_API_KEY"],
        credential_options: &[],
        api_url_variable: Some("BOXD_BASE_URL"),
        api_url_doc: "BOXD_BASE_URL, else https://boxd.sh:9443 (gRPC)",
        scope_options: &[ScopeOption { name: ORG, variable: Some("BOXD_ORG"), required: false }],
        default_page_size: 0,
        max_page_size: 0,
        owner_filter: OwnerFilter::Server,
        destroy_doc: "DestroyVm (listed by ListVms within `org`)",
        gone_doc: "NOT_FOUND and status `destroyed`",
    },
    VendorSpec {
        vendor: HostedVendor::Railway,
        key: "railway",
        label: "Railway",
        class: "RailwayProvider",
        credential_variables: &["RAILWAY_TOKEN", "RAILWAY_API_TOKEN"],
        credential_options: &[],
        api_url_variable: Some("RAILWAY_GRAPHQL_ENDPOINT"),
        api_url_doc: "RAILWAY_GRAPHQL_ENDPOINT, else https://backboard.railway.com/graphql/v2 (GraphQL)",
        scope_options: &[ScopeOption {
            name: ENVIRONMENT_ID,
            variable: Some("RAILWAY_ENVIRONMENT_ID"),
            required: true,
        }],
        default_page_size: 100,
        max_page_size: 100,
        owner_filter: OwnerFilter::Client,
        destroy_doc: "sandboxDestroy(id, environmentId)",
        gone_doc: "`sandbox: null` and `DESTROYED`; `DESTROYING` is deleting",
    },
];

impl HostedVendor {
    /// Every vendor, in [`VENDORS`]' order.
    pub fn all() -> impl Iterator<Item = Self> {
        VENDORS.iter().map(|spec| spec.vendor)
    }

    /// Every vendor's key, in [`VENDORS`]' order.
    pub fn keys() -> Vec<&'static str> {
        VENDORS.iter().map(|spec| spec.key).collect()
    }

    /// Parses the vendor by its key (`e2b`, `sprites`, ...).
    pub fn parse(vendor: &str) -> Option<Self> {
        VENDORS.iter().find(|spec| spec.key == vendor).map(|spec| spec.vendor)
    }

    /// Its row in [`VENDORS`].
    pub const fn spec(self) -> &'static VendorSpec {
        let mut index = 0;
        while index < VENDORS.len() {
            if VENDORS[index].vendor as u8 == self as u8 {
                return &VENDORS[index];
            }
            index += 1;
        }
        panic!("every vendor has a row in VENDORS")
    }

    /// The options the vendor's provider takes, in the order they are checked.
    pub fn names(self) -> Vec<Name> {
        let spec = self.spec();
        let credential: Vec<Name> = match spec.credential_options {
            [] => vec![API_KEY],
            parts => parts.iter().map(|option| option.name).collect(),
        };
        let scope = spec.scope_options.iter().map(|option| option.name);
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

    /// Whether the vendor's listing takes a page size (Modal's does not).
    pub const fn takes_page_size(self) -> bool {
        self.spec().max_page_size > 0
    }

    /// The vendor's credential variables as a text for messages and docs
    /// (`E2B_API_KEY`; `SPRITES_API_KEY, else SPRITE_TOKEN`; `MODAL_TOKEN_ID
    /// + MODAL_TOKEN_SECRET`).
    pub fn credential_doc(self) -> String {
        let spec = self.spec();
        let joiner = if spec.credential_options.is_empty() { ", else " } else { " + " };
        spec.credential_variables.join(joiner)
    }

    /// Whether `name` is one of the vendor's scope options.
    pub fn scoped_by(self, name: Name) -> bool {
        self.spec().scope_options.iter().any(|option| option.name.id == name.id)
    }

    /// Whether the vendor's provider takes option `name` at all.
    pub fn takes(self, name: Name) -> bool {
        self.names().iter().any(|taken| taken.id == name.id)
    }

    /// The provider name instance records carry unless told.
    pub const fn default_name(self) -> &'static str {
        self.spec().key
    }

    /// The largest listing page the vendor serves.
    pub const fn max_page_size(self) -> u32 {
        self.spec().max_page_size
    }

    /// Sandboxes per listing page unless told.
    pub const fn default_page_size(self) -> u32 {
        self.spec().default_page_size
    }
}

/// A hosted provider's settings, every default applied. Credentials and
/// URLs left `None` are read from the vendor's environment variables when
/// the provider is built.
#[derive(Clone, PartialEq, Eq)]
pub struct HostedSettings {
    pub name: String,
    pub owner: String,
    pub api_key: Option<String>,
    pub api_url: Option<String>,
    /// Vercel only.
    pub team_id: Option<String>,
    /// Vercel only.
    pub project_id: Option<String>,
    /// Blaxel only.
    pub workspace: Option<String>,
    /// Modal only: the token id (`MODAL_TOKEN_ID` when `None`).
    pub token_id: Option<String>,
    /// Modal only: the token secret (`MODAL_TOKEN_SECRET` when `None`).
    pub token_secret: Option<String>,
    /// Modal only: the app whose sandboxes are listed.
    pub app_id: Option<String>,
    /// Modal only: the environment (`MODAL_ENVIRONMENT` when `None`).
    pub environment: Option<String>,
    /// Kubernetes only: the kubeconfig file (`KUBECONFIG`, else
    /// `~/.kube/config`, else in-cluster when `None`).
    pub kubeconfig: Option<String>,
    /// Kubernetes only: the kubeconfig context (its current one when `None`).
    pub context: Option<String>,
    /// Kubernetes only: the namespace listed (`*`: every namespace; the
    /// context's when `None`).
    pub namespace: Option<String>,
    /// Kubernetes only: the kind swept (`SandboxClaim` when `None`, `Sandbox`, `Pod`).
    pub kind: Option<String>,
    /// Railway only: the environment (`RAILWAY_ENVIRONMENT_ID` when `None`).
    pub environment_id: Option<String>,
    /// boxd only: the organization (`BOXD_ORG` when `None`; empty: personal machines).
    pub org: Option<String>,
    /// 0 for a vendor that sizes its pages itself (Modal).
    pub page_size: u32,
    pub request_timeout: Duration,
    pub sweep_unlabelled: bool,
    pub listing_ceilings: ListingCeilings,
}

impl HostedSettings {
    /// What `vendor`'s provider uses when told nothing.
    pub fn defaults(vendor: HostedVendor) -> Self {
        Self {
            name: vendor.default_name().to_owned(),
            owner: defaults::OWNER.to_owned(),
            api_key: None,
            api_url: None,
            team_id: None,
            project_id: None,
            workspace: None,
            token_id: None,
            token_secret: None,
            app_id: None,
            environment: None,
            kubeconfig: None,
            context: None,
            namespace: None,
            kind: None,
            environment_id: None,
            org: None,
            page_size: vendor.default_page_size(),
            request_timeout: Duration::from_millis(DEFAULT_REQUEST_TIMEOUT_MS),
            sweep_unlabelled: false,
            listing_ceilings: ListingCeilings::default(),
        }
    }

    /// Sets one of a vendor's own (scope or credential) options: the one
    /// place an option id meets its field.
    pub fn set_option(&mut self, id: OptionId, value: Option<String>) {
        let field = match id {
            OptionId::ApiKey => &mut self.api_key,
            OptionId::TeamId => &mut self.team_id,
            OptionId::ProjectId => &mut self.project_id,
            OptionId::Workspace => &mut self.workspace,
            OptionId::TokenId => &mut self.token_id,
            OptionId::TokenSecret => &mut self.token_secret,
            OptionId::AppId => &mut self.app_id,
            OptionId::Environment => &mut self.environment,
            OptionId::Kubeconfig => &mut self.kubeconfig,
            OptionId::Context => &mut self.context,
            OptionId::Namespace => &mut self.namespace,
            OptionId::Kind => &mut self.kind,
            OptionId::EnvironmentId => &mut self.environment_id,
            OptionId::Org => &mut self.org,
            _ => unreachable!("only a vendor's own options are set by id"),
        };
        *field = value;
    }

    /// The settings a host's options give (absent ones defaulted), or the
    /// first option refused. Python's `None` is the default for the
    /// credentials and URLs (they default to `None` there), a wrong type
    /// for the others.
    pub fn from_host(vendor: HostedVendor, options: &HostOptions) -> Result<Self, HostOptionError> {
        let mut settings = Self::defaults(vendor);
        let (yes, no) = (NoneMeansDefault::Yes, NoneMeansDefault::No);
        if let Some(name) = options.text(NAME, no)? {
            settings.name = name;
        }
        if let Some(owner) = options.text(OWNER, no)? {
            settings.owner = owner;
        }
        let spec = vendor.spec();
        if spec.credential_options.is_empty() {
            settings.api_key = options.text(API_KEY, yes)?;
        }
        for option in spec.credential_options.iter().chain(spec.scope_options) {
            settings.set_option(option.name.id, options.text(option.name, yes)?);
        }
        settings.api_url = options.text(API_URL, yes)?;
        if vendor.takes_page_size() {
            if let Some(page_size) = options.count_up_to(PAGE_SIZE, 1, vendor.max_page_size(), no)? {
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

// By hand, so a credential never reaches a log line through `{:?}`.
impl std::fmt::Debug for HostedSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedSettings")
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_url", &self.api_url)
            .field("team_id", &self.team_id)
            .field("project_id", &self.project_id)
            .field("workspace", &self.workspace)
            .field("token_id", &self.token_id.as_ref().map(|_| "<redacted>"))
            .field("token_secret", &self.token_secret.as_ref().map(|_| "<redacted>"))
            .field("app_id", &self.app_id)
            .field("environment", &self.environment)
            .field("kubeconfig", &self.kubeconfig)
            .field("context", &self.context)
            .field("namespace", &self.namespace)
            .field("kind", &self.kind)
            .field("environment_id", &self.environment_id)
            .field("org", &self.org)
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

    fn node(vendor: HostedVendor, json: &str) -> Result<HostedSettings, HostOptionError> {
        HostedSettings::from_host(vendor, &HostOptions::parse(json, Dialect::Node).unwrap())
    }

    fn python(vendor: HostedVendor, json: &str) -> Result<HostedSettings, HostOptionError> {
        HostedSettings::from_host(vendor, &HostOptions::parse(json, Dialect::Python).unwrap())
    }

    #[test]
    fn nothing_given_is_the_vendors_defaults() {
        for vendor in HostedVendor::all() {
            assert_eq!(node(vendor, "{}").unwrap(), HostedSettings::defaults(vendor));
            assert_eq!(python(vendor, r#"{"api_key": null}"#).unwrap(), HostedSettings::defaults(vendor));
        }
        let vercel = HostedSettings::defaults(HostedVendor::Vercel);
        assert_eq!((vercel.name.as_str(), vercel.page_size), ("vercel", 50));
        assert_eq!(HostedSettings::defaults(HostedVendor::Daytona).request_timeout, Duration::from_secs(30));
    }

    #[test]
    fn listing_ceilings_are_options_with_the_defaults_of_the_constants() {
        let given = node(HostedVendor::E2b, r#"{"maxListingPages": 3, "maxListingItems": 250}"#).unwrap();
        assert_eq!(given.listing_ceilings, ListingCeilings { pages: 3, items: 250 });
        let given = python(HostedVendor::Vercel, r#"{"max_listing_pages": 7}"#).unwrap();
        assert_eq!(given.listing_ceilings, ListingCeilings { pages: 7, items: MAX_LISTING_ITEMS });
        let zero = node(HostedVendor::Daytona, r#"{"maxListingPages": 0}"#).unwrap_err();
        assert_eq!(zero.message, "options.maxListingPages must be a whole number between 1 and 1000000");
        let huge = python(HostedVendor::E2b, r#"{"max_listing_items": 100000001}"#).unwrap_err();
        assert_eq!(huge.problem, Problem::Range);
    }

    #[test]
    fn page_sizes_are_ranged_per_vendor() {
        assert_eq!(node(HostedVendor::Daytona, r#"{"pageSize": 200}"#).unwrap().page_size, 200);
        let too_big = node(HostedVendor::E2b, r#"{"pageSize": 101}"#).unwrap_err();
        assert_eq!(too_big.message, "options.pageSize must be a whole number between 1 and 100");
        let zero = python(HostedVendor::Vercel, r#"{"page_size": 0}"#).unwrap_err();
        assert_eq!(
            (zero.problem, zero.message.as_str()),
            (Problem::Range, "`page_size` must be a whole number between 1 and 50, got 0")
        );
        let flag = python(HostedVendor::E2b, r#"{"page_size": true}"#).unwrap_err();
        assert_eq!((flag.problem, flag.message.as_str()), (Problem::Type, "`page_size` must be an int, got bool"));
    }

    #[test]
    fn request_timeouts_are_milliseconds_in_node_and_seconds_in_python_up_to_a_day() {
        let node_given = node(HostedVendor::E2b, r#"{"requestTimeoutMs": 1500}"#).unwrap();
        assert_eq!(node_given.request_timeout, Duration::from_millis(1500));
        let python_given = python(HostedVendor::E2b, r#"{"request_timeout": 1.5}"#).unwrap();
        assert_eq!(python_given.request_timeout, Duration::from_millis(1500));
        let zero = python(HostedVendor::E2b, r#"{"request_timeout": 0}"#).unwrap_err();
        assert_eq!(
            (zero.problem, zero.message.as_str()),
            (Problem::Range, "`request_timeout` must be at least 0.001 seconds, got 0")
        );
        let long = node(HostedVendor::Daytona, r#"{"requestTimeoutMs": 86400001}"#).unwrap_err();
        assert_eq!(long.message, "options.requestTimeoutMs must be a whole number between 1 and 86400000");
        let long = python(HostedVendor::Daytona, r#"{"request_timeout": 86401}"#).unwrap_err();
        assert_eq!(long.problem, Problem::Range);
    }

    #[test]
    fn strings_and_flags_are_typed() {
        let owner = node(HostedVendor::E2b, r#"{"owner": 7}"#).unwrap_err();
        assert_eq!(owner.message, "options.owner must be a string");
        let name = python(HostedVendor::E2b, r#"{"name": null}"#).unwrap_err();
        assert_eq!(name.message, "`name` must be a str, got NoneType");
        let sweep = node(HostedVendor::Vercel, r#"{"sweepUnlabelled": "yes"}"#).unwrap_err();
        assert_eq!(sweep.message, "options.sweepUnlabelled must be a boolean");
        let key = node(HostedVendor::E2b, r#"{"apiKey": {"$loneSurrogate": true}}"#).unwrap_err();
        assert_eq!(key.field, "apiKey");
        let vercel = node(HostedVendor::Vercel, r#"{"teamId": "t", "projectId": "p", "sweepUnlabelled": true}"#);
        let vercel = vercel.unwrap();
        assert_eq!((vercel.team_id.as_deref(), vercel.project_id.as_deref()), (Some("t"), Some("p")));
        assert!(vercel.sweep_unlabelled);
    }

    #[test]
    fn every_vendor_has_one_row_and_its_scope_options_are_read() {
        for (index, spec) in VENDORS.iter().enumerate() {
            assert_eq!(spec.vendor.spec().key, spec.key);
            assert_eq!(HostedVendor::parse(spec.key), Some(spec.vendor));
            assert!(VENDORS[..index].iter().all(|other| other.vendor != spec.vendor && other.class != spec.class));
            let sized_by_vendor = spec.max_page_size == 0 && spec.default_page_size == 0;
            assert!(sized_by_vendor || (1..=spec.max_page_size).contains(&spec.default_page_size), "{}", spec.key);
            assert!(!spec.credential_variables.is_empty(), "{}", spec.key);
        }
        let blaxel = node(HostedVendor::Blaxel, r#"{"workspace": "ws1"}"#).unwrap();
        assert_eq!(blaxel.workspace.as_deref(), Some("ws1"));
        let ignored = node(HostedVendor::Sprites, r#"{"workspace": 5}"#).unwrap();
        assert_eq!(ignored.workspace, None, "only Blaxel reads a workspace");
        let names: Vec<&str> = HostedVendor::Blaxel.names().iter().map(|name| name.python).collect();
        assert_eq!(&names[..4], ["name", "owner", "api_key", "workspace"]);
    }

    #[test]
    fn a_listing_is_ceilinged_at_ten_thousand_pages_and_a_million_sandboxes() {
        assert_eq!(ListingCeilings::default(), ListingCeilings { pages: 10_000, items: 1_000_000 });
    }

    #[test]
    fn a_credential_never_shows_in_debug() {
        let settings = node(HostedVendor::E2b, r#"{"apiKey": "e2b_secret"}"#).unwrap();
        assert!(!format!("{settings:?}").contains("e2b_secret"));
        let modal = node(HostedVendor::Modal, r#"{"tokenId": "ak-secret-id", "tokenSecret": "as-secret"}"#).unwrap();
        assert!(!format!("{modal:?}").contains("ak-secret-id") && !format!("{modal:?}").contains("as-secret"));
    }

    #[test]
    fn modal_takes_a_token_pair_an_app_and_an_environment_and_no_page_size() {
        let names: Vec<&str> = HostedVendor::Modal.names().iter().map(|name| name.node).collect();
        assert_eq!(&names[..6], ["name", "owner", "tokenId", "tokenSecret", "appId", "environment"]);
        assert!(!names.contains(&"apiKey") && !names.contains(&"pageSize"), "{names:?}");
        let given = python(
            HostedVendor::Modal,
            r#"{"token_id": "ak-1", "token_secret": "as-1", "app_id": "ap-1", "environment": "dev", "page_size": 5}"#,
        )
        .unwrap();
        assert_eq!(
            (given.token_id.as_deref(), given.token_secret.as_deref(), given.app_id.as_deref()),
            (Some("ak-1"), Some("as-1"), Some("ap-1"))
        );
        assert_eq!((given.environment.as_deref(), given.page_size, given.api_key), (Some("dev"), 0, None));
        let typed = node(HostedVendor::Modal, r#"{"tokenSecret": 5}"#).unwrap_err();
        assert_eq!(typed.field, "tokenSecret");
        assert_eq!(HostedVendor::Modal.credential_doc(), "MODAL_TOKEN_ID + MODAL_TOKEN_SECRET");
        assert_eq!(HostedVendor::Sprites.credential_doc(), "SPRITES_API_KEY, else SPRITE_TOKEN");
    }

    #[test]
    fn kubernetes_takes_a_kubeconfig_a_context_a_namespace_and_a_kind() {
        let names: Vec<&str> = HostedVendor::Kubernetes.names().iter().map(|name| name.python).collect();
        assert_eq!(&names[..7], ["name", "owner", "kubeconfig", "context", "namespace", "kind", "api_url"]);
        assert!(!names.contains(&"api_key"), "{names:?}");
        let given = python(
            HostedVendor::Kubernetes,
            r#"{"kubeconfig": "/k", "context": "c", "namespace": "*", "kind": "Pod", "page_size": 500}"#,
        )
        .unwrap();
        assert_eq!(
            (given.kubeconfig.as_deref(), given.context.as_deref(), given.namespace.as_deref(), given.kind.as_deref()),
            (Some("/k"), Some("c"), Some("*"), Some("Pod"))
        );
        assert_eq!(given.page_size, 500);
        let typed = node(HostedVendor::Kubernetes, r#"{"namespace": 5}"#).unwrap_err();
        assert_eq!(typed.field, "namespace");
        let too_big = node(HostedVendor::Kubernetes, r#"{"pageSize": 501}"#).unwrap_err();
        assert_eq!(too_big.field, "pageSize");
    }
}
