//! What the gRPC vendors (Modal, boxd) share, as [`super::client`] is the
//! HTTP vendors': one tonic channel (rustls for `https://`, plaintext HTTP/2
//! for `http://`), a deadline on each call, and the engine's rules for what
//! comes back: `RESOURCE_EXHAUSTED` waits (the vendor's hint, else a second;
//! [`paging::throttle_wait`]) a bounded number of times as a `429` does, a
//! refused credential (`UNAUTHENTICATED`, `PERMISSION_DENIED`) is
//! [`HostedError::Unauthorized`] naming what to set, `NOT_FOUND` is the
//! caller's to read, anything else fails the call with the vendor's text
//! shortened, never a credential. And [`TokenCache`]: a short-lived token a
//! credential is exchanged for, kept until it is due for a refresh.
//!
//! Cancellation is the caller's: a destroy's deadline drops the future,
//! and dropping a tonic call resets its stream.

use std::future::Future;
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, OnceCell};
use tonic::codec::ProstCodec;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::metadata::{AsciiMetadataValue, MetadataMap};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Status};

use super::paging::{self, MAX_RATE_LIMITED_RETRIES};
use super::HostedError;
use crate::contract::errors::ProviderError;
use crate::providers::InvalidInput;
use crate::report::messages;

/// What a vendor decides about its calls' answers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules {
    /// The vendor's name in messages (`Modal`).
    pub label: &'static str,
    /// The message of a refused credential, given the code's name
    /// (`UNAUTHENTICATED`): what to set, never the credential.
    pub unauthorized: fn(&str) -> String,
    /// The seconds a `RESOURCE_EXHAUSTED` asks to wait, if it says (else a second).
    pub retry_after_seconds: fn(&Status) -> Option<f64>,
}

/// One gRPC server's client.
pub(crate) struct GrpcClient {
    rules: Rules,
    endpoint: Endpoint,
    /// Made on first use: a channel needs the runtime it runs on.
    channel: OnceCell<Channel>,
    request_timeout: Duration,
    /// The largest answer decoded (tonic's default, 4 MiB, unless raised).
    max_answer_bytes: Option<usize>,
}

/// How a call ended when it did not answer.
pub(crate) enum Refusal {
    /// `NOT_FOUND`: what it names is gone. The error, for a caller that did not expect it.
    NotFound(ProviderError),
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
    pub fn into_error(self) -> ProviderError {
        match self {
            Self::NotFound(error) | Self::Failed(error) => error,
        }
    }
}

impl GrpcClient {
    /// A client for `url` (checked: `http(s)://host`); nothing is sent yet.
    pub fn new(rules: Rules, url: &str, request_timeout: Duration) -> Result<Self, InvalidInput> {
        let bad_url = || InvalidInput::new("apiUrl", messages::hosted_bad_url(rules.label, url));
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
        Ok(Self { rules, endpoint, channel: OnceCell::new(), request_timeout, max_answer_bytes: None })
    }

    /// Decodes answers up to `bytes` (a listing without paging can be large).
    #[cfg_attr(not(feature = "boxd"), allow(dead_code))]
    pub fn with_max_answer_bytes(mut self, bytes: usize) -> Self {
        self.max_answer_bytes = Some(bytes);
        self
    }

    async fn channel(&self) -> Channel {
        self.channel.get_or_init(|| async { self.endpoint.connect_lazy() }).await.clone()
    }

    /// `name` (the method's path `path`) with `request` and `metadata`,
    /// re-sent while the vendor throttles it (a bounded number of times).
    pub async fn unary<Req, Resp>(
        &self,
        name: &str,
        path: &'static str,
        request: Req,
        metadata: &MetadataMap,
    ) -> Result<Resp, Refusal>
    where
        Req: prost::Message + Clone + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let label = self.rules.label;
        let mut throttled = 0;
        loop {
            let mut grpc = tonic::client::Grpc::new(self.channel().await);
            if let Some(bytes) = self.max_answer_bytes {
                grpc = grpc.max_decoding_message_size(bytes);
            }
            let mut call = tonic::Request::new(request.clone());
            *call.metadata_mut() = metadata.clone();
            call.set_timeout(self.request_timeout);
            let answered = tokio::time::timeout(self.request_timeout, async {
                grpc.ready().await.map_err(|error| Status::unavailable(error.to_string()))?;
                let codec = ProstCodec::<Req, Resp>::default();
                grpc.unary(call, PathAndQuery::from_static(path), codec).await
            })
            .await;
            let status = match answered {
                Ok(Ok(answer)) => return Ok(answer.into_inner()),
                Ok(Err(status)) => status,
                Err(_) => {
                    return Err(paging::failed(messages::hosted_transport(label, "gRPC", name, "timed out")).into())
                }
            };
            let code = code_name(status.code());
            match status.code() {
                Code::NotFound => {
                    return Err(Refusal::NotFound(paging::failed(messages::hosted_grpc_status(label, name, code, ""))))
                }
                Code::Unauthenticated | Code::PermissionDenied => {
                    let message = (self.rules.unauthorized)(code);
                    return Err(ProviderError::backend(HostedError::Unauthorized(message)).into());
                }
                Code::ResourceExhausted if throttled < MAX_RATE_LIMITED_RETRIES => {
                    if let Some(wait) = paging::throttle_wait((self.rules.retry_after_seconds)(&status)) {
                        throttled += 1;
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                }
                _ => {}
            }
            let detail = paging::shortened(status.message());
            return Err(paging::failed(messages::hosted_grpc_status(label, name, code, &detail)).into());
        }
    }
}

