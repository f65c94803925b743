//! The bearer every boxd call carries (`authorization: Bearer <token>`), as
//! the official client resolves it (`boxd/_credentials.py`): a token is
//! sent as is; a `bxd_` API key never is, but is exchanged for one by
//! HTTP/1.1 `POST {console}/api/v1/auth/token` `{"api_key": ...}`, which
//! answers `{"token", "expires_at"}` (epoch seconds; a token lives an hour).
//! The exchanged token is kept ([`TokenCache`]) and exchanged again 300 s
//! before it expires (half its lifetime when it lives less than ten
//! minutes), or at once after boxd refuses it. A throttled exchange (`429`)
//! waits its `Retry-After` ([`paging::throttle_wait`]) a bounded number of
//! times; a refused key (`401`/`403`) names the variables to set.
//!
//! `{console}` is the base URL's web console, as the client maps it
//! (`_urls.console_base_url`): `https://app.<host>`, the port dropped,
//! except that `localhost`, a raw IP and a host already `app.` are kept
//! with their scheme and port.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use reqwest::StatusCode;
use tonic::codegen::http::Uri;
use tonic::metadata::AsciiMetadataValue;

use crate::contract::errors::ProviderError;
use crate::providers::hosted::grpc::{self, Issued, TokenCache};
use crate::providers::hosted::paging::{self, MAX_RATE_LIMITED_RETRIES};
use crate::providers::hosted::HostedError;
use crate::providers::InvalidInput;
use crate::report::messages;

/// The vendor's name in messages.
pub(super) const LABEL: &str = "boxd";
/// The exchange's path on the console.
pub(super) const EXCHANGE_PATH: &str = "/api/v1/auth/token";
/// What an API key starts with (an `apiKey` that does not is a token).
const API_KEY_PREFIX: &str = "bxd_";
/// How long before its expiry an exchanged token is exchanged again (the client's skew).
const REFRESH_SKEW: Duration = Duration::from_secs(300);

/// Where the credential came from, and so how it is sent.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum Credential {
    /// `BOXD_TOKEN`, or an `apiKey` not starting `bxd_`: sent as is.
    Token(String),
    /// `BOXD_API_KEY`, or an `apiKey` starting `bxd_`: exchanged.
    ApiKey(String),
}

impl Credential {
    /// The `apiKey` option, else `BOXD_TOKEN`, else `BOXD_API_KEY` (the
    /// client's order); `None` when none is set. An option given empty is
    /// given: the variables are not read.
    pub fn resolve(option: Option<&str>, variable: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let credential = match option {
            Some(given) if given.starts_with(API_KEY_PREFIX) => Self::ApiKey(given.to_owned()),
            Some(given) => Self::Token(given.to_owned()),
            None => match variable("BOXD_TOKEN") {
                Some(token) => Self::Token(token),
                None => Self::ApiKey(variable("BOXD_API_KEY")?),
            },
        };
        let (Self::Token(value) | Self::ApiKey(value)) = &credential;
        (!value.is_empty()).then_some(credential)
    }
}

/// The bearer calls carry.
pub(super) enum Auth {
    Token(AsciiMetadataValue),
    Exchanged(Exchange),
}

/// An API key and what it is exchanged through.
pub(super) struct Exchange {
    key: String,
    url: String,
    http: reqwest::Client,
    cache: TokenCache,
}

impl Auth {
    /// The bearer of `credential` on the server at `base_url` (checked by the caller).
    pub fn new(credential: Credential, base_url: &str, request_timeout: Duration) -> Result<Self, InvalidInput> {
        match credential {
            Credential::Token(token) => grpc::sensitive(&format!("Bearer {token}"))
                .map(Self::Token)
                .ok_or_else(|| InvalidInput::new("apiKey", messages::boxd_unprintable_token())),
            Credential::ApiKey(key) => {
                let http = reqwest::Client::builder()
                    .user_agent(concat!("sandbox-reclaim/", env!("CARGO_PKG_VERSION")))
                    .http1_only()
                    .timeout(request_timeout)
                    .connect_timeout(request_timeout.min(Duration::from_secs(10)))
                    .build()
                    .map_err(|error| InvalidInput::new("apiUrl", error.without_url().to_string()))?;
                let url = format!("{}{EXCHANGE_PATH}", console_url(base_url));
                Ok(Self::Exchanged(Exchange { key, url, http, cache: TokenCache::default() }))
            }
        }
    }

