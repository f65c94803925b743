//! One sans-IO machine per flow, and the protocol they speak ([`effects`],
//! [`effect_table`]): every driver (tokio in the `sandbox-reclaim` crate's
//! `runtime`, the JS and Python drivers in the bindings) runs them through
//! [`Flow`]. [`start`] turns the options a host handed over into a flow's
//! input.
//!
//! Layer: may import everything below it (model, report, options,
//! contract); never the wire, and never a clock or any I/O: time comes in
//! as `now`, effects go out.
//!
//! Adding a flow: a machine here (its strings in [`crate::report::messages`]),
//! vectors in `tests/vectors/`, and declarations in the bindings.

pub mod effect_table;
pub mod effects;
mod outbox;
pub mod reclaim;
pub mod reclaim_all;
pub mod reconcile;
pub mod retry;
pub mod start;

pub use reclaim::{Reclaim, ReclaimApi, ReclaimInput};
pub use reclaim_all::{FleetReclaimReport, ReclaimAll, ReclaimAllInput, RecordOutcome, RecordReport};
pub use reconcile::{Reconcile, ReconcileInput, ReconcileReport};
pub use retry::{Retry, RetryInput};

use effects::Flow;

/// Any flow, for drivers that keep runs of several kinds side by side.
pub type BoxedFlow = Box<dyn Flow + Send>;
