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
//! Every flow (reclaim, reclaimer, leak retry) is a sans-IO machine in
//! [`flows`] speaking the [`effects`] protocol: it emits effects, is fed
//! their results and the time, and decides everything, deadlines included.
//! The tokio [`driver`] runs them against native providers and stores; the
//! Node and Python bindings run the very same machines from their own event
//! loops. Every string a flow emits comes from [`messages`].

pub mod arguments;
pub mod begun;
pub mod driver;
pub mod effect_table;
pub mod effects;
pub mod errors;
pub mod fleet;
pub mod flows;
pub mod ledger;
pub mod memory;
pub mod messages;
pub mod model;
pub mod options;
pub mod passes;
pub mod provider_options;
#[cfg(any(feature = "docker", feature = "local", feature = "e2b", feature = "daytona", feature = "vercel"))]
pub mod providers;
pub mod reports;
pub mod start;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod stores;
pub mod wire;

pub use driver::{
    reclaim_sandbox, retry_leaks, sandbox_reclaimer, LogMeta, LogValue, ProgressCallback, ReclaimLogger,
    ReclaimOptions, SandboxInstanceStore, SandboxProvider, StopSignal,
};
pub use effects::{Misuse, SandboxReclaimFailed};
pub use errors::{BoxError, DestroyTimeout, ProviderError, ReclaimError, ReclaimerError, StoreError};
pub use fleet::{AuditEntry, DueLeak, FleetStore, LeakReason, ListedSandbox, ScheduledLeak, StoreFacts};
pub use flows::reclaim_all::{FleetReclaimReport, RecordOutcome, RecordReport};
pub use flows::reconcile::{
    Action, ActionCounts, ActionReason, ActionResult, ReconcileReport, ReportScope, SweepStatus,
};
pub use ledger::{LeakEntry, LeakLedger, LeakSummary, NewLeak, RetryOptions, RetrySummary};
pub use memory::InMemorySandboxInstanceStore;
pub use model::{InvalidRecord, ReclaimOutcome, RunRecord, RunStatus, SandboxInstanceRecord};
pub use passes::{reclaim_all, reconcile, FleetOptions, InvalidOption, ReconcileOptions, DEFAULT_OWNER};
#[cfg(feature = "daytona")]
pub use providers::{DaytonaConfig, DaytonaProvider};
#[cfg(feature = "docker")]
pub use providers::{DockerConfig, DockerProvider};
#[cfg(feature = "e2b")]
pub use providers::{E2bConfig, E2bProvider};
#[cfg(any(feature = "docker", feature = "local", feature = "e2b", feature = "daytona", feature = "vercel"))]
pub use providers::{ExecOutput, InvalidInput, Labels, ManagedSandboxProvider, SandboxHandle};
#[cfg(any(feature = "e2b", feature = "daytona", feature = "vercel"))]
pub use providers::{HostedError, HostedSandboxProvider};
#[cfg(feature = "vercel")]
pub use providers::{VercelConfig, VercelProvider};
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
