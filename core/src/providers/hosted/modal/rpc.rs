//! Modal's gRPC client, on the shared [`grpc`] client: the token id and
//! secret on every call (`x-modal-token-id` / `x-modal-token-secret`, marked
//! sensitive), the `AuthTokenGet` token on V2 calls, and Modal's retry
//! policy as the wait a `RESOURCE_EXHAUSTED` takes.

use std::time::Duration;

use tonic::metadata::{AsciiMetadataValue, MetadataMap};

use super::auth;
use super::wire::{self, Method, AUTH_TOKEN_GET};
use crate::contract::errors::ProviderError;
use crate::providers::hosted::grpc::{self, GrpcClient, Refusal, Rules, TokenCache};
use crate::providers::hosted::paging;
use crate::providers::InvalidInput;
use crate::report::messages;

/// The vendor's name in messages.
pub(super) const LABEL: &str = "Modal";
/// `x-modal-client-type`: `CLIENT_TYPE_CLIENT`, what the official client sends.
const CLIENT_TYPE: &str = "1";
/// `x-modal-client-version`: the official client whose calls these are
/// (Modal's server checks it; our own version means nothing to it).
const CLIENT_VERSION: &str = "1.6.4";

const RULES: Rules = Rules {
    label: LABEL,
    unauthorized: messages::modal_unauthorized,
    retry_after_seconds: |status| wire::retry_after_seconds(status.details()),
};

/// One Modal server's client.
pub(super) struct Rpc {
    grpc: GrpcClient,
    /// What every call carries: the client's headers and the token pair.
    metadata: MetadataMap,
    auth: TokenCache,
}

impl Rpc {
    /// A client for `url` (checked: `http(s)://host`) with the token pair.
    pub fn new(url: &str, token_id: &str, token_secret: &str, request_timeout: Duration) -> Result<Self, InvalidInput> {
        let grpc = GrpcClient::new(RULES, url, request_timeout)?;
        let sensitive = |part: &str| {
            grpc::sensitive(part).ok_or_else(|| InvalidInput::new("tokenSecret", messages::MODAL_UNPRINTABLE_TOKEN))
        };
        let mut metadata = MetadataMap::new();
        metadata.insert("x-modal-client-type", AsciiMetadataValue::from_static(CLIENT_TYPE));
        metadata.insert("x-modal-client-version", AsciiMetadataValue::from_static(CLIENT_VERSION));
        metadata.insert("x-modal-token-id", sensitive(token_id)?);
        metadata.insert("x-modal-token-secret", sensitive(token_secret)?);
        Ok(Self { grpc, metadata, auth: TokenCache::default() })
    }

    /// `method` with `request`; a V2 method with the `AuthTokenGet` token.
    pub async fn call<Req, Resp>(&self, method: Method, request: Req) -> Result<Resp, Refusal>
    where
        Req: prost::Message + Clone + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        if !method.v2 {
            return self.grpc.unary(method.name, method.path, request, &self.metadata).await;
        }
        let mut metadata = self.metadata.clone();
        metadata.insert("x-modal-auth-token", self.auth_token().await?);
        self.grpc.unary(method.name, method.path, request, &metadata).await
    }

    /// `AuthTokenGet` (what `check_access` calls): the token pair's exchange.
    pub async fn fetch_auth_token(&self) -> Result<String, ProviderError> {
        let answer: wire::AuthTokenGetResponse = self
            .grpc
            .unary(AUTH_TOKEN_GET.name, AUTH_TOKEN_GET.path, wire::AuthTokenGetRequest {}, &self.metadata)
            .await
            .map_err(Refusal::into_error)?;
        match answer.token.is_empty() {
            true => Err(paging::failed(messages::MODAL_NO_AUTH_TOKEN.to_owned())),
            false => Ok(answer.token),
        }
    }

    async fn auth_token(&self) -> Result<AsciiMetadataValue, ProviderError> {
        let unprintable = || paging::failed(messages::hosted_malformed(LABEL, "gRPC", AUTH_TOKEN_GET.name, "token"));
        let fetch = async { self.fetch_auth_token().await.map(auth::issued) };
        self.auth.get(fetch, unprintable).await
    }
}
