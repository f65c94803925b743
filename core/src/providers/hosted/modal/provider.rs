//! The provider itself (see the module's doc).

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;

use super::rpc::{Rpc, LABEL};
use super::wire;
use super::wire::{SandboxInfo, SandboxTag};
use crate::contract::errors::ProviderError;
use crate::contract::SandboxProvider;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::{HostedSettings, ListingCeilings};
use crate::providers::hosted::client::unlabelled_as_empty;
use crate::providers::hosted::grpc::Refusal;
use crate::providers::hosted::paging::{self, PageRead};
use crate::providers::hosted::{look_up_each, owner_and_key, variable};
use crate::providers::{
    validate_id, validate_owner, validate_provider_name, HostedSandboxProvider, InvalidInput, LABEL_OWNER,
};
use crate::report::messages;

/// Modal's public API (the official client's default, before its fallback).
pub const MODAL_PUBLIC_API_URL: &str = "https://api.modal.com";

/// How a [`ModalProvider`] reaches Modal. Its `Default` is the vendor's
/// defaults (`proto/src/options/provider.rs`).
#[derive(Clone, PartialEq, Eq)]
pub struct ModalConfig {
    /// The name instance records carry in `provider`. Default `modal`.
    pub name: String,
    /// The owner namespace: the tag the listing is filtered by.
    pub owner: String,
    /// The token id; `None`: `MODAL_TOKEN_ID`.
    pub token_id: Option<String>,
    /// The token secret; `None`: `MODAL_TOKEN_SECRET`.
    pub token_secret: Option<String>,
    /// The server; `None`: `MODAL_SERVER_URL`, else [`MODAL_PUBLIC_API_URL`].
    pub api_url: Option<String>,
    /// The app whose sandboxes are listed (`ap-...`).
    pub app_id: Option<String>,
    /// Without an app, the environment listed (deprecated by Modal); `None`: `MODAL_ENVIRONMENT`.
    pub environment: Option<String>,
    /// List every sandbox of the app, not only those tagged with our owner,
    /// so the sweep also finds untagged ones the store's registry names.
    pub sweep_unlabelled: bool,
    /// How long one call may take. Default 30 s.
    pub request_timeout: Duration,
    /// How far one listing goes before it fails closed.
    pub listing_ceilings: ListingCeilings,
}

impl Default for ModalConfig {
    fn default() -> Self {
        Self::from(HostedSettings::defaults(&super::SPEC))
    }
}

impl From<HostedSettings> for ModalConfig {
    fn from(settings: HostedSettings) -> Self {
        let token_id = settings.option(super::TOKEN_ID).map(str::to_owned);
        let token_secret = settings.option(super::TOKEN_SECRET).map(str::to_owned);
        let app_id = settings.option(super::APP_ID).map(str::to_owned);
        let environment = settings.option(super::ENVIRONMENT).map(str::to_owned);
        Self {
            name: settings.name,
            owner: settings.owner,
            token_id,
            token_secret,
            api_url: settings.api_url,
            app_id,
            environment,
            sweep_unlabelled: settings.sweep_unlabelled,
            request_timeout: settings.request_timeout,
            listing_ceilings: settings.listing_ceilings,
        }
    }
}

// By hand, so neither part of the token reaches a log line through `{:?}`.
impl fmt::Debug for ModalConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModalConfig")
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("token_id", &self.token_id.as_ref().map(|_| "<redacted>"))
            .field("token_secret", &self.token_secret.as_ref().map(|_| "<redacted>"))
            .field("api_url", &self.api_url)
            .field("app_id", &self.app_id)
            .field("environment", &self.environment)
            .field("sweep_unlabelled", &self.sweep_unlabelled)
            .field("request_timeout", &self.request_timeout)
            .field("listing_ceilings", &self.listing_ceilings)
            .finish()
    }
}

/// Modal sandboxes: terminate by id shape, list by owner tag within an app.
pub struct ModalProvider {
    name: String,
    owner: String,
    sweep_unlabelled: bool,
    listing_ceilings: ListingCeilings,
    api_url: String,
    /// The app and environment listed within (`None`: neither was given).
    scope: Option<(String, String)>,
    rpc: Rpc,
}

impl fmt::Debug for ModalProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModalProvider").field("name", &self.name).field("api_url", &self.api_url).finish()
    }
}

