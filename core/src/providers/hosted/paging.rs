//! What every hosted provider shares, whatever carries its calls (the HTTP
//! client, Modal's gRPC client): its errors ([`HostedError`]); a listing
//! that lists each sandbox once and always ends (a cursor it already
//! followed, or a page or item ceiling passed, fails it closed); the
//! bounded wait a throttled request takes; how much of a vendor's error
//! text a message quotes.

use std::collections::HashSet;
use std::future::Future;
use std::time::Duration;

use crate::contract::errors::ProviderError;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::ListingCeilings;
use crate::report::messages;

/// How often one request is re-sent after a throttling answer (HTTP `429`,
/// gRPC `RESOURCE_EXHAUSTED`) before it fails.
pub(crate) const MAX_RATE_LIMITED_RETRIES: u32 = 5;
/// The wait after a throttling answer that names none.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);
/// The longest wait honoured; a longer one fails the request (the ledger
/// retries the destroy on a later pass).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// How much of a vendor's error text a message quotes.
const MAX_DETAIL_CHARS: usize = 200;

/// A hosted provider's failure. `Unauthorized` is kept apart so the command
/// can exit 3 (unavailable) with it.
#[derive(Debug, thiserror::Error)]
pub enum HostedError {
    /// The vendor refused the credential (401/403; gRPC UNAUTHENTICATED).
    #[error("{0}")]
    Unauthorized(String),
    /// Any other failure: a status, a transport error, a malformed answer.
    #[error("{0}")]
    Failed(String),
}

/// One page as read: its sandboxes, the next cursor (`None`: the last page)
/// and the request that brought it, for messages (`GET /v2/sandboxes`).
pub(crate) struct PageRead {
    pub sandboxes: Vec<ListedSandbox>,
    pub next: Option<String>,
    pub request: String,
}

/// Every page of a listing: `fetch(cursor)` reads a page (no cursor: the
/// first), failing as its transport does. Each sandbox is listed once (its
/// first appearance), however many pages repeat it.
///
/// The listing ends, whatever the vendor answers: it fails closed when a
/// page fails, when a next cursor is one this listing already followed (any
/// earlier one, not only the last: A → B → A is a cycle too), and when it
/// would pass `ceilings` (pages followed, or sandboxes read, duplicates
/// included). A first page is always read.
pub(crate) async fn every_page<F, Fut>(
    vendor: &str,
    ceilings: ListingCeilings,
    mut fetch: F,
) -> Result<Vec<ListedSandbox>, ProviderError>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<PageRead, ProviderError>>,
{
    let mut listed = Vec::new();
    let mut ids = HashSet::new();
    // Every cursor followed so far: at most `ceilings.pages` of them.
    let mut followed = HashSet::new();
    let mut cursor: Option<String> = None;
    let (mut pages, mut items) = (0u32, 0u64);
    loop {
        let PageRead { sandboxes, next, request } = fetch(cursor.take()).await?;
        pages += 1;
        items = items.saturating_add(sandboxes.len() as u64);
        if items > ceilings.items {
            return Err(failed(messages::hosted_listing_item_ceiling(vendor, &request, ceilings.items)));
        }
        listed.extend(sandboxes.into_iter().filter(|sandbox| ids.insert(sandbox.id.clone())));
        let Some(next) = next.filter(|next| !next.is_empty()) else { return Ok(listed) };
        if !followed.insert(next.clone()) {
            return Err(failed(messages::hosted_listing_cycle(vendor, &request, pages)));
        }
        if pages >= ceilings.pages {
            return Err(failed(messages::hosted_listing_page_ceiling(vendor, &request, ceilings.pages)));
        }
        cursor = Some(next);
    }
}

/// A hosted provider's failure with `message`.
pub(crate) fn failed(message: String) -> ProviderError {
    ProviderError::backend(HostedError::Failed(message))
}

/// How long to wait before re-sending a throttled request: the vendor's
/// hint in seconds (a `Retry-After`, Modal's retry policy), else a second;
/// `None` when the wait is longer than we hold a request for.
pub(crate) fn throttle_wait(hint_seconds: Option<f64>) -> Option<Duration> {
    let wait = match hint_seconds {
        Some(seconds) if seconds.is_finite() && seconds >= 0.0 => Duration::from_secs_f64(seconds.min(1e6)),
        _ => DEFAULT_RETRY_AFTER,
    };
    (wait <= MAX_RETRY_AFTER).then_some(wait)
}

/// A vendor's error text, shortened for a message.
pub(crate) fn shortened(text: &str) -> String {
    let mut short: String = text.chars().take(MAX_DETAIL_CHARS).collect();
    if text.chars().count() > MAX_DETAIL_CHARS {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_waits_are_the_hint_or_a_second_and_never_over_a_minute() {
        assert_eq!(throttle_wait(Some(0.25)), Some(Duration::from_millis(250)));
        assert_eq!(throttle_wait(None), Some(Duration::from_secs(1)));
        assert_eq!(throttle_wait(Some(f64::NAN)), Some(Duration::from_secs(1)));
        assert_eq!(throttle_wait(Some(61.0)), None);
    }

    #[test]
    fn details_stay_short() {
        assert_eq!(shortened("plain"), "plain");
        assert_eq!(shortened(&"x".repeat(500)).chars().count(), MAX_DETAIL_CHARS + 1);
    }
}
