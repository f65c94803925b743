//! Node binding of `sandbox-reclaim` (napi-rs).
//!
//! * [`flow`]: the core's flow machines for the generic JS driver
//!   (`lib/driver.cjs`): every reclaim, reclaimer and leak retry runs there;
//! * [`cli`]: the `sandbox-reclaim` command for `npx` (`bin/`, `lib/cli.cjs`);
//! * [`memory_store`], [`sql_store`] and [`provider`]: the core's in-memory,
//!   SQLite/PostgreSQL stores and Docker/local providers, which a flow calls
//!   like any JS store or provider.

pub mod cli;
pub mod flow;
pub mod hosted_provider;
pub mod memory_store;
pub mod packed;
pub mod provider;
pub mod sql_store;
