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
//! Every flow (reclaim, reclaimer, leak retry, fleet passes) is a sans-IO
//! machine of the `sandbox-reclaim-proto` crate ([`machine`]): it emits
//! effects, is fed their results and the time, and decides everything,
//! deadlines included. This crate is the runtime around them:
//!
//! - [`runtime`]: the tokio driver and the async API (one-record flows and
//!   fleet passes);
//! - [`stores`]: the instance stores (in memory; SQLite and PostgreSQL
//!   behind features);
//! - `providers`: Docker, local jails and the hosted vendors (behind features).
//!
//! The Node and Python bindings run the very same machines from their own
//! event loops. The proto crate's layers are re-exported here under their
//! names ([`model`], [`report`], [`options`], [`contract`], [`machine`],
//! [`wire`]), so one dependency reaches everything.

pub use sandbox_reclaim_proto as proto;
pub use sandbox_reclaim_proto::{contract, machine, model, options, report, wire};

#[cfg(any(feature = "docker", feature = "local", feature = "hosted"))]
pub mod providers;
pub mod runtime;
pub mod stores;

pub use contract::errors::{BoxError, DestroyTimeout, ProviderError, ReclaimError, ReclaimerError, StoreError};
pub use contract::{FleetStore, LeakLedger, LogMeta, LogValue, ReclaimLogger, SandboxInstanceStore, SandboxProvider};
pub use machine::effects::{Misuse, SandboxReclaimFailed};
pub use machine::reclaim_all::{FleetReclaimReport, RecordOutcome, RecordReport};
pub use machine::reconcile::{
    Action, ActionCounts, ActionReason, ActionResult, ReconcileReport, ReportScope, SweepStatus,
};
pub use model::fleet::{AuditEntry, DueLeak, LeakReason, ListedSandbox, ScheduledLeak, StoreFacts};
pub use model::ledger::{LeakEntry, LeakSummary, NewLeak, RetrySummary};
pub use model::{InvalidRecord, ReclaimOutcome, RunRecord, RunStatus, SandboxInstanceRecord};
pub use options::RetryOptions;
#[cfg(feature = "hosted")]
pub use providers::{
    BlaxelConfig, BlaxelProvider, RailwayConfig, RailwayProvider, RunloopConfig, RunloopProvider, SpritesConfig,
    SpritesProvider, UpstashBoxConfig, UpstashBoxProvider, VercelConfig, VercelProvider,
};
#[cfg(feature = "boxd")]
pub use providers::{BoxdConfig, BoxdProvider};
#[cfg(feature = "hosted")]
pub use providers::{DaytonaConfig, DaytonaProvider};
#[cfg(feature = "docker")]
pub use providers::{DockerConfig, DockerProvider};
#[cfg(feature = "hosted")]
pub use providers::{E2bConfig, E2bProvider};
#[cfg(any(feature = "docker", feature = "local", feature = "hosted"))]
pub use providers::{ExecOutput, InvalidInput, Labels, ManagedSandboxProvider, SandboxHandle};
#[cfg(feature = "hosted")]
pub use providers::{HostedError, HostedSandboxProvider};
#[cfg(feature = "kubernetes")]
pub use providers::{KubernetesConfig, KubernetesProvider};
#[cfg(feature = "modal")]
pub use providers::{ModalConfig, ModalProvider};
pub use runtime::api::{reclaim_sandbox, retry_leaks, sandbox_reclaimer, ReclaimOptions};
pub use runtime::driver::{ProgressCallback, StopSignal};
pub use runtime::passes::{
    reclaim_all, reconcile, reconcile_values, FleetOptions, InvalidOption, PassHosts, ReconcileOptions, DEFAULT_OWNER,
};
pub use stores::memory::InMemorySandboxInstanceStore;
// Namespaces, process groups and pid start times: Unix only (a Windows build
// of the bindings has DockerProvider, and LocalProvider says it is missing).
#[cfg(all(feature = "local", unix))]
pub use providers::{Isolation, IsolationRequest, LocalConfig, LocalProvider};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use stores::StoreOpenError;
#[cfg(feature = "postgres")]
pub use stores::{PostgresOptions, PostgresSandboxInstanceStore};
#[cfg(feature = "sqlite")]
pub use stores::{SqliteOptions, SqliteSandboxInstanceStore};
