//! Error types of the async driver and of the stores and providers it drives.

use crate::machine::{Misuse, SandboxReclaimFailed};
use crate::model::InvalidRecord;

/// Any error from a backend (database, container engine, host callback).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An instance store's failure. `reclaim_sandbox` returns it unchanged, as the
/// reference lets a rejected `get` or `delete` propagate.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The record was refused before anything was written.
    #[error(transparent)]
    InvalidRecord(#[from] InvalidRecord),
    /// A key that no store can hold (empty, or containing NUL).
    #[error("invalid sandbox key: {0}")]
    InvalidKey(&'static str),
    /// The backend failed (I/O, SQL, a host callback).
    #[error("instance store failed: {0}")]
    Backend(#[source] BoxError),
}

impl StoreError {
    /// Wraps any backend error.
    pub fn backend(error: impl Into<BoxError>) -> Self {
        Self::Backend(error.into())
    }
}

/// A provider's failure to destroy (or create, list, exec) a sandbox.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The ownership guard: the sandbox is not this provider's to touch.
    #[error("refusing to touch sandbox `{id}`: {reason}")]
    NotOwned { id: String, reason: String },
    /// The provider's backend failed; carries its message.
    #[error("{0}")]
    Backend(#[source] BoxError),
}

impl ProviderError {
    /// Wraps any backend error.
    pub fn backend(error: impl Into<BoxError>) -> Self {
        Self::Backend(error.into())
    }
}

/// Why `sandbox_reclaimer`'s call failed.
#[derive(Debug, thiserror::Error)]
pub enum ReclaimerError {
    /// The store's `get` or `delete` failed; propagated unchanged.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The provider's destroy failed and the record was deleted anyway:
    /// `SandboxReclaimFailedError`.
    #[error(transparent)]
    ReclaimFailed(#[from] SandboxReclaimFailed),
}

impl From<Misuse> for StoreError {
    // Unreachable with the driver in this crate; kept so a bug surfaces as an
    // error rather than a panic.
    fn from(misuse: Misuse) -> Self {
        Self::Backend(Box::new(misuse))
    }
}