/// A credential as gRPC metadata, marked sensitive (never printed by
/// tonic's or hyper's debug output); `None` when metadata cannot carry it.
pub(crate) fn sensitive(value: &str) -> Option<AsciiMetadataValue> {
    let mut value = AsciiMetadataValue::try_from(value).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// Whether `error` is a refused credential.
pub(crate) fn is_unauthorized(error: &ProviderError) -> bool {
    let ProviderError::Backend(inner) = error else { return false };
    matches!(inner.downcast_ref::<HostedError>(), Some(HostedError::Unauthorized(_)))
}

/// A status code as gRPC spells it (`NOT_FOUND`).
pub(crate) fn code_name(code: Code) -> &'static str {
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

/// A token a credential was exchanged for, as its issuer dates it.
pub(crate) struct Issued {
    pub token: String,
    /// From now, when to fetch a fresh one.
    pub refresh_after: Duration,
    /// From now, when it stops being valid.
    pub expires_after: Duration,
}

/// The token a credential is exchanged for, cached: the cached one while it
/// is fresh, else a fetched one; should a refresh fail (not by a refused
/// credential) while the cached token is still valid, the cached one. One
/// fetch at a time: callers that arrive meanwhile wait for it.
#[derive(Default)]
pub(crate) struct TokenCache {
    cached: Mutex<Option<Cached>>,
}

struct Cached {
    /// Marked sensitive: never printed by tonic's or hyper's debug output.
    value: AsciiMetadataValue,
    refresh_at: Instant,
    expires_at: Instant,
}

impl TokenCache {
    /// The token to send: the cached one while it is fresh, else what
    /// `fetch` issues (a token that cannot be sent is `unprintable`).
    pub async fn get(
        &self,
        fetch: impl Future<Output = Result<Issued, ProviderError>>,
        unprintable: impl FnOnce() -> ProviderError,
    ) -> Result<AsciiMetadataValue, ProviderError> {
        let mut cached = self.cached.lock().await;
        if let Some(token) = cached.as_ref().filter(|token| Instant::now() < token.refresh_at) {
            return Ok(token.value.clone());
        }
        match fetch.await {
            Ok(issued) => {
                let Some(value) = sensitive(&issued.token) else { return Err(unprintable()) };
                let now = Instant::now();
                let (refresh_at, expires_at) = (now + issued.refresh_after, now + issued.expires_after);
                *cached = Some(Cached { value: value.clone(), refresh_at, expires_at });
                Ok(value)
            }
            // A failed refresh falls back to a token that is still valid.
            Err(error) => match cached.as_ref().filter(|token| Instant::now() < token.expires_at) {
                Some(token) if !is_unauthorized(&error) => Ok(token.value.clone()),
                _ => Err(error),
            },
        }
    }

    /// Drops the cached token (the server refused it): the next call fetches one.
    #[cfg_attr(not(feature = "boxd"), allow(dead_code))]
    pub async fn forget(&self) {
        *self.cached.lock().await = None;
    }

    #[cfg(test)]
    async fn due(&self) {
        if let Some(token) = self.cached.lock().await.as_mut() {
            token.refresh_at = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issued(token: &str) -> Issued {
        Issued { token: token.into(), refresh_after: Duration::from_secs(300), expires_after: Duration::from_secs(600) }
    }

    #[tokio::test]
    async fn a_fresh_token_is_reused_and_a_failed_refresh_keeps_a_valid_one() {
        let cache = TokenCache::default();
        let unprintable = || ProviderError::backend(std::io::Error::other("unprintable"));
        let got = cache.get(async { Ok(issued("t-1")) }, unprintable).await.unwrap();
        assert_eq!(got.to_str().unwrap(), "t-1");
        assert!(format!("{got:?}").contains("Sensitive"), "{got:?}");
        let again = cache.get(async { panic!("a fresh token is not fetched again") }, unprintable).await.unwrap();
        assert_eq!(again, got);
        // Past its refresh time but valid: a failed refresh keeps it, a refused credential does not.
        cache.due().await;
        let failed = async { Err(ProviderError::backend(std::io::Error::other("down"))) };
        assert_eq!(cache.get(failed, unprintable).await.unwrap(), got);
        let refused = async { Err(ProviderError::backend(HostedError::Unauthorized("no".into()))) };
        assert!(cache.get(refused, unprintable).await.is_err());
        cache.forget().await;
        let fresh = cache.get(async { Ok(issued("t-2")) }, unprintable).await.unwrap();
        assert_eq!(fresh.to_str().unwrap(), "t-2");
        let unsendable = TokenCache::default().get(async { Ok(issued("t\n3")) }, unprintable).await;
        assert!(unsendable.is_err(), "metadata cannot carry it");
    }

    #[test]
    fn a_url_must_be_http_or_https_with_a_host() {
        let rules = Rules { label: "V", unauthorized: |code| code.to_owned(), retry_after_seconds: |_| None };
        for bad in ["ftp://x", "x", "http://", "https:///path"] {
            let error = GrpcClient::new(rules, bad, Duration::from_secs(1)).err().unwrap_or_else(|| panic!("{bad}"));
            assert_eq!(error.field, "apiUrl");
        }
        assert!(GrpcClient::new(rules, "http://127.0.0.1:1", Duration::from_secs(1)).is_ok());
    }
}
