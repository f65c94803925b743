//! One sans-IO machine per flow; every driver (tokio in [`crate::driver`],
//! the JS and Python drivers in the bindings) runs them through [`Flow`].
//!
//! Adding a flow: a machine here (its strings in [`crate::messages`]),
//! vectors in `tests/vectors/`, and declarations in the bindings.

mod outbox;
pub mod reclaim;
pub mod reclaim_all;
pub mod reconcile;
pub mod retry;

pub use reclaim::{Reclaim, ReclaimApi, ReclaimInput};
pub use reclaim_all::{FleetReclaimReport, ReclaimAll, ReclaimAllInput, RecordOutcome, RecordReport};
pub use reconcile::{Reconcile, ReconcileInput, ReconcileReport};
pub use retry::{Retry, RetryInput};

use crate::effects::Flow;

/// Any flow, for drivers that keep runs of several kinds side by side.
pub type BoxedFlow = Box<dyn Flow + Send>;
