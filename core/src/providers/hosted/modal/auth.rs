//! The token V2 calls carry (`x-modal-auth-token`), as the official client
//! keeps it (`modal/_utils/auth_token_manager.py`): fetched by
//! `AuthTokenGet` (which itself carries only the token id and secret),
//! cached, refreshed once half its lifetime is gone (its JWT `exp`; twenty
//! minutes when it has none), and, should a refresh fail while the cached
//! token is still valid, the cached one is used. One fetch at a time:
//! callers that arrive meanwhile wait for it.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use tokio::sync::Mutex;
use tonic::metadata::AsciiMetadataValue;

use crate::contract::errors::ProviderError;

/// A token's lifetime when its JWT names no expiry (the client's default).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(20 * 60);
/// How much of its lifetime a token is used before it is refreshed.
const REFRESH_FRACTION: f64 = 0.5;

/// The cached token, if any.
#[derive(Default)]
pub(super) struct AuthToken {
    cached: Mutex<Option<Cached>>,
}

struct Cached {
    /// Marked sensitive: never printed by tonic's or hyper's debug output.
    value: AsciiMetadataValue,
    refresh_at: Instant,
    expires_at: Instant,
}

impl AuthToken {
    /// The token to send: the cached one while it is fresh, else what
    /// `fetch` answers (a token that cannot be sent is `unprintable`).
    pub async fn get(
        &self,
        fetch: impl Future<Output = Result<String, ProviderError>>,
        unprintable: impl FnOnce() -> ProviderError,
    ) -> Result<AsciiMetadataValue, ProviderError> {
        let mut cached = self.cached.lock().await;
        let now = Instant::now();
        if let Some(token) = cached.as_ref().filter(|token| now < token.refresh_at) {
            return Ok(token.value.clone());
        }
        match fetch.await {
            Ok(token) => {
                let Ok(mut value) = AsciiMetadataValue::try_from(token.as_str()) else { return Err(unprintable()) };
                value.set_sensitive(true);
                let lifetime = lifetime(&token);
                let now = Instant::now();
                let refresh_at = now + lifetime.mul_f64(REFRESH_FRACTION);
                *cached = Some(Cached { value: value.clone(), refresh_at, expires_at: now + lifetime });
                Ok(value)
            }
            // A failed refresh falls back to a token that is still valid.
            Err(error) => match cached.as_ref().filter(|token| Instant::now() < token.expires_at) {
                Some(token) if !is_unauthorized(&error) => Ok(token.value.clone()),
                _ => Err(error),
            },
        }
    }
}

/// A refused credential is never papered over with the cached token.
fn is_unauthorized(error: &ProviderError) -> bool {
    let ProviderError::Backend(inner) = error else { return false };
    matches!(inner.downcast_ref::<super::super::HostedError>(), Some(super::super::HostedError::Unauthorized(_)))
}

/// How long from now `token` (a JWT) is valid: its `exp` claim, else the default.
fn lifetime(token: &str) -> Duration {
    let Some(expiry) = expiry_seconds(token) else { return DEFAULT_LIFETIME };
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |since| since.as_secs_f64());
    Duration::from_secs_f64((expiry - now).clamp(0.0, 1e9))
}

/// The `exp` claim of a JWT (epoch seconds), read without checking the
/// signature (the server checks it), as the client reads it.
fn expiry_seconds(token: &str) -> Option<f64> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("exp")?.as_f64().filter(|exp| exp.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: &str) -> String {
        let encode = |text: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text);
        format!("{}.{}.sig", encode(r#"{"alg":"HS256"}"#), encode(claims))
    }

    #[test]
    fn the_lifetime_is_the_jwts_exp_else_twenty_minutes() {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let left = lifetime(&jwt(&format!(r#"{{"exp":{}}}"#, now + 600)));
        assert!(left > Duration::from_secs(590) && left <= Duration::from_secs(600), "{left:?}");
        assert_eq!(lifetime(&jwt(r#"{"sub":"x"}"#)), DEFAULT_LIFETIME);
        assert_eq!(lifetime("not a jwt"), DEFAULT_LIFETIME);
        assert_eq!(lifetime(&jwt(r#"{"exp":1}"#)), Duration::ZERO, "expired: fetched again next time");
    }

    #[tokio::test]
    async fn a_fresh_token_is_reused_and_a_failed_refresh_keeps_a_valid_one() {
        let token = AuthToken::default();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let first = jwt(&format!(r#"{{"exp":{}}}"#, now + 600));
        let unprintable = || ProviderError::backend(std::io::Error::other("unprintable"));
        let got = token.get(async { Ok(first.clone()) }, unprintable).await.unwrap();
        assert_eq!(got.to_str().unwrap(), first);
        let again = token.get(async { panic!("a fresh token is not fetched again") }, unprintable).await.unwrap();
        assert_eq!(again, got);
        // Past its refresh time but valid: a failed refresh keeps it.
        token.cached.lock().await.as_mut().unwrap().refresh_at = Instant::now();
        let failed = async { Err(ProviderError::backend(std::io::Error::other("down"))) };
        assert_eq!(token.get(failed, unprintable).await.unwrap(), got);
    }
}
