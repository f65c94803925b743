//! # sandbox-reclaim-proto
//!
//! The sans-IO half of `sandbox-reclaim`, as `quinn-proto` is to `quinn`:
//! every decision the reclaimer makes, and nothing that performs I/O or
//! reads a clock. The runtime crate (`sandbox-reclaim`: the tokio driver,
//! stores, providers) and the Node and Python bindings build on it, and
//! Cargo keeps the direction: this crate depends on no runtime.
//!
//! Its layers, bottom up; each may import only the ones before it (`make
//! lint` checks this, see `scripts/check_module_graph.py`):
//!
//! 1. [`model`]: the data (records, outcomes, ledger entries, listed sandboxes);
//! 2. [`report`]: what users read (every message, the fleet reports);
//! 3. [`options`]: every option and argument, checked and defaulted once;
//! 4. [`contract`]: the provider, store and logger traits and their errors;
//! 5. [`machine`]: the effect protocol and one machine per flow;
//! 6. [`wire`]: the flat form in which machines cross into a host's driver.

pub mod contract;
pub mod machine;
pub mod model;
pub mod options;
pub mod report;
pub mod wire;
