//! The provider itself (see the module's doc).

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;

use super::auth::Credential;
use super::auth::LABEL;
use super::rpc::Rpc;
use super::wire;
use super::wire::{GetVmResponse, State};
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

/// boxd's gRPC front door (the official client's default).
pub const BOXD_PUBLIC_API_URL: &str = "https://boxd.sh:9443";

/// How a [`BoxdProvider`] reaches boxd. Its `Default` is the vendor's
/// defaults (its row, [`super::SPEC`]).
#[derive(Clone, PartialEq, Eq)]
pub struct BoxdConfig {
    /// The name instance records carry in `provider`. Default `boxd`.
    pub name: String,
    /// The owner namespace: the label the listing is filtered by.
    pub owner: String,
    /// The credential: a `bxd_` API key (exchanged for a token) or a token
    /// (sent as is); `None`: `BOXD_TOKEN`, else `BOXD_API_KEY`.
    pub api_key: Option<String>,
    /// The gRPC server; `None`: `BOXD_BASE_URL`, else `BOXD_API_URL`, else [`BOXD_PUBLIC_API_URL`].
    pub api_url: Option<String>,
    /// The org listed; `None`: `BOXD_ORG`; empty: the credential's personal machines.
    pub org: Option<String>,
    /// List every machine of the org, not only those labelled with our
    /// owner, so the sweep also finds unlabelled ones the store's registry
    /// names (TanStack's machines carry no label).
    pub sweep_unlabelled: bool,
    /// How long one call (and one key exchange) may take. Default 30 s.
    pub request_timeout: Duration,
    /// How far one listing goes before it fails closed.
    pub listing_ceilings: ListingCeilings,
}

impl Default for BoxdConfig {
    fn default() -> Self {
        Self::from(HostedSettings::defaults(&super::SPEC))
    }
}

impl From<HostedSettings> for BoxdConfig {
    fn from(settings: HostedSettings) -> Self {
        let org = settings.option(super::ORG).map(str::to_owned);
        Self {
            name: settings.name,
            owner: settings.owner,
            api_key: settings.api_key,
            api_url: settings.api_url,
            org,
            sweep_unlabelled: settings.sweep_unlabelled,
            request_timeout: settings.request_timeout,
            listing_ceilings: settings.listing_ceilings,
        }
    }
}

// By hand, so the credential never reaches a log line through `{:?}`.
impl fmt::Debug for BoxdConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoxdConfig")
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_url", &self.api_url)
            .field("org", &self.org)
            .field("sweep_unlabelled", &self.sweep_unlabelled)
            .field("request_timeout", &self.request_timeout)
            .field("listing_ceilings", &self.listing_ceilings)
            .finish()
    }
}

/// boxd machines: destroyed by id, listed by owner label within an org.
pub struct BoxdProvider {
    name: String,
    owner: String,
    sweep_unlabelled: bool,
    listing_ceilings: ListingCeilings,
    api_url: String,
    org: String,
    rpc: Rpc,
}

impl fmt::Debug for BoxdProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoxdProvider").field("name", &self.name).field("api_url", &self.api_url).finish()
    }
}

impl BoxdProvider {
    /// Checks the config and resolves the credential, server and org from
    /// the environment. Sends nothing (a key is exchanged on the first
    /// call); see [`HostedSandboxProvider::check_access`].
    pub fn new(config: BoxdConfig) -> Result<Self, ProviderError> {
        validate_provider_name(&config.name)?;
        validate_owner(&config.owner)?;
        let credential = Credential::resolve(config.api_key.as_deref(), variable)
            .ok_or_else(|| InvalidInput::new("apiKey", messages::boxd_missing_credential()))?;
        let configured =
            config.api_url.clone().or_else(|| variable("BOXD_BASE_URL")).or_else(|| variable("BOXD_API_URL"));
        let api_url = with_scheme(configured.as_deref().unwrap_or(BOXD_PUBLIC_API_URL));
        let org = config.org.clone().or_else(|| variable("BOXD_ORG")).unwrap_or_default();
        let rpc = Rpc::new(&api_url, credential, config.request_timeout)?;
        Ok(Self {
            name: config.name,
            owner: config.owner,
            sweep_unlabelled: config.sweep_unlabelled,
            listing_ceilings: config.listing_ceilings,
            api_url,
            org,
            rpc,
        })
    }

    /// `ListVms` within the org, under our owner label unless `every`.
    async fn list_vms(&self, every: bool) -> Result<Vec<GetVmResponse>, ProviderError> {
        let label_selector = match every {
            true => Vec::new(),
            false => vec![format!("{LABEL_OWNER}={}", self.owner)],
        };
        let request = wire::ListVmsRequest { org: self.org.clone(), all_contexts: false, label_selector };
        let answer: wire::ListVmsResponse =
            self.rpc.call(wire::LIST_VMS, request).await.map_err(Refusal::into_error)?;
        Ok(answer.vms)
    }

