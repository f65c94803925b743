//! The data every flow reads and writes: run and instance records and
//! outcomes (`record.rs`, re-exported here), what a fleet pass lists and
//! audits ([`fleet`]), the leak ledger's entries ([`ledger`]).
//!
//! Layer: the bottom one. Plain data with its serde form; imports nothing
//! else of this crate.

pub mod fleet;
pub mod ledger;
mod record;

pub use record::*;