impl ModalProvider {
    /// Checks the config and resolves the token, server and scope from the
    /// environment. Sends nothing; see [`HostedSandboxProvider::check_access`].
    pub fn new(config: ModalConfig) -> Result<Self, ProviderError> {
        validate_provider_name(&config.name)?;
        validate_owner(&config.owner)?;
        let token_id = config.token_id.clone().or_else(|| variable("MODAL_TOKEN_ID")).unwrap_or_default();
        let token_secret = config.token_secret.clone().or_else(|| variable("MODAL_TOKEN_SECRET")).unwrap_or_default();
        for (part, field, what) in [(&token_id, "tokenId", "id"), (&token_secret, "tokenSecret", "secret")] {
            if part.is_empty() {
                return Err(InvalidInput::new(field, messages::modal_missing_token(what)).into());
            }
        }
        let configured = config.api_url.clone().or_else(|| variable("MODAL_SERVER_URL"));
        let api_url = configured.as_deref().map_or(MODAL_PUBLIC_API_URL, first_url).trim_end_matches('/').to_owned();
        let app_id = config.app_id.clone().filter(|app| !app.is_empty());
        let environment = config.environment.clone().or_else(|| variable("MODAL_ENVIRONMENT")).unwrap_or_default();
        // The client sends the environment only when it lists without an app.
        let scope = match app_id {
            Some(app) => Some((app, String::new())),
            None if !environment.is_empty() => Some((String::new(), environment)),
            None => None,
        };
        let rpc = Rpc::new(&api_url, &token_id, &token_secret, config.request_timeout)?;
        Ok(Self {
            name: config.name,
            owner: config.owner,
            sweep_unlabelled: config.sweep_unlabelled,
            listing_ceilings: config.listing_ceilings,
            api_url,
            scope,
            rpc,
        })
    }

    /// One listing page: `SandboxListV2` before `cursor` (epoch seconds),
    /// under our owner tag unless `every` (or `sweep_unlabelled`).
    async fn list_page(
        &self,
        app_id: &str,
        environment: &str,
        every: bool,
        cursor: Option<String>,
    ) -> Result<PageRead, ProviderError> {
        let method = wire::SANDBOX_LIST_V2;
        let before_timestamp = cursor.as_deref().and_then(|cursor| cursor.parse().ok()).unwrap_or(0.0);
        let tags = match every || self.sweep_unlabelled {
            true => Vec::new(),
            false => vec![SandboxTag { tag_name: LABEL_OWNER.to_owned(), tag_value: self.owner.clone() }],
        };
        let request = wire::SandboxListRequest {
            app_id: app_id.to_owned(),
            before_timestamp,
            environment_name: environment.to_owned(),
            include_finished: false,
            tags,
        };
        let page: wire::SandboxListResponse = self.rpc.call(method, request).await.map_err(Refusal::into_error)?;
        let (sandboxes, next) = read_page(page)
            .map_err(|why| paging::failed(messages::hosted_malformed(LABEL, "gRPC", method.name, &why)))?;
        let sandboxes = unlabelled_as_empty(sandboxes, self.sweep_unlabelled);
        Ok(PageRead { sandboxes, next, request: method.name.to_owned() })
    }

    /// One sandbox by id: gone (`None`) when Modal does not know it or it finished.
    async fn look_up(&self, id: &str) -> Result<Option<ListedSandbox>, ProviderError> {
        let wait = wire::WAIT.of(id);
        let request = wire::SandboxWaitRequest { sandbox_id: id.to_owned(), timeout: 0.0 };
        let waited: wire::SandboxWaitResponse = match self.rpc.call(wait, request).await {
            Ok(waited) => waited,
            Err(Refusal::NotFound(_)) => return Ok(None),
            Err(refusal) => return Err(refusal.into_error()),
        };
        if wire::finished(waited.result.as_ref()) {
            return Ok(None);
        }
        let tags_get = wire::TAGS_GET.of(id);
        let request = wire::SandboxTagsGetRequest { sandbox_id: id.to_owned() };
        let tags: wire::SandboxTagsGetResponse = match self.rpc.call(tags_get, request).await {
            Ok(tags) => tags,
            Err(Refusal::NotFound(_)) => return Ok(None),
            Err(refusal) => return Err(refusal.into_error()),
        };
        let (owner, key) = owner_and_key(&tag_map(tags.tags));
        let created_at = wire::v2_created_at_millis(id);
        Ok(Some(ListedSandbox { id: id.to_owned(), created_at, owner, key, deleting: false }))
    }
}