    /// The one listing answer, as a page that ends the listing.
    async fn list_page(&self) -> Result<PageRead, ProviderError> {
        let vms = self.list_vms(self.sweep_unlabelled).await?;
        let method = wire::LIST_VMS.name;
        let mut listed =
            read_listing(vms).map_err(|why| paging::failed(messages::hosted_malformed(LABEL, "gRPC", method, &why)))?;
        if !self.sweep_unlabelled {
            listed.retain(|machine| machine.owner.as_deref() == Some(self.owner.as_str()));
        }
        let sandboxes = unlabelled_as_empty(listed, self.sweep_unlabelled);
        Ok(PageRead { sandboxes, next: None, request: method.to_owned() })
    }

    /// One machine by id: gone (`None`) when boxd does not know it or it is `destroyed`.
    async fn look_up(&self, id: &str) -> Result<Option<ListedSandbox>, ProviderError> {
        let request = wire::GetVmRequest { vm_id: id.to_owned() };
        let vm: GetVmResponse = match self.rpc.call(wire::GET_VM, request).await {
            Ok(vm) => vm,
            Err(Refusal::NotFound(_)) => return Ok(None),
            Err(refusal) => return Err(refusal.into_error()),
        };
        let method = wire::GET_VM.name;
        let read =
            read_vm(vm).map_err(|why| paging::failed(messages::hosted_malformed(LABEL, "gRPC", method, &why)))?;
        Ok(read.map(|machine| ListedSandbox { id: id.to_owned(), ..machine }))
    }
}

/// `url` with a scheme: a bare `host:port` is TLS, except `localhost` and
/// `127.*` (the client's `resolve_endpoint`).
fn with_scheme(url: &str) -> String {
    let url = url.trim().trim_end_matches('/');
    if url.contains("://") {
        return url.to_owned();
    }
    match url.starts_with("localhost") || url.starts_with("127.") {
        true => format!("http://{url}"),
        false => format!("https://{url}"),
    }
}

/// The live machines of a listing; the first that does not read fails it.
fn read_listing(vms: Vec<GetVmResponse>) -> Result<Vec<ListedSandbox>, String> {
    let mut listed = Vec::with_capacity(vms.len());
    for vm in vms {
        listed.extend(read_vm(vm)?);
    }
    Ok(listed)
}

/// A machine as listed: `None` when it is `destroyed`. One without an id
/// we can act on, with a status boxd does not document, or (live) without
/// a creation time does not read.
fn read_vm(vm: GetVmResponse) -> Result<Option<ListedSandbox>, String> {
    if validate_id(&vm.vm_id).is_err() {
        return Err(format!("a machine with id {:?}", vm.vm_id));
    }
    let Some(state) = wire::state(&vm.status) else {
        return Err(format!("machine {:?} has status {:?}, which boxd does not document", vm.vm_id, vm.status));
    };
    if state == State::Gone {
        return Ok(None);
    }
    let created_at = u64::try_from(vm.created_at).ok().filter(|&seconds| seconds > 0).and_then(|s| s.checked_mul(1000));
    let Some(created_at) = created_at else {
        return Err(format!("machine {:?} has no creation time", vm.vm_id));
    };
    let (owner, key) = owner_and_key(&vm.labels.into_iter().collect());
    Ok(Some(ListedSandbox { id: vm.vm_id, created_at: Some(created_at), owner, key, deleting: false }))
}

#[async_trait]
impl HostedSandboxProvider for BoxdProvider {
    fn api_url(&self) -> &str {
        &self.api_url
    }

    /// The key's exchange (when it is a key) and `ListVms` of our labelled
    /// machines in the org: refused (naming `BOXD_TOKEN` and `BOXD_API_KEY`,
    /// and the org on `PERMISSION_DENIED`) when boxd refuses the credential
    /// or its access to the org.
    async fn check_access(&self) -> Result<(), ProviderError> {
        self.list_vms(false).await.map(drop)
    }
}

#[async_trait]
impl SandboxProvider for BoxdProvider {
    fn name(&self) -> &str {
        &self.name
    }

    /// `DestroyVm`: destroyed, or already gone (`NOT_FOUND`).
    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError> {
        validate_id(provider_sandbox_id)?;
        let request = wire::DestroyVmRequest { vm_id: provider_sandbox_id.to_owned() };
        match self.rpc.call::<_, wire::DestroyVmResponse>(wire::DESTROY_VM, request).await {
            Ok(_) | Err(Refusal::NotFound(_)) => Ok(()),
            Err(refusal) => Err(refusal.into_error()),
        }
    }

    fn can_list(&self) -> bool {
        true
    }

