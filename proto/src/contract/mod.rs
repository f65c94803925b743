//! What a flow asks of the outside world, as Rust traits: a provider, an
//! instance store (with its leak ledger and fleet methods), a logger, and
//! the errors they answer with. The runtime crate's stores and providers
//! implement them; the bindings implement them over host objects.
//!
//! Layer: may import [`crate::model`], [`crate::report`] (error texts) and
//! [`crate::options`] (a refused option is an error); never the machines or
//! the wire. Traits only: no runtime, no I/O (`async_trait` is a macro).

pub mod errors;
pub mod host;
mod logger;
mod provider;
mod store;

pub use logger::{LogMeta, LogValue, ReclaimLogger};
pub use provider::SandboxProvider;
pub use store::{FleetStore, LeakLedger, SandboxInstanceStore};
