//! The provider itself (see the module's doc).

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use kube::api::{DeleteParams, DynamicObject, GetParams, ListParams};
use kube::core::Request;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::OnceCell;

pub use super::object::{sandbox_id, Kind, Namespaces};
use super::source::Source;
use super::{object, source};
use crate::contract::errors::ProviderError;
use crate::contract::SandboxProvider;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::{HostedSettings, ListingCeilings};
use crate::providers::hosted::client::unlabelled_as_empty;
use crate::providers::hosted::look_up_each;
use crate::providers::hosted::paging::{self, failed, shortened, HostedError, PageRead, MAX_RATE_LIMITED_RETRIES};
use crate::providers::{validate_provider_name, HostedSandboxProvider, InvalidInput, LABEL_OWNER};
use crate::report::messages;

const LABEL: &str = "Kubernetes";

/// How a [`KubernetesProvider`] reaches the cluster. Its `Default` is the
/// vendor's defaults (its row, [`super::SPEC`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubernetesConfig {
    /// The name instance records carry in `provider`. Default `kubernetes`.
    pub name: String,
    /// The owner: the label value the listing selects by.
    pub owner: String,
    /// The kubeconfig file; `None`: `KUBECONFIG`, else `~/.kube/config`, else in-cluster.
    pub kubeconfig: Option<String>,
    /// The kubeconfig context; `None`: its current context.
    pub context: Option<String>,
    /// The namespace listed (`*`: every namespace); `None`: the context's
    /// (in a cluster, the service account's).
    pub namespace: Option<String>,
    /// The kind swept: `SandboxClaim` (default), `Sandbox` or `Pod`.
    pub kind: Option<String>,
    /// The API server, in place of the kubeconfig's.
    pub api_url: Option<String>,
    /// Objects per listing page, 1 to 500. Default 100.
    pub page_size: u32,
    /// List every object of the kind, not only those under our owner label,
    /// so the sweep also finds unlabelled ones the store's registry names.
    pub sweep_unlabelled: bool,
    /// How long one request may take. Default 30 s.
    pub request_timeout: Duration,
    /// How far one listing goes before it fails closed.
    pub listing_ceilings: ListingCeilings,
}

impl Default for KubernetesConfig {
    fn default() -> Self {
        Self::from(HostedSettings::defaults(&super::SPEC))
    }
}

impl From<HostedSettings> for KubernetesConfig {
    fn from(settings: HostedSettings) -> Self {
        let kubeconfig = settings.option(super::KUBECONFIG).map(str::to_owned);
        let context = settings.option(super::CONTEXT).map(str::to_owned);
        let namespace = settings.option(super::NAMESPACE).map(str::to_owned);
        let kind = settings.option(super::KIND).map(str::to_owned);
        Self {
            name: settings.name,
            owner: settings.owner,
            kubeconfig,
            context,
            namespace,
            kind,
            api_url: settings.api_url,
            page_size: settings.page_size,
            sweep_unlabelled: settings.sweep_unlabelled,
            request_timeout: settings.request_timeout,
            listing_ceilings: settings.listing_ceilings,
        }
    }
}

/// Kubernetes objects as sandboxes: delete with foreground propagation,
/// list by our owner label.
pub struct KubernetesProvider {
    name: String,
    owner: String,
    kind: Kind,
    namespaces: Namespaces,
    page_size: u32,
    sweep_unlabelled: bool,
    listing_ceilings: ListingCeilings,
    request_timeout: Duration,
    server: String,
    source: Source,
    api_url: Option<String>,
    client: OnceCell<Client>,
}

impl fmt::Debug for KubernetesProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubernetesProvider")
            .field("name", &self.name)
            .field("server", &self.server)
            .field("kind", &self.kind)
            .field("namespaces", &self.namespaces)
            .finish()
    }
}

/// A request's failure before it is classified: kube's error, no answer in
/// time, or no client (the credentials did not load).
enum Refused {
    Kube(kube::Error),
    TimedOut,
    Config(ProviderError),
}

impl KubernetesProvider {
    /// Checks the config and finds the credentials (no request; see
    /// [`HostedSandboxProvider::check_access`]).
    pub fn new(config: KubernetesConfig) -> Result<Self, ProviderError> {
        validate_provider_name(&config.name)?;
        object::check_owner(&config.owner)?;
        if !(1..=super::SPEC.max_page_size).contains(&config.page_size) {
            let largest = super::SPEC.max_page_size;
            return Err(InvalidInput::new("pageSize", messages::hosted_page_size(largest, config.page_size)).into());
        }
        let kind = Kind::parse(config.kind.as_deref())?;
        let namespaces = Namespaces::parse(config.namespace.as_deref())?;
        if let Some(url) = &config.api_url {
            let usable = url.parse::<http::Uri>().is_ok_and(|uri| {
                matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some_and(|host| !host.is_empty())
            });
            if !usable {
                return Err(InvalidInput::new("apiUrl", messages::hosted_bad_url(LABEL, url)).into());
            }
        }
        let resolved = source::resolve(config.kubeconfig.as_deref(), config.context.as_deref())?;
        Ok(Self {
            name: config.name,
            owner: config.owner,
            kind,
            namespaces: namespaces.unwrap_or(Namespaces::One(resolved.namespace)),
            page_size: config.page_size,
            sweep_unlabelled: config.sweep_unlabelled,
            listing_ceilings: config.listing_ceilings,
            request_timeout: config.request_timeout,
            server: config.api_url.clone().unwrap_or(resolved.server),
            source: resolved.source,
            api_url: config.api_url,
            client: OnceCell::new(),
        })
    }

