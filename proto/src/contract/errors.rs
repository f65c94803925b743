//! Error types of the drivers and of the stores and providers they drive.

use crate::model::InvalidRecord;
use crate::report::messages;

/// The reclaimer's failure: `SandboxReclaimFailedError` in every binding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", messages::reclaim_failed_message(run_id, sandbox_key.as_deref()))]
pub struct SandboxReclaimFailed {
    pub run_id: String,
    /// Absent only when the record had no key, which cannot reach this arm.
    pub sandbox_key: Option<String>,
}

impl SandboxReclaimFailed {
    /// The error's message, built by [`messages::reclaim_failed_message`].
    pub fn message(&self) -> String {
        messages::reclaim_failed_message(&self.run_id, self.sandbox_key.as_deref())
    }
}

/// A driver fed the machine something it did not ask for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{prefix}: {detail}", prefix = messages::MISUSE, detail = self.0)]
pub struct Misuse(pub &'static str);

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

/// A destroy cut by its deadline: `SandboxDestroyTimeoutError` in every
/// binding, handed to the logger as the destroy-failed warning's `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", messages::destroy_timeout_message(provider_sandbox_id, *timeout_ms))]
pub struct DestroyTimeout {
    pub provider_sandbox_id: String,
    pub timeout_ms: u64,
}

/// Why `reclaim_sandbox`, `retry_leaks` or a fleet pass failed.
#[derive(Debug, thiserror::Error)]
pub enum ReclaimError {
    /// An option was refused before anything ran.
    #[error(transparent)]
    InvalidOption(#[from] crate::options::HostOptionError),
    /// The store failed; propagated unchanged.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A driver bug: the machine was fed something it did not ask for.
    #[error(transparent)]
    Misuse(#[from] Misuse),
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
    /// A driver bug: the machine was fed something it did not ask for.
    #[error(transparent)]
    Misuse(#[from] Misuse),
}

impl From<ReclaimError> for ReclaimerError {
    fn from(error: ReclaimError) -> Self {
        match error {
            ReclaimError::Store(error) => Self::Store(error),
            ReclaimError::Misuse(misuse) => Self::Misuse(misuse),
            // The reclaimer takes no fleet options.
            ReclaimError::InvalidOption(_) => Self::Misuse(Misuse(crate::report::messages::MISUSE_WRONG_COMPLETION)),
        }
    }
}
