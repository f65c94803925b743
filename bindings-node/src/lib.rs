//! Node binding of `sandbox-reclaim` (napi-rs).
//!
//! The JavaScript facade (`lib/reclaim.cjs`) walks the core's compiled
//! reclaim programs ([`reclaim`], fetched once at load): a reclaim makes no
//! native call, so a JS store or provider costs what it costs in plain JS.
//!
//! * [`memory_store`]: the native in-memory store; [`hot_store`]: its
//!   synchronous lookup and delete as raw napi calls, which the walker makes
//!   without awaiting them;
//! * [`sql_store`] and [`provider`]: the core's SQLite/PostgreSQL stores and
//!   Docker/local providers, with Promise-returning methods on napi's tokio
//!   runtime, and `retryLeaks` when both sides are native.

pub mod hot_store;
pub mod memory_store;
pub mod provider;
mod ready;
pub mod reclaim;
pub mod sql_store;

/// The reclaim machine allocates a few small strings per step; mimalloc
/// serves those several times faster than the system allocator (measured with
/// `node bench/node/bench.mjs`), and only this addon's Rust code uses it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
