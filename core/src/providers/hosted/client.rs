//! What every hosted provider (E2B, and the vendors after it) shares: one
//! HTTPS client on rustls, the credential header marked sensitive, a bounded
//! wait on `429 Retry-After`, and errors that name the vendor and the variable
//! to set, never the credential. A listing always ends: a cursor it already
//! followed, or a page or item ceiling passed, fails it closed
//! ([`HostedClient::list_pages`], on [`super::paging`]).
//!
//! A request is a method, a path and, for a vendor whose calls carry one
//! (Railway's GraphQL), a JSON body ([`Request`]). How an answer reads is
//! its status (2xx done, `404` gone, `401`/`403` refused), unless the entry
//! gives a verdict of its own ([`Verdict`]: a GraphQL error under HTTP 200).
//!
//! Cancellation is the caller's: a destroy's deadline drops the future, and
//! dropping a `reqwest` future aborts its request.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{Method, StatusCode};

use super::paging::{self, HostedError, PageRead, MAX_RATE_LIMITED_RETRIES};
use crate::contract::errors::ProviderError;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::ListingCeilings;
use crate::providers::InvalidInput;
use crate::report::messages;

/// Who a client talks to, for its messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vendor {
    /// The vendor's name in messages (`E2B`).
    pub label: &'static str,
    /// The environment variable holding the credential (`E2B_API_KEY`).
    pub credential_variable: &'static str,
    /// The provider option holding the credential (`apiKey`).
    pub credential_option: &'static str,
}

/// The HTTP method of a destroy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Delete,
    /// Runloop's `POST .../shutdown`; Railway's GraphQL mutation.
    Post,
}

impl Verb {
    pub(crate) fn method(self) -> Method {
        match self {
            Verb::Delete => Method::DELETE,
            Verb::Post => Method::POST,
        }
    }
}

/// One request: its method, its path (after the base URL, with its query)
/// and, for a vendor whose calls carry one, its JSON body.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: Method,
    pub path: String,
    pub body: Option<serde_json::Value>,
    /// What messages call it: the path without its query (queries carry
    /// filters and tokens), or the entry's name for a body (`sandboxes`).
    shown: String,
}

impl Request {
    /// `method path`, without a body.
    pub fn new(method: Method, path: String) -> Self {
        let shown = path_only(&path).to_owned();
        Self { method, path, body: None, shown }
    }

    /// The request with a JSON `body`, called `name` in messages (after
    /// its path, when it has one: many bodies share one GraphQL endpoint).
    pub fn with_body(self, body: serde_json::Value, name: &str) -> Self {
        let shown = if self.shown.is_empty() { name.to_owned() } else { format!("{} {name}", self.shown) };
        Self { body: Some(body), shown, ..self }
    }
}

/// What an answer means, beyond (or instead of) its status: an entry's
/// verdict for a vendor that answers errors under HTTP 200 (GraphQL), the
/// status alone for every other ([`by_status`]). `401`/`403` are refusals
/// before any verdict; `429` is waited out before any verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The call succeeded: its body is read.
    Done,
    /// The sandbox is already gone: a destroy succeeded, a get found
    /// nothing (a listing or a check that answers it fails).
    Gone,
    /// The vendor refused the credential (or what it may see), in its words.
    Unauthorized(String),
    /// The call failed, in the vendor's words (empty: the body's are quoted).
    Failed(String),
}

/// The REST verdict: a 2xx is done, `404` is gone, anything else failed.
pub(crate) fn by_status(answer: &Answer) -> Verdict {
    if answer.status.is_success() {
        Verdict::Done
    } else if answer.status == StatusCode::NOT_FOUND {
        Verdict::Gone
    } else {
        Verdict::Failed(String::new())
    }
}

/// A vendor's answer: status, headers and the whole body.
pub(crate) struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON of type `T`; the parse error as text.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_slice(&self.body).map_err(|error| error.to_string())
    }

    /// A header as text, if present and readable.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// An answer with `status` and JSON `body`, for an entry's unit tests.
    #[cfg(test)]
    pub fn for_test(status: u16, body: &str) -> Self {
        Self {
            status: StatusCode::from_u16(status).unwrap(),
            headers: HeaderMap::new(),
            body: body.as_bytes().to_vec(),
        }
    }
}

/// One vendor's HTTPS client.
pub(crate) struct HostedClient {
    vendor: Vendor,
    client: reqwest::Client,
    base_url: String,
    /// How an answer reads ([`by_status`] unless the entry says otherwise).
    verdict: fn(&Answer) -> Verdict,
}

