//! How long the token V2 calls carry (`x-modal-auth-token`) is kept, as the
//! official client keeps it (`modal/_utils/auth_token_manager.py`): fetched
//! by `AuthTokenGet` (which itself carries only the token id and secret),
//! refreshed once half its lifetime is gone (its JWT `exp`; twenty minutes
//! when it has none). The cache itself (one fetch at a time, a failed
//! refresh falling back to a still valid token) is [`grpc::TokenCache`].
//!
//! [`grpc::TokenCache`]: crate::providers::hosted::grpc::TokenCache

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;

use crate::providers::hosted::grpc::Issued;

/// A token's lifetime when its JWT names no expiry (the client's default).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(20 * 60);
/// How much of its lifetime a token is used before it is refreshed.
const REFRESH_FRACTION: f64 = 0.5;

/// `token` (a JWT) dated by its `exp`: refreshed halfway through its lifetime.
pub(super) fn issued(token: String) -> Issued {
    let lifetime = lifetime(&token);
    Issued { token, refresh_after: lifetime.mul_f64(REFRESH_FRACTION), expires_after: lifetime }
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

    #[test]
    fn a_token_is_refreshed_halfway_through_its_lifetime() {
        let issued = issued("not a jwt".into());
        assert_eq!((issued.refresh_after, issued.expires_after), (DEFAULT_LIFETIME / 2, DEFAULT_LIFETIME));
    }
}
