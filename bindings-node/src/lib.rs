//! Node binding of `sandbox-reclaim` (napi-rs).
//!
//! The JavaScript facade (`lib/reclaim.cjs`) is a small generic interpreter of
//! the core's sans-IO machine: each native call feeds one host answer, runs
//! the machine to its next host step and writes that step, with any log lines
//! around it, as a few integers into a registered `Int32Array`
//! ([`program`]). Host objects are then called from plain JavaScript, so a JS
//! store or provider costs what it costs natively and no threadsafe function
//! is involved.
//!
//! * [`session`]: live machines by handle, fed by integers (strings travel as
//!   per-reclaim symbols);
//! * [`raw`]: the per-step entry points as raw napi callbacks;
//! * [`memory_store`]: the native in-memory store, whose steps are answered
//!   inside the same native call, without materialising its records in JS.

pub mod memory_store;
pub mod program;
pub mod raw;
mod ready;
pub mod session;

/// The reclaim machine allocates a few small strings per step; mimalloc
/// serves those several times faster than the system allocator (measured with
/// `node bench/node/bench.mjs`), and only this addon's Rust code uses it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