impl HostedClient {
    /// A client for `base_url` sending `credential` in header `auth_header`
    /// (with `auth_prefix` before it, e.g. `Bearer `). Bad input names its field.
    pub fn new(
        vendor: Vendor,
        base_url: &str,
        (auth_header, auth_prefix): (&'static str, &str),
        credential: &str,
        headers: impl IntoIterator<Item = (&'static str, String)>,
        request_timeout: Duration,
    ) -> Result<Self, InvalidInput> {
        let base_url = base_url.trim_end_matches('/').to_owned();
        match reqwest::Url::parse(&base_url) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => {}
            _ => return Err(InvalidInput::new("apiUrl", messages::hosted_bad_url(vendor.label, &base_url))),
        }
        if credential.is_empty() {
            return Err(InvalidInput::new(
                vendor.credential_option,
                messages::hosted_missing_credential(vendor.label, vendor.credential_variable),
            ));
        }
        let mut value = HeaderValue::from_str(&format!("{auth_prefix}{credential}")).map_err(|_| {
            InvalidInput::new(vendor.credential_option, messages::hosted_unprintable_credential(vendor.label))
        })?;
        // Sensitive: never printed by reqwest's or hyper's debug output.
        value.set_sensitive(true);
        let mut default_headers = HeaderMap::new();
        default_headers.insert(HeaderName::from_static(auth_header), value);
        for (name, value) in headers {
            // A scope value (a workspace) the user gave: refused if it cannot be a header.
            let value = HeaderValue::from_str(&value)
                .map_err(|_| InvalidInput::new("options", messages::hosted_unprintable_header(vendor.label, name)))?;
            default_headers.insert(HeaderName::from_static(name), value);
        }
        let client = reqwest::Client::builder()
            .default_headers(default_headers)
            .user_agent(concat!("sandbox-reclaim/", env!("CARGO_PKG_VERSION")))
            .timeout(request_timeout)
            .connect_timeout(request_timeout.min(Duration::from_secs(10)))
            .build()
            .map_err(|error| InvalidInput::new("apiUrl", error.without_url().to_string()))?;
        Ok(Self { vendor, client, base_url, verdict: by_status })
    }

    /// The client with the entry's own verdict on answers, if it has one.
    pub fn with_verdict(self, verdict: Option<fn(&Answer) -> Verdict>) -> Self {
        Self { verdict: verdict.unwrap_or(by_status), ..self }
    }

    /// Sends `request` (its body as JSON), waiting out `429`s with their
    /// `Retry-After`. A 401/403 is an authentication error naming the
    /// variable to set; every other status is returned to the caller.
    pub async fn send(&self, request: &Request) -> Result<Answer, ProviderError> {
        let mut rate_limited = 0;
        loop {
            let url = format!("{}{}", self.base_url, request.path);
            let mut builder = self.client.request(request.method.clone(), url);
            if let Some(body) = &request.body {
                builder = builder.header(CONTENT_TYPE, "application/json").body(body.to_string());
            }
            let response = builder.send().await.map_err(|error| self.transport(request, error))?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = response.bytes().await.map_err(|error| self.transport(request, error))?.to_vec();
            let answer = Answer { status, headers, body };
            if status == StatusCode::TOO_MANY_REQUESTS && rate_limited < MAX_RATE_LIMITED_RETRIES {
                if let Some(wait) = retry_after(&answer) {
                    rate_limited += 1;
                    tokio::time::sleep(wait).await;
                    continue;
                }
            }
            if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                return Err(ProviderError::backend(HostedError::Unauthorized(messages::hosted_unauthorized(
                    self.vendor.label,
                    status.as_u16(),
                    self.vendor.credential_variable,
                ))));
            }
            return Ok(answer);
        }
    }

    /// Sends `request` and reads its answer by the verdict: done or gone
    /// (with the answer); a refusal or a failure is the error.
    async fn call(&self, request: &Request) -> Result<(Verdict, Answer), ProviderError> {
        let answer = self.send(request).await?;
        match (self.verdict)(&answer) {
            verdict @ (Verdict::Done | Verdict::Gone) => Ok((verdict, answer)),
            Verdict::Unauthorized(detail) => {
                let detail = paging::shortened(&detail);
                let message = messages::hosted_refused(self.vendor.label, &detail, self.vendor.credential_variable);
                Err(ProviderError::backend(HostedError::Unauthorized(message)))
            }
            Verdict::Failed(detail) => Err(self.failed(request, &answer, &detail)),
        }
    }

