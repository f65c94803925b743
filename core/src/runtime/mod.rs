//! The tokio runtime: the [driver] that runs any machine of
//! `sandbox-reclaim-proto` against native providers, stores and loggers, and
//! the async Rust API on it ([`api`]: one-record flows; [`passes`]: fleet
//! passes).
//!
//! Layer: may import the proto crate (through the crate root's re-exports)
//! and nothing else of this crate: stores and providers build on the
//! contracts, never on the driver, and the driver never names a store or a
//! provider.

pub mod api;
pub mod begun;
pub mod clock;
pub mod driver;
pub mod passes;