    /// The kind swept.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The client, made on first use (inside the runtime).
    async fn client(&self) -> Result<Client, ProviderError> {
        let client = self
            .client
            .get_or_try_init(|| source::connect(&self.source, self.api_url.as_deref(), self.request_timeout))
            .await
            .map_err(|why| {
                ProviderError::backend(HostedError::Unauthorized(messages::kubernetes_bad_config("credentials", &why)))
            })?;
        Ok(client.clone())
    }

    /// Sends the request `build` makes on the kind's path in `namespace`
    /// (`None`: every namespace) and parses its answer as `T`: only what a
    /// sweep reads ([`object::Object`]), never kube's `DynamicObject`.
    async fn send<T, B>(&self, namespace: Option<&str>, build: B) -> Result<T, Refused>
    where
        T: DeserializeOwned,
        B: Fn(&Request) -> Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    {
        let client = self.client().await.map_err(Refused::Config)?;
        let request = Request::new(DynamicObject::url_path(&self.kind.resource(), namespace));
        let text = self
            .call(|| {
                let (client, built) = (client.clone(), build(&request));
                async move { client.request_text(built.map_err(kube::Error::BuildRequest)?).await }
            })
            .await?;
        serde_json::from_str(&text).map_err(|error| Refused::Kube(kube::Error::SerdeError(error)))
    }

    /// The listing's namespace, or `None` for every namespace.
    fn listed_namespace(&self) -> Option<&str> {
        match &self.namespaces {
            Namespaces::One(namespace) => Some(namespace),
            Namespaces::All => None,
        }
    }

    /// A request for messages (`GET /apis/…/namespaces/agents/sandboxclaims`).
    fn path(&self, namespace: Option<&str>, name: Option<&str>) -> String {
        let resource = self.kind.resource();
        let base = match resource.group.is_empty() {
            true => format!("/api/{}", resource.version),
            false => format!("/apis/{}/{}", resource.group, resource.version),
        };
        let scoped = namespace.map(|namespace| format!("/namespaces/{namespace}")).unwrap_or_default();
        let named = name.map(|name| format!("/{name}")).unwrap_or_default();
        format!("{base}{scoped}/{}{named}", resource.plural)
    }

    /// Sends one request (`send` makes it), cut at the request timeout,
    /// waiting out `429`s as the server asks (bounded).
    async fn call<T, F, Fut>(&self, mut send: F) -> Result<T, Refused>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, kube::Error>>,
    {
        let mut throttled = 0;
        loop {
            match tokio::time::timeout(self.request_timeout, send()).await {
                Err(_) => return Err(Refused::TimedOut),
                Ok(Ok(answer)) => return Ok(answer),
                Ok(Err(kube::Error::Api(status))) if status.code == 429 && throttled < MAX_RATE_LIMITED_RETRIES => {
                    let hint = status.details.as_ref().map(|details| f64::from(details.retry_after_seconds));
                    let Some(wait) = paging::throttle_wait(hint.filter(|seconds| *seconds > 0.0)) else {
                        return Err(Refused::Kube(kube::Error::Api(status)));
                    };
                    throttled += 1;
                    tokio::time::sleep(wait).await;
                }
                Ok(Err(error)) => return Err(Refused::Kube(error)),
            }
        }
    }

    /// A failed request as the error hosts see: refused credentials apart
    /// (the command stops), never a credential in the text.
    fn refused(&self, method: &str, path: &str, refused: Refused) -> ProviderError {
        match refused {
            Refused::Config(error) => error,
            Refused::TimedOut => {
                let cause = format!("no answer within {:?}", self.request_timeout);
                failed(messages::hosted_transport(LABEL, method, path, &cause))
            }
            Refused::Kube(kube::Error::Api(status)) if matches!(status.code, 401 | 403) => ProviderError::backend(
                HostedError::Unauthorized(messages::kubernetes_unauthorized(status.code, &shortened(&status.message))),
            ),
            Refused::Kube(kube::Error::Api(status)) => {
                let detail = shortened(format!("{} {}", status.reason, status.message).trim());
                failed(messages::hosted_status(LABEL, method, path, status.code, &detail))
            }
            Refused::Kube(kube::Error::Auth(error)) => ProviderError::backend(HostedError::Unauthorized(
                messages::kubernetes_bad_config("credentials", &shortened(&error.to_string())),
            )),
            Refused::Kube(kube::Error::SerdeError(error)) => {
                failed(messages::hosted_malformed(LABEL, method, path, &shortened(&error.to_string())))
            }
            Refused::Kube(other) => {
                failed(messages::hosted_transport(LABEL, method, path, &shortened(&other.to_string())))
            }
        }
    }