    /// A destroy (the entry's request): success, or already gone (`404`,
    /// every REST vendor's "not found", or the entry's verdict); any other
    /// answer fails the destroy.
    pub async fn destroy_tolerating_gone(&self, request: &Request) -> Result<(), ProviderError> {
        self.call(request).await.map(|_| ())
    }

    /// One sandbox by the entry's get, read by `read`: `None` when the
    /// answer is gone (`404`) or `read` calls it gone; any other failure,
    /// or an answer `read` refuses, is an error (a lookup fails closed).
    pub async fn get_one(
        &self,
        request: &Request,
        read: fn(&Answer) -> Result<Option<ListedSandbox>, String>,
    ) -> Result<Option<ListedSandbox>, ProviderError> {
        match self.call(request).await? {
            (Verdict::Done, answer) => read(&answer).map_err(|why| self.malformed(request, &why)),
            _ => Ok(None),
        }
    }

    /// `request` must succeed: one small authenticated call.
    pub async fn check(&self, request: &Request) -> Result<(), ProviderError> {
        self.done(request).await.map(|_| ())
    }

    /// `request`'s answer, which must be done (a gone one fails too).
    async fn done(&self, request: &Request) -> Result<Answer, ProviderError> {
        match self.call(request).await? {
            (Verdict::Done, answer) => Ok(answer),
            (_, answer) => Err(self.failed(request, &answer, "")),
        }
    }

    /// Every page of a listing ([`paging::every_page`]): `request_of(cursor)`
    /// is a page's request (no cursor: the first); `read` turns an answer
    /// into its sandboxes and the next cursor (`None` on the last page). A
    /// page that fails or does not read fails the listing.
    pub async fn list_pages(
        &self,
        ceilings: ListingCeilings,
        request_of: impl Fn(Option<&str>) -> Request,
        read: impl Fn(&Answer) -> Result<(Vec<ListedSandbox>, Option<String>), String>,
    ) -> Result<Vec<ListedSandbox>, ProviderError> {
        let (request_of, read) = (&request_of, &read);
        paging::every_page(self.vendor.label, ceilings, |cursor| async move {
            let request = request_of(cursor.as_deref());
            let answer = self.done(&request).await?;
            let (sandboxes, next) = read(&answer).map_err(|why| self.malformed(&request, &why))?;
            Ok(PageRead { sandboxes, next, request: format!("{} {}", request.method, request.shown) })
        })
        .await
    }

    /// The error for an answer that failed: its status and `detail` (the
    /// verdict's words; empty: the body's). A failure under a 2xx (a
    /// GraphQL error) is called an error, not a status.
    fn failed(&self, request: &Request, answer: &Answer, detail: &str) -> ProviderError {
        let detail = if detail.is_empty() { error_detail(&answer.body) } else { paging::shortened(detail) };
        let (label, method) = (self.vendor.label, request.method.as_str());
        let message = if answer.status.is_success() {
            messages::hosted_error_answer(label, method, &request.shown, &detail)
        } else {
            messages::hosted_status(label, method, &request.shown, answer.status.as_u16(), &detail)
        };
        ProviderError::backend(HostedError::Failed(message))
    }

    /// The error for an answer whose body does not read as documented.
    fn malformed(&self, request: &Request, why: &str) -> ProviderError {
        ProviderError::backend(HostedError::Failed(messages::hosted_malformed(
            self.vendor.label,
            request.method.as_str(),
            &request.shown,
            why,
        )))
    }

    fn transport(&self, request: &Request, error: reqwest::Error) -> ProviderError {
        // `without_url`: the base URL may carry user info; the path is ours.
        let cause = if error.is_timeout() { "timed out".to_owned() } else { error.without_url().to_string() };
        ProviderError::backend(HostedError::Failed(messages::hosted_transport(
            self.vendor.label,
            request.method.as_str(),
            &request.shown,
            &cause,
        )))
    }
}

/// A `Retry-After` in seconds (the vendors send seconds), capped; `None` when
/// the wait is longer than we hold a request for. Daytona names its limiter
/// in the header (`Retry-After-sandbox-lifecycle`), so any `Retry-After-*`
/// counts too.
fn retry_after(answer: &Answer) -> Option<Duration> {
    let named =
        answer.headers.iter().find(|(name, _)| name.as_str().starts_with("retry-after-")).map(|(_, value)| value);
    let header = answer.headers.get(RETRY_AFTER).or(named);
    let seconds = header.and_then(|value| value.to_str().ok()).and_then(|text| text.trim().parse::<f64>().ok());
    paging::throttle_wait(seconds)
}

