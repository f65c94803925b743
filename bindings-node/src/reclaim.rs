//! What the JavaScript walker (lib/reclaim.cjs) needs from the core, fetched
//! once at load: the compiled reclaim programs (core/src/program.rs) and the
//! fixed texts around them. No native call happens per reclaim.

use napi::{Error, Result, Status};
use napi_derive::napi;
use sandbox_reclaim::machine::LogLevel;
use sandbox_reclaim::messages;
use sandbox_reclaim::program::{program_json, Api};

/// The compiled program of `api` (`'reclaimSandbox'` or `'sandboxReclaimer'`)
/// for a store with or without a leak ledger, as JSON.
#[napi]
pub fn reclaim_program(api: String, ledger: bool) -> Result<String> {
    let api = match api.as_str() {
        "reclaimSandbox" => Api::ReclaimSandbox,
        "sandboxReclaimer" => Api::SandboxReclaimer,
        other => return Err(Error::new(Status::InvalidArg, format!("unknown reclaim api {other:?}"))),
    };
    Ok(program_json(api, ledger))
}

/// `SandboxReclaimFailedError`'s message, built by the core.
#[napi]
pub fn reclaim_failed_message(run_id: String, sandbox_key: Option<String>) -> String {
    messages::reclaim_failed_message(&run_id, sandbox_key.as_deref())
}

/// Fixed names the walker checks input against, read once at load.
#[napi(object)]
pub struct Protocol {
    /// The logger methods a reclaim may call.
    pub levels: Vec<String>,
    /// `SandboxReclaimFailedError`'s `name`.
    pub error_name: String,
}

/// See [`Protocol`].
#[napi]
pub fn protocol() -> Protocol {
    Protocol {
        levels: [LogLevel::Warn, LogLevel::Errors, LogLevel::Sandbox].iter().map(|l| l.as_str().to_owned()).collect(),
        error_name: messages::RECLAIM_FAILED_ERROR_NAME.to_owned(),
    }
}