    /// The org's live machines under our owner label (every one with
    /// `sweep_unlabelled`), each once, within the listing ceilings.
    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        paging::every_page(LABEL, self.listing_ceilings, |_| self.list_page()).await
    }

    fn owner(&self) -> Option<&str> {
        Some(&self.owner)
    }

    /// Looks up what the registry names, unless the listing already takes
    /// every machine (`sweep_unlabelled`).
    fn can_lookup(&self) -> bool {
        !self.sweep_unlabelled
    }

    /// Each id by `GetVm`, a few at once.
    async fn lookup_sandboxes(&self, ids: &[String]) -> Result<Vec<ListedSandbox>, ProviderError> {
        look_up_each(ids, |id| self.look_up(id)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::hosted::HostedError;

    fn vm(id: &str, status: &str, created_at: i64, owner: Option<&str>) -> GetVmResponse {
        let labels = owner.map(|owner| (LABEL_OWNER.to_owned(), owner.to_owned())).into_iter().collect();
        GetVmResponse {
            vm_id: id.into(),
            name: "n".into(),
            status: status.into(),
            org: String::new(),
            billing_org: String::new(),
            created_at,
            labels,
        }
    }

    #[test]
    fn destroyed_machines_are_gone_and_stopped_ones_live() {
        let listed = read_listing(vec![
            vm("a", "running", 20, Some("o")),
            vm("b", "destroyed", 0, Some("o")),
            vm("c", "stopped", 10, None),
        ])
        .unwrap();
        let read: Vec<_> = listed.iter().map(|m| (m.id.as_str(), m.created_at, m.owner.as_deref())).collect();
        assert_eq!(read, [("a", Some(20_000), Some("o")), ("c", Some(10_000), None)]);
    }

    #[test]
    fn an_unknown_status_an_empty_id_or_no_creation_time_fails_the_listing() {
        for bad in [vm("", "running", 1, None), vm("a", "deleting", 1, None), vm("a", "running", 0, None)] {
            assert!(read_listing(vec![vm("ok", "running", 1, None), bad]).is_err());
        }
        assert!(read_vm(vm("a", "running", -5, None)).is_err());
    }

    #[test]
    fn bare_targets_get_the_clients_scheme() {
        assert_eq!(with_scheme("boxd.sh:9443"), "https://boxd.sh:9443");
        assert_eq!(with_scheme("localhost:9443/"), "http://localhost:9443");
        assert_eq!(with_scheme("127.0.0.1:1"), "http://127.0.0.1:1");
        assert_eq!(with_scheme("http://x:1"), "http://x:1");
    }

    #[test]
    fn the_credential_is_needed_and_never_printed() {
        let config = BoxdConfig {
            api_key: Some("bxd_secret_key".into()),
            api_url: Some("http://127.0.0.1:9".into()),
            ..BoxdConfig::default()
        };
        let provider = BoxdProvider::new(config.clone()).unwrap();
        assert_eq!(provider.rpc.auth().exchange_url(), Some("http://127.0.0.1:9/api/v1/auth/token"));
        for text in [format!("{config:?}"), format!("{provider:?}")] {
            assert!(!text.contains("bxd_secret_key"), "{text}");
        }
        let token = BoxdConfig { api_key: Some("a-session-token".into()), ..config.clone() };
        assert_eq!(BoxdProvider::new(token).unwrap().rpc.auth().exchange_url(), None, "a token is sent as is");
        let empty = BoxdConfig { api_key: Some(String::new()), ..config.clone() };
        let error = BoxdProvider::new(empty).unwrap_err();
        let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
        assert_eq!(inner.downcast_ref::<InvalidInput>().map(|invalid| invalid.field), Some("apiKey"));
        assert!(error.to_string().contains("BOXD_TOKEN") && error.to_string().contains("BOXD_API_KEY"), "{error}");
        let unsendable = BoxdConfig { api_key: Some("tok\nen".into()), ..config.clone() };
        assert!(BoxdProvider::new(unsendable).unwrap_err().to_string().contains("gRPC metadata"));
        let bad_url = BoxdConfig { api_url: Some("ftp://x".into()), ..config };
        let error = BoxdProvider::new(bad_url).unwrap_err();
        let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
        assert_eq!(inner.downcast_ref::<InvalidInput>().map(|invalid| invalid.field), Some("apiUrl"));
    }

    #[tokio::test]
    async fn a_refused_port_is_a_transport_failure_naming_the_call() {
        let config = BoxdConfig {
            api_key: Some("a-token".into()),
            api_url: Some("https://127.0.0.1:1".into()),
            request_timeout: Duration::from_secs(5),
            ..BoxdConfig::default()
        };
        let error = BoxdProvider::new(config).unwrap().destroy("vm-1").await.unwrap_err();
        let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
        assert!(matches!(inner.downcast_ref::<HostedError>(), Some(HostedError::Failed(_))), "{error:?}");
        assert!(error.to_string().contains("DestroyVm") && !error.to_string().contains("a-token"), "{error}");
    }

    #[test]
    fn refusals_name_both_variables_and_the_org_when_it_may_be_the_cause() {
        let denied = messages::boxd_unauthorized("PERMISSION_DENIED");
        assert!(denied.contains("BOXD_TOKEN") && denied.contains("BOXD_API_KEY") && denied.contains("BOXD_ORG"));
        assert!(!messages::boxd_unauthorized("UNAUTHENTICATED").contains("BOXD_ORG"));
        assert!(messages::boxd_key_refused(401).contains("BOXD_API_KEY"));
    }
}