/// The vendor's own message from an error body (`{"message": ...}` or
/// `{"error": {"message": ...}}`), else the body's start, shortened.
fn error_detail(body: &[u8]) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let message = parsed.as_ref().and_then(|value| {
        value
            .get("message")
            .and_then(|message| message.as_str())
            .or_else(|| value.get("error").and_then(|error| error.get("message")).and_then(|message| message.as_str()))
            .or_else(|| value.get("error").and_then(|error| error.as_str()))
            .map(str::to_owned)
    });
    let text = message.unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    paging::shortened(&text)
}

/// A request's path without its query (queries carry filters and tokens).
fn path_only(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

/// Percent-encodes a query component (RFC 3986 unreserved characters kept).
pub(crate) fn encode_component(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// An RFC 3339 timestamp (`2026-12-01T10:00:00.123Z`, or with an offset) as
/// epoch milliseconds; `None` for anything else (the sweep then fails closed).
pub(crate) fn parse_rfc3339_millis(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    let digits = |from: usize, count: usize| -> Option<i64> {
        let part = text.get(from..from + count)?;
        part.bytes().all(|b| b.is_ascii_digit()).then(|| part.parse().ok())?
    };
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b't' | b' ') {
        return None;
    }
    if bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let (year, month, day) = (digits(0, 4)?, digits(5, 2)?, digits(8, 2)?);
    let (hour, minute, second) = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut at = 19;
    let mut millis = 0i64;
    if bytes.get(at) == Some(&b'.') {
        let start = at + 1;
        let mut end = start;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
        if end == start {
            return None;
        }
        let fraction = &text[start..end.min(start + 3)];
        millis = fraction.parse::<i64>().ok()? * 10i64.pow(3 - fraction.len() as u32);
        at = end;
    }
    let offset_minutes = match text.get(at..)? {
        "Z" | "z" => 0,
        zone if zone.len() == 6 && matches!(zone.as_bytes()[0], b'+' | b'-') && zone.as_bytes()[3] == b':' => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            sign * (digits(at + 1, 2)? * 60 + digits(at + 4, 2)?)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    u64::try_from(seconds * 1_000 + millis).ok()
}

// Howard Hinnant's days_from_civil: days since 1970-01-01 of a Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// With `sweep_unlabelled`, a listed sandbox without our owner label reads as
/// unlabelled (owner `""`: the registry decides), not as of unknown owner
/// (which fails the sweep closed).
pub(super) fn unlabelled_as_empty(mut listed: Vec<ListedSandbox>, sweep_unlabelled: bool) -> Vec<ListedSandbox> {
    if sweep_unlabelled {
        for sandbox in &mut listed {
            sandbox.owner.get_or_insert_with(String::new);
        }
    }
    listed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_to_epoch_millis() {
        assert_eq!(parse_rfc3339_millis("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339_millis("2026-12-01T10:00:00.123Z"), Some(1_796_119_200_123));
        assert_eq!(parse_rfc3339_millis("2026-12-01T11:00:00.123456789+01:00"), Some(1_796_119_200_123));
        assert_eq!(parse_rfc3339_millis("2024-02-29T00:00:00.5Z"), Some(1_709_164_800_500));
        for bad in ["", "2026-12-01", "2026-13-01T00:00:00Z", "2026-12-01T00:00:00", "2026-12-01T00:00:00.Z", "x"] {
            assert_eq!(parse_rfc3339_millis(bad), None, "{bad}");
        }
    }

    #[test]
    fn query_components_are_percent_encoded() {
        assert_eq!(encode_component("io.sandbox-reclaim.owner=a b&c"), "io.sandbox-reclaim.owner%3Da%20b%26c");
        assert_eq!(encode_component("ü"), "%C3%BC");
    }

    #[test]
    fn error_details_prefer_the_vendors_message_and_stay_short() {
        assert_eq!(error_detail(br#"{"code":500,"message":"boom"}"#), "boom");
        assert_eq!(error_detail(br#"{"error":{"message":"nested"}}"#), "nested");
        assert_eq!(error_detail(b"plain"), "plain");
        assert_eq!(error_detail("x".repeat(500).as_bytes()).chars().count(), 201);
    }
}
