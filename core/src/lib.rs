//! # sandbox-reclaim
//!
//! Reclaims the isolated sandboxes (containers, microVMs, process jails) that
//! AI agent runs leave behind, with the exact rules of TanStack's
//! `@tanstack/ai-sandbox` `reclaimSandbox`:
//!
//! 1. no `sandboxKey` → `no-sandbox-key`, no I/O;
//! 2. no instance record → `not-found`;
//! 3. a record of another provider → `provider-mismatch`, nothing touched;
//! 4. destroy, then delete the record *even if destroy failed*, answering
//!    `destroyed` or `destroy-failed`.
//!
//! The rules live in a sans-IO [state machine](machine) that the async
//! [driver] (and the Node and Python bindings' interpreters) run against
//! providers and stores. Every string it emits comes from [`messages`].

pub mod driver;
pub mod errors;
pub mod ledger;
pub mod machine;
pub mod memory;
pub mod messages;
pub mod model;
pub mod program;
#[cfg(any(feature = "docker", feature = "local"))]
pub mod providers;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod stores;

pub use driver::{
    reclaim_sandbox, sandbox_reclaimer, LogMeta, LogValue, ReclaimLogger, ReclaimOptions, SandboxInstanceStore,
    SandboxProvider,
};
pub use errors::{BoxError, ProviderError, ReclaimerError, StoreError};
pub use ledger::{retry_leaks, LeakEntry, LeakLedger, NewLeak, RetryOptions, RetrySummary};
pub use machine::SandboxReclaimFailed;
pub use memory::InMemorySandboxInstanceStore;
pub use model::{InvalidRecord, ReclaimOutcome, RunRecord, RunStatus, SandboxInstanceRecord};
#[cfg(feature = "docker")]
pub use providers::{DockerConfig, DockerProvider};
#[cfg(any(feature = "docker", feature = "local"))]
pub use providers::{ExecOutput, InvalidInput, Labels, ManagedSandboxProvider, SandboxHandle};
#[cfg(feature = "local")]
pub use providers::{Isolation, IsolationRequest, LocalConfig, LocalProvider};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use stores::StoreOpenError;
#[cfg(feature = "postgres")]
pub use stores::{PostgresOptions, PostgresSandboxInstanceStore};
#[cfg(feature = "sqlite")]
pub use stores::{SqliteOptions, SqliteSandboxInstanceStore};