impl ModalProvider {
    /// Fills in the creation time of what `found` has none for (live V1
    /// sandboxes: Modal's gets answer no time, and only a V2 id is a ULID)
    /// from one untagged listing of the app or environment. Rare (V1 is what
    /// clients before 1.6 created), bounded by the listing ceilings; one it
    /// does not show keeps `None`, so the sweep still fails closed on it.
    async fn creation_times(&self, found: &mut [ListedSandbox]) -> Result<(), ProviderError> {
        let Some((app_id, environment)) = &self.scope else { return Ok(()) };
        let listed = paging::every_page(LABEL, self.listing_ceilings, |cursor| {
            self.list_page(app_id, environment, true, cursor)
        })
        .await?;
        let times: std::collections::HashMap<&str, u64> =
            listed.iter().filter_map(|sandbox| Some((sandbox.id.as_str(), sandbox.created_at?))).collect();
        for sandbox in found.iter_mut().filter(|sandbox| sandbox.created_at.is_none()) {
            sandbox.created_at = times.get(sandbox.id.as_str()).copied();
        }
        Ok(())
    }
}

/// Of a comma-separated list of servers (the client fails over along it), the first.
fn first_url(urls: &str) -> &str {
    urls.split(',').map(str::trim).find(|url| !url.is_empty()).unwrap_or(urls)
}

fn tag_map(tags: Vec<SandboxTag>) -> std::collections::BTreeMap<String, String> {
    tags.into_iter().map(|tag| (tag.tag_name, tag.tag_value)).collect()
}

/// A page's live sandboxes and the next cursor: the last sandbox's
/// `created_at` (finished ones count for the cursor), `None` on an empty
/// page. A sandbox without an id we can act on, or without a creation
/// time, fails the page (the listing fails closed).
fn read_page(page: wire::SandboxListResponse) -> Result<(Vec<ListedSandbox>, Option<String>), String> {
    let next = page.sandboxes.last().map(|last| last.created_at.to_string());
    let mut listed = Vec::new();
    for sandbox in page.sandboxes {
        if let Some(live) = read_sandbox(sandbox)? {
            listed.push(live);
        }
    }
    Ok((listed, next))
}

fn read_sandbox(sandbox: SandboxInfo) -> Result<Option<ListedSandbox>, String> {
    if validate_id(&sandbox.id).is_err() {
        return Err(format!("a sandbox with id {:?}", sandbox.id));
    }
    if !(sandbox.created_at.is_finite() && sandbox.created_at > 0.0) {
        return Err(format!("sandbox {:?} has no creation time", sandbox.id));
    }
    if wire::finished(sandbox.task_info.as_ref().and_then(|task| task.result.as_ref())) {
        return Ok(None);
    }
    let (owner, key) = owner_and_key(&tag_map(sandbox.tags));
    let created_at = Some((sandbox.created_at * 1000.0) as u64);
    Ok(Some(ListedSandbox { id: sandbox.id, created_at, owner, key, deleting: false }))
}

#[async_trait]
impl HostedSandboxProvider for ModalProvider {
    fn api_url(&self) -> &str {
        &self.api_url
    }

    /// `AuthTokenGet`: refused (naming `MODAL_TOKEN_ID` and
    /// `MODAL_TOKEN_SECRET`) when Modal refuses the token.
    async fn check_access(&self) -> Result<(), ProviderError> {
        self.rpc.fetch_auth_token().await.map(drop)
    }
}

#[async_trait]
impl SandboxProvider for ModalProvider {
    fn name(&self) -> &str {
        &self.name
    }

    /// `SandboxTerminate[V2]`: ended, already finished, or gone (`NOT_FOUND`).
    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError> {
        validate_id(provider_sandbox_id)?;
        let method = wire::TERMINATE.of(provider_sandbox_id);
        let request = wire::SandboxTerminateRequest { sandbox_id: provider_sandbox_id.to_owned() };
        match self.rpc.call::<_, wire::SandboxTerminateResponse>(method, request).await {
            Ok(_) | Err(Refusal::NotFound(_)) => Ok(()),
            Err(refusal) => Err(refusal.into_error()),
        }
    }

    fn can_list(&self) -> bool {
        true
    }

