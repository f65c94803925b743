//! Modal's gRPC client: one tonic channel (rustls for `https://`, plaintext
//! HTTP/2 for `http://`), the token id and secret on every call
//! (`x-modal-token-id` / `x-modal-token-secret`, marked sensitive), the
//! `AuthTokenGet` token on V2 calls, a deadline on each call, and the
//! engine's rules for what comes back: `RESOURCE_EXHAUSTED` waits (Modal's
//! retry policy, else a second; [`paging::throttle_wait`]) as a `429` does,
//! a refused token names the variables to set, anything else fails the call
//! with the vendor's text shortened, never a credential.
//!
//! Cancellation is the caller's: a destroy's deadline drops the future,
//! and dropping a tonic call resets its stream.

use std::time::Duration;

use tokio::sync::OnceCell;
use tonic::codec::ProstCodec;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::metadata::AsciiMetadataValue;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Status};

use super::auth::AuthToken;
use super::wire::{self, Method, AUTH_TOKEN_GET};
use crate::contract::errors::ProviderError;
use crate::providers::hosted::paging::{self, MAX_RATE_LIMITED_RETRIES};
use crate::providers::hosted::HostedError;
use crate::providers::InvalidInput;
use crate::report::messages;

/// The vendor's name in messages.
pub(super) const LABEL: &str = "Modal";
/// `x-modal-client-type`: `CLIENT_TYPE_CLIENT`, what the official client sends.
const CLIENT_TYPE: &str = "1";
/// `x-modal-client-version`: the official client whose calls these are
/// (Modal's server checks it; our own version means nothing to it).
const CLIENT_VERSION: &str = "1.6.4";

/// One Modal server's client.
pub(super) struct Rpc {
    endpoint: Endpoint,
    /// Made on first use: a channel needs the runtime it runs on.
    channel: OnceCell<Channel>,
    token_id: AsciiMetadataValue,
    token_secret: AsciiMetadataValue,
    auth: AuthToken,
    request_timeout: Duration,
}

/// How a call ended when it did not answer.
pub(super) enum Refusal {
    /// `NOT_FOUND`: what it names is gone.
    NotFound,
    /// Anything else, as the error the provider answers.
    Failed(ProviderError),
}

impl From<ProviderError> for Refusal {
    fn from(error: ProviderError) -> Self {
        Self::Failed(error)
    }
}

impl Refusal {
    /// The error, with `NOT_FOUND` an error too (what the caller did not expect).
    pub fn into_error(self, method: Method) -> ProviderError {
        match self {
            Self::NotFound => paging::failed(messages::hosted_grpc_status(LABEL, method.name, "NOT_FOUND", "")),
            Self::Failed(error) => error,
        }
    }
}

