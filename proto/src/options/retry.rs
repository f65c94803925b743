//! The Rust API's options for a leak retry (`retry_leaks`); every default
//! from [`crate::options::defaults`].

use std::time::Duration;

/// Options for `retry_leaks`.
#[derive(Debug, Clone, Copy)]
pub struct RetryOptions {
    /// Most entries claimed in one call.
    pub limit: usize,
    /// How long a claim holds before another retrier may take the entry
    /// (covers a retrier that dies mid-destroy). No destroy starts, or keeps
    /// running, after it ends. At least one millisecond.
    pub lease: Duration,
    /// Cancel a destroy that has not settled after this long.
    pub destroy_timeout: Option<Duration>,
}

impl Default for RetryOptions {
    fn default() -> Self {
        use crate::options::defaults;
        Self {
            limit: defaults::RETRY_LIMIT as usize,
            lease: Duration::from_millis(defaults::LEASE_MS),
            destroy_timeout: None,
        }
    }
}