    /// Every page of the app's (or environment's) live sandboxes under our
    /// owner tag (every one with `sweep_unlabelled`), each once.
    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        let Some((app_id, environment)) = &self.scope else {
            return Err(paging::failed(messages::MODAL_NO_LISTING_SCOPE.to_owned()));
        };
        paging::every_page(LABEL, self.listing_ceilings, |cursor| self.list_page(app_id, environment, false, cursor))
            .await
    }

    fn owner(&self) -> Option<&str> {
        Some(&self.owner)
    }

    /// Looks up what the registry names, unless the listing already takes
    /// every sandbox (`sweep_unlabelled`).
    fn can_lookup(&self) -> bool {
        !self.sweep_unlabelled
    }

    /// Each id by `SandboxWait` and `SandboxTagsGet`, a few at once; the
    /// creation time of a live V1 sandbox (its id carries none) from one
    /// listing of the app, untagged.
    async fn lookup_sandboxes(&self, ids: &[String]) -> Result<Vec<ListedSandbox>, ProviderError> {
        let mut found = look_up_each(ids, |id| self.look_up(id)).await?;
        if found.iter().any(|sandbox| sandbox.created_at.is_none()) {
            self.creation_times(&mut found).await?;
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::hosted::HostedError;

    fn info(id: &str, created_at: f64, status: i32, owner: Option<&str>) -> SandboxInfo {
        let tags = owner
            .map(|owner| SandboxTag { tag_name: LABEL_OWNER.into(), tag_value: owner.into() })
            .into_iter()
            .collect();
        let result = Some(wire::GenericResult { status });
        SandboxInfo { id: id.into(), created_at, task_info: Some(wire::TaskInfo { result }), tags }
    }

    #[test]
    fn finished_sandboxes_are_gone_but_still_move_the_cursor() {
        let page = wire::SandboxListResponse {
            sandboxes: vec![info("sb-a", 20.5, 0, Some("o")), info("sb-b", 10.25, 3, Some("o"))],
        };
        let (listed, next) = read_page(page).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            (listed[0].id.as_str(), listed[0].created_at, listed[0].owner.as_deref()),
            ("sb-a", Some(20_500), Some("o"))
        );
        assert_eq!(next.as_deref(), Some("10.25"));
        assert_eq!(read_page(wire::SandboxListResponse::default()).unwrap(), (Vec::new(), None));
    }

    #[test]
    fn a_sandbox_without_an_id_or_a_creation_time_fails_the_page() {
        for bad in [info("", 1.0, 0, None), info("sb-a", 0.0, 0, None), info("sb-a", f64::NAN, 0, None)] {
            let page = wire::SandboxListResponse { sandboxes: vec![bad] };
            assert!(read_page(page).is_err());
        }
    }

    #[test]
    fn the_token_is_needed_and_never_printed() {
        let config = ModalConfig {
            token_id: Some("ak-secret-id".into()),
            token_secret: Some("as-secret".into()),
            api_url: Some("http://127.0.0.1:9".into()),
            ..ModalConfig::default()
        };
        let provider = ModalProvider::new(config.clone()).unwrap();
        for text in [format!("{config:?}"), format!("{provider:?}")] {
            assert!(!text.contains("ak-secret-id") && !text.contains("as-secret"), "{text}");
        }
        let no_secret = ModalConfig { token_secret: Some(String::new()), ..config.clone() };
        let error = ModalProvider::new(no_secret).unwrap_err();
        let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
        assert_eq!(inner.downcast_ref::<InvalidInput>().map(|invalid| invalid.field), Some("tokenSecret"));
        assert!(error.to_string().contains("MODAL_TOKEN_SECRET"), "{error}");
        let bad_url = ModalConfig { api_url: Some("ftp://x".into()), ..config };
        let error = ModalProvider::new(bad_url).unwrap_err();
        let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
        assert_eq!(inner.downcast_ref::<InvalidInput>().map(|invalid| invalid.field), Some("apiUrl"));
    }

    #[tokio::test]
    async fn without_an_app_or_an_environment_the_listing_fails_saying_why() {
        let config = ModalConfig {
            token_id: Some("ak-1".into()),
            token_secret: Some("as-1".into()),
            api_url: Some("https://api.modal.com,https://api.modal2.com".into()),
            environment: Some(String::new()),
            ..ModalConfig::default()
        };
        let provider = ModalProvider::new(config.clone()).unwrap();
        assert_eq!(provider.api_url(), "https://api.modal.com");
        // rustls (ring) on a refused port: a transport failure, not a panic.
        let refused = ModalConfig { api_url: Some("https://127.0.0.1:1".into()), ..config };
        let error = ModalProvider::new(refused).unwrap().check_access().await.unwrap_err().to_string();
        assert!(error.contains("AuthTokenGet") && !error.contains("as-1"), "{error}");
        let error = provider.list_sandboxes().await.unwrap_err();
        let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
        assert!(matches!(inner.downcast_ref::<HostedError>(), Some(HostedError::Failed(_))), "{error:?}");
        assert!(error.to_string().contains("appId") && error.to_string().contains("deprecates"), "{error}");
    }
}