    /// `authorization`'s value: the token, or the key's exchanged token.
    pub async fn bearer(&self) -> Result<AsciiMetadataValue, ProviderError> {
        match self {
            Self::Token(bearer) => Ok(bearer.clone()),
            Self::Exchanged(exchange) => {
                let unprintable = || malformed("a token gRPC metadata cannot carry");
                exchange.cache.get(exchange.exchange(), unprintable).await
            }
        }
    }

    /// boxd refused the bearer: an exchanged token is exchanged again next time.
    pub async fn refused(&self) {
        if let Self::Exchanged(exchange) = self {
            exchange.cache.forget().await;
        }
    }

    /// Where the key is exchanged (`None`: a token, nothing is exchanged).
    #[cfg(test)]
    pub fn exchange_url(&self) -> Option<&str> {
        match self {
            Self::Token(_) => None,
            Self::Exchanged(exchange) => Some(&exchange.url),
        }
    }
}

impl Exchange {
    /// One exchange, re-sent while boxd throttles it (a bounded number of times).
    async fn exchange(&self) -> Result<Issued, ProviderError> {
        let body = serde_json::json!({ "api_key": self.key }).to_string();
        let mut throttled = 0;
        loop {
            let request = self.http.post(&self.url).header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            let response = request.body(body.clone()).send().await.map_err(transport)?;
            let status = response.status();
            let retry_after = response.headers().get(RETRY_AFTER).and_then(|value| value.to_str().ok());
            let retry_after = retry_after.and_then(|text| text.trim().parse::<f64>().ok());
            let bytes = response.bytes().await.map_err(transport)?;
            if status == StatusCode::TOO_MANY_REQUESTS && throttled < MAX_RATE_LIMITED_RETRIES {
                if let Some(wait) = paging::throttle_wait(retry_after) {
                    throttled += 1;
                    tokio::time::sleep(wait).await;
                    continue;
                }
            }
            if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                return Err(ProviderError::backend(HostedError::Unauthorized(messages::boxd_key_refused(
                    status.as_u16(),
                ))));
            }
            if !status.is_success() {
                let detail = error_detail(&bytes).replace(&self.key, "<redacted>");
                let message = messages::hosted_status(LABEL, "POST", EXCHANGE_PATH, status.as_u16(), &detail);
                return Err(paging::failed(message));
            }
            return read_issued(&bytes, now_seconds()).map_err(|why| malformed(&why));
        }
    }
}

/// An exchange's answer: `{"token": "...", "expires_at": <epoch seconds>}`,
/// as the bearer to send and when to refresh it.
fn read_issued(body: &[u8], now: f64) -> Result<Issued, String> {
    let answer: serde_json::Value = serde_json::from_slice(body).map_err(|_| "not JSON".to_owned())?;
    let token = answer.get("token").and_then(|token| token.as_str()).filter(|token| !token.is_empty());
    let Some(token) = token else { return Err("no token".to_owned()) };
    let expires_at = answer.get("expires_at").and_then(|at| at.as_f64()).filter(|at| at.is_finite());
    let Some(expires_at) = expires_at else { return Err("no expires_at".to_owned()) };
    let lifetime = Duration::from_secs_f64((expires_at - now).clamp(0.0, 1e9));
    let refresh_after = lifetime.saturating_sub(REFRESH_SKEW.min(lifetime / 2));
    Ok(Issued { token: format!("Bearer {token}"), refresh_after, expires_after: lifetime })
}

fn now_seconds() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |since| since.as_secs_f64())
}

fn malformed(why: &str) -> ProviderError {
    paging::failed(messages::hosted_malformed(LABEL, "POST", EXCHANGE_PATH, why))
}