    /// One listing page after `cursor`; `expired` is set when the server
    /// answers `410` to a continued request.
    async fn list_page(&self, cursor: Option<String>, expired: &AtomicBool) -> Result<PageRead, ProviderError> {
        let namespace = self.listed_namespace();
        let mut params = ListParams::default().limit(self.page_size);
        if !self.sweep_unlabelled {
            params = params.labels(&format!("{LABEL_OWNER}={}", self.owner));
        }
        let continued = cursor.is_some();
        if let Some(cursor) = &cursor {
            params = params.continue_token(cursor);
        }
        let path = self.path(namespace, None);
        let list: object::Page = match self.send(namespace, |request| request.list(&params)).await {
            Ok(list) => list,
            Err(Refused::Kube(kube::Error::Api(status))) if status.code == 410 && continued => {
                expired.store(true, Ordering::SeqCst);
                return Err(failed(messages::KUBERNETES_LISTING_EXPIRED.to_owned()));
            }
            Err(refused) => return Err(self.refused("GET", &path, refused)),
        };
        let sandboxes = list
            .items
            .iter()
            .map(|item| object::listed(item, namespace))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|why| failed(messages::hosted_malformed(LABEL, "GET", &path, &why)))?;
        Ok(PageRead { sandboxes, next: list.metadata.continue_, request: format!("GET {path}") })
    }

    /// One object by id: as listed, or `None` when it is gone (`404`).
    async fn look_up(&self, id: &str) -> Result<Option<ListedSandbox>, ProviderError> {
        let (namespace, name) = object::split_id(id)?;
        let path = self.path(Some(namespace), Some(name));
        let found = self.send::<object::Object, _>(Some(namespace), |request| request.get(name, &GetParams::default()));
        match found.await {
            Err(Refused::Kube(kube::Error::Api(status))) if status.code == 404 => Ok(None),
            Ok(found) => object::listed(&found, Some(namespace))
                .map(|listed| Some(ListedSandbox { id: id.to_owned(), ..listed }))
                .map_err(|why| failed(messages::hosted_malformed(LABEL, "GET", &path, &why))),
            Err(refused) => Err(self.refused("GET", &path, refused)),
        }
    }
}

#[async_trait]
impl HostedSandboxProvider for KubernetesProvider {
    fn api_url(&self) -> &str {
        &self.server
    }

    /// One listing of a single object: what a sweep needs (list on the kind).
    async fn check_access(&self) -> Result<(), ProviderError> {
        let namespace = self.listed_namespace();
        let params = ListParams::default().limit(1);
        match self.send::<object::Page, _>(namespace, |request| request.list(&params)).await {
            Ok(_) => Ok(()),
            Err(refused) => Err(self.refused("GET", &self.path(namespace, None), refused)),
        }
    }
}

#[async_trait]
impl SandboxProvider for KubernetesProvider {
    fn name(&self) -> &str {
        &self.name
    }

    /// A delete with foreground propagation: the object stays (deleting)
    /// until what it owns is gone. Deleted, deleting or already gone (`404`)
    /// is success.
    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError> {
        let (namespace, name) = object::split_id(provider_sandbox_id)?;
        let params = DeleteParams::foreground();
        // The answer (the object, or a Status) is not read beyond its code.
        match self.send::<serde::de::IgnoredAny, _>(Some(namespace), |request| request.delete(name, &params)).await {
            Ok(_) => Ok(()),
            Err(Refused::Kube(kube::Error::Api(status))) if status.code == 404 => Ok(()),
            Err(refused) => Err(self.refused("DELETE", &self.path(Some(namespace), Some(name)), refused)),
        }
    }

    fn can_list(&self) -> bool {
        true
    }

    /// Every page, each object once; an expired `continue` restarts the
    /// listing once, a second one fails it closed.
    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        let expired = AtomicBool::new(false);
        let mut restarted = false;
        loop {
            expired.store(false, Ordering::SeqCst);
            let listing =
                paging::every_page(LABEL, self.listing_ceilings, |cursor| self.list_page(cursor, &expired)).await;
            match listing {
                Err(_) if expired.load(Ordering::SeqCst) && !restarted => restarted = true,
                listing => return listing.map(|listed| unlabelled_as_empty(listed, self.sweep_unlabelled)),
            }
        }
    }

    fn owner(&self) -> Option<&str> {
        Some(&self.owner)
    }

    fn can_lookup(&self) -> bool {
        !self.sweep_unlabelled
    }

    /// Each id by a `GET`, a few at once; a `404` leaves it out; any other
    /// failure fails the lookup (the sweep fails closed).
    async fn lookup_sandboxes(&self, ids: &[String]) -> Result<Vec<ListedSandbox>, ProviderError> {
        let ours: Vec<String> = ids.iter().filter(|id| object::split_id(id).is_ok()).cloned().collect();
        look_up_each(&ours, |id| self.look_up(id)).await
    }
}