impl Rpc {
    /// A client for `url` (checked: `http(s)://host`) with the token pair.
    pub fn new(url: &str, token_id: &str, token_secret: &str, request_timeout: Duration) -> Result<Self, InvalidInput> {
        let bad_url = || InvalidInput::new("apiUrl", messages::hosted_bad_url(LABEL, url));
        let uri: tonic::codegen::http::Uri = url.parse().map_err(|_| bad_url())?;
        let tls = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(bad_url()),
        };
        if uri.host().is_none_or(str::is_empty) {
            return Err(bad_url());
        }
        let mut endpoint = Endpoint::from_shared(url.to_owned())
            .map_err(|_| bad_url())?
            .user_agent(concat!("sandbox-reclaim/", env!("CARGO_PKG_VERSION")))
            .map_err(|_| bad_url())?
            .connect_timeout(request_timeout.min(Duration::from_secs(10)));
        if tls {
            endpoint = endpoint.tls_config(ClientTlsConfig::new().with_webpki_roots()).map_err(|_| bad_url())?;
        }
        let sensitive = |part: &str| {
            let mut value = AsciiMetadataValue::try_from(part)
                .map_err(|_| InvalidInput::new("tokenSecret", messages::MODAL_UNPRINTABLE_TOKEN))?;
            value.set_sensitive(true);
            Ok::<_, InvalidInput>(value)
        };
        Ok(Self {
            endpoint,
            channel: OnceCell::new(),
            token_id: sensitive(token_id)?,
            token_secret: sensitive(token_secret)?,
            auth: AuthToken::default(),
            request_timeout,
        })
    }

    /// `method` with `request`; a V2 method with the `AuthTokenGet` token.
    pub async fn call<Req, Resp>(&self, method: Method, request: Req) -> Result<Resp, Refusal>
    where
        Req: prost::Message + Clone + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let auth_token = match method.v2 {
            true => Some(self.auth_token().await?),
            false => None,
        };
        self.send(method, request, auth_token).await
    }

    /// `AuthTokenGet` (what `check_access` calls): the token pair's exchange.
    pub async fn fetch_auth_token(&self) -> Result<String, ProviderError> {
        let answer: wire::AuthTokenGetResponse = self
            .send(AUTH_TOKEN_GET, wire::AuthTokenGetRequest {}, None)
            .await
            .map_err(|refusal| refusal.into_error(AUTH_TOKEN_GET))?;
        match answer.token.is_empty() {
            true => Err(paging::failed(messages::MODAL_NO_AUTH_TOKEN.to_owned())),
            false => Ok(answer.token),
        }
    }

    async fn auth_token(&self) -> Result<AsciiMetadataValue, ProviderError> {
        let unprintable = || paging::failed(messages::hosted_malformed(LABEL, "gRPC", AUTH_TOKEN_GET.name, "token"));
        self.auth.get(self.fetch_auth_token(), unprintable).await
    }

    async fn channel(&self) -> Channel {
        self.channel.get_or_init(|| async { self.endpoint.connect_lazy() }).await.clone()
    }

    /// One call, re-sent while Modal throttles it (a bounded number of times).
    async fn send<Req, Resp>(
        &self,
        method: Method,
        request: Req,
        auth_token: Option<AsciiMetadataValue>,
    ) -> Result<Resp, Refusal>
    where
        Req: prost::Message + Clone + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let mut throttled = 0;
        loop {
            let mut grpc = tonic::client::Grpc::new(self.channel().await);
            let mut call = tonic::Request::new(request.clone());
            call.set_timeout(self.request_timeout);
            let metadata = call.metadata_mut();
            metadata.insert("x-modal-client-type", AsciiMetadataValue::from_static(CLIENT_TYPE));
            metadata.insert("x-modal-client-version", AsciiMetadataValue::from_static(CLIENT_VERSION));
            metadata.insert("x-modal-token-id", self.token_id.clone());
            metadata.insert("x-modal-token-secret", self.token_secret.clone());
            if let Some(token) = &auth_token {
                metadata.insert("x-modal-auth-token", token.clone());
            }
            let answered = tokio::time::timeout(self.request_timeout, async {
                grpc.ready().await.map_err(|error| Status::unavailable(error.to_string()))?;
                let codec = ProstCodec::<Req, Resp>::default();
                grpc.unary(call, PathAndQuery::from_static(method.path), codec).await
            })
            .await;
            let status = match answered {
                Ok(Ok(answer)) => return Ok(answer.into_inner()),
                Ok(Err(status)) => status,
                Err(_) => return Err(self.transport(method, "timed out").into()),
            };
            match status.code() {
                Code::NotFound => return Err(Refusal::NotFound),
                Code::Unauthenticated | Code::PermissionDenied => {
                    let message = messages::modal_unauthorized(code_name(status.code()));
                    return Err(ProviderError::backend(HostedError::Unauthorized(message)).into());
                }
                Code::ResourceExhausted if throttled < MAX_RATE_LIMITED_RETRIES => {
                    if let Some(wait) = paging::throttle_wait(wire::retry_after_seconds(status.details())) {
                        throttled += 1;
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                }
                _ => {}
            }
            let detail = paging::shortened(status.message());
            return Err(paging::failed(messages::hosted_grpc_status(
                LABEL,
                method.name,
                code_name(status.code()),
                &detail,
            ))
            .into());
        }
    }

    fn transport(&self, method: Method, cause: &str) -> ProviderError {
        paging::failed(messages::hosted_transport(LABEL, "gRPC", method.name, cause))
    }
}

/// A status code as gRPC spells it (`NOT_FOUND`).
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}