fn transport(error: reqwest::Error) -> ProviderError {
    // `without_url`: the URL may carry user info (the key is in the body, never in an error).
    let cause = if error.is_timeout() { "timed out".to_owned() } else { error.without_url().to_string() };
    paging::failed(messages::hosted_transport(LABEL, "POST", EXCHANGE_PATH, &cause))
}

/// boxd's own message from an error body (`{"error": "..."}`), else the body's start, shortened.
fn error_detail(body: &[u8]) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let message = parsed.as_ref().and_then(|value| {
        ["error", "message"].iter().find_map(|field| value.get(field).and_then(|text| text.as_str()).map(str::to_owned))
    });
    paging::shortened(&message.unwrap_or_else(|| String::from_utf8_lossy(body).into_owned()))
}

/// The web console in front of `/api/v1/...` for gRPC base URL `base_url`
/// (`https://boxd.sh:9443` → `https://app.boxd.sh`).
pub(super) fn console_url(base_url: &str) -> String {
    let base_url = base_url.trim_end_matches('/');
    let Ok(uri) = base_url.parse::<Uri>() else { return base_url.to_owned() };
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else { return base_url.to_owned() };
    let host = authority.host();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let kept =
        bare == "localhost" || bare.parse::<std::net::IpAddr>().is_ok() || authority.as_str().starts_with("app.");
    match kept {
        true => format!("{scheme}://{authority}"),
        false => format!("https://app.{host}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_console_is_app_dot_the_host_unless_local_or_an_ip() {
        assert_eq!(console_url("https://boxd.sh:9443"), "https://app.boxd.sh");
        assert_eq!(console_url("http://staging.boxd.sh:9443/"), "https://app.staging.boxd.sh");
        assert_eq!(console_url("http://127.0.0.1:7000"), "http://127.0.0.1:7000");
        assert_eq!(console_url("http://localhost:7000"), "http://localhost:7000");
        assert_eq!(console_url("http://[::1]:7000"), "http://[::1]:7000");
        assert_eq!(console_url("https://app.boxd.sh:8443"), "https://app.boxd.sh:8443");
    }

    #[test]
    fn the_option_wins_then_boxd_token_then_boxd_api_key() {
        let none = |_: &str| None;
        let both = |name: &str| Some(format!("{name}-value"));
        let key_only = |name: &str| (name == "BOXD_API_KEY").then(|| "bxd_env".to_owned());
        assert!(Credential::resolve(Some("bxd_1"), none) == Some(Credential::ApiKey("bxd_1".into())));
        assert!(Credential::resolve(Some("jwt"), both) == Some(Credential::Token("jwt".into())));
        assert!(Credential::resolve(None, both) == Some(Credential::Token("BOXD_TOKEN-value".into())));
        assert!(Credential::resolve(None, key_only) == Some(Credential::ApiKey("bxd_env".into())));
        assert!(Credential::resolve(None, none).is_none());
        assert!(Credential::resolve(Some(""), both).is_none(), "given empty: missing");
    }

    #[test]
    fn an_exchanged_token_is_refreshed_five_minutes_before_it_expires() {
        let issued = read_issued(br#"{"token":"jwt","expires_at":4600}"#, 1000.0).unwrap();
        assert_eq!(issued.token, "Bearer jwt");
        assert_eq!(
            (issued.refresh_after, issued.expires_after),
            (Duration::from_secs(3300), Duration::from_secs(3600))
        );
        let short = read_issued(br#"{"token":"jwt","expires_at":1010.5}"#, 1000.0).unwrap();
        assert_eq!(short.refresh_after, Duration::from_secs_f64(5.25), "a short-lived token: halfway");
        let past = read_issued(br#"{"token":"jwt","expires_at":10}"#, 1000.0).unwrap();
        assert_eq!(past.refresh_after, Duration::ZERO);
        for bad in [&br#"{"expires_at":1}"#[..], br#"{"token":"","expires_at":1}"#, br#"{"token":"t"}"#, b"<html>"] {
            assert!(read_issued(bad, 0.0).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn an_error_body_reads_as_boxds_message() {
        assert_eq!(error_detail(br#"{"error":"api_key is required"}"#), "api_key is required");
        assert_eq!(error_detail(b"plain"), "plain");
    }
}
