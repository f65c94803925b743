//! The `sandbox-reclaim` command as the npm package runs it
//! (`bin/sandbox-reclaim.cjs` → `lib/cli.cjs`), over the command crate's
//! host entry points (`sandbox_reclaim_cli::host`):
//!
//! * [`run_cli`]: the whole command, exactly as the binary runs it, off the
//!   JS thread (on a thread of its own); resolves to the exit code.
//! * With `--providers` (JS providers), `lib/cli.cjs` drives the pass itself:
//!   [`host_plan`] resolves the flags and config, [`host_open`] opens the
//!   store and checks `--docker`/`--local` as the binary does, [`host_emit`]
//!   prints each report as the binary prints it, and [`host_fail`] prints a
//!   failure as the binary prints it. Every line the command prints comes from
//!   the command crate; the JS side only runs the pass.

use std::ffi::OsString;
use std::io::Write;

use clap::Parser;
use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Error, Result, Status};
use napi_derive::napi;
use sandbox_reclaim::options::Dialect;
use sandbox_reclaim_cli::args::{bare_docker, Cli};
use sandbox_reclaim_cli::error::Failure;
use sandbox_reclaim_cli::hosted::{HostedLoop, Rejection, Step};
use serde_json::{json, Value};

use crate::provider::{spawn_coded, Coded};
use crate::sql_store::SqlStore;

/// The code of a rejection whose failure is already printed: the JS side
/// exits with its `exitCode`.
pub const EXIT_CODE: &str = "SANDBOX_RECLAIM_EXIT";

/// Rust's stdout is line-buffered and never flushed at exit inside an
/// addon: flush what the command printed before JS goes on.
fn flush() {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
}

/// Runs the command with `args` (without the program name) exactly as the
/// binary does, on a thread of its own; resolves to its exit code.
///
/// Not on libuv's pool (an `AsyncTask`): the command exits the process
/// itself on a second SIGINT/SIGTERM (`exit(130)` from its runtime), and
/// Node's exit handlers wait for libuv's pool threads, which would then
/// wait for the command: the process would hang instead of exiting.
#[napi]
pub fn run_cli(env: &Env, args: Vec<String>) -> Result<PromiseRaw<'_, i32>> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("sandbox-reclaim".into())
        .spawn(move || {
            let code = sandbox_reclaim_cli::host::run_cli(args);
            flush();
            let _ = sender.send(code);
        })
        .map_err(|error| Error::new(Status::GenericFailure, format!("cannot start the command's thread: {error}")))?;
    spawn_coded(env, async move {
        receiver
            .await
            .map_err(|_| Coded::new("SANDBOX_RECLAIM_PANICKED", "the command's thread ended without an exit code"))
    })
}

/// The plan's `--e2b`, `--daytona`, `--vercel` providers, built natively
/// (no credential crosses to JS), in the plan's `hosted` order.
#[napi]
pub fn host_hosted_providers(plan: String) -> Result<Vec<crate::hosted_provider::NativeHostedProvider>> {
    let built =
        sandbox_reclaim_cli::host::host_hosted(&plan).map_err(|message| Error::new(Status::GenericFailure, message))?;
    Ok(built.into_iter().map(crate::hosted_provider::NativeHostedProvider::from_built).collect())
}

/// The plan's `--docker` and `--local` providers, configured as the binary
/// configures them, in that order.
#[napi]
pub fn host_managed_providers(plan: String) -> Result<Vec<crate::provider::NativeProvider>> {
    let configs = sandbox_reclaim_cli::host::host_managed(&plan)
        .map_err(|message| Error::new(Status::GenericFailure, message))?;
    // A provider that cannot be built fails as the binary's would (host_open checked it first).
    let failed = |error: Error<String>| Error::new(Status::GenericFailure, error.reason);
    let mut built = Vec::new();
    if let Some(docker) = configs.docker {
        built.push(crate::provider::NativeProvider::from_docker(docker).map_err(failed)?);
    }
    #[cfg(unix)]
    if let Some(local) = configs.local {
        built.push(crate::provider::NativeProvider::from_local(local).map_err(failed)?);
    }
    Ok(built)
}

/// `args` without `--providers VALUE` / `--providers=VALUE`, as the program's argv.
fn argv_without_providers(args: &[String]) -> Vec<OsString> {
    let mut argv = vec![OsString::from("sandbox-reclaim")];
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--providers" {
            args.next();
        } else if !arg.starts_with("--providers=") {
            argv.push(OsString::from(arg));
        }
    }
    bare_docker(argv)
}

/// What to run for `args` (without the program name), as JSON: the plan of
/// `sandbox_reclaim_cli::host::host_plan` (`providers` null: run
/// [`run_cli`] with its `args`), or `{"exitCode", "message"?}` when refused.
/// A refusal by clap (a bad flag, `--help`) is printed here exactly as the
/// binary prints it (no `message`); any other refusal comes back as the line
/// to print on stderr.
#[napi]
pub fn host_plan(args: Vec<String>) -> String {
    match sandbox_reclaim_cli::host::host_plan(args.clone()) {
        Ok(plan) => plan,
        Err(refused) => {
            // `--providers` itself refused (no value, twice): before clap runs.
            if !refused.message.starts_with("error: --providers") {
                if let Err(error) = Cli::try_parse_from(argv_without_providers(&args)) {
                    let _ = error.print();
                    flush();
                    return json!({ "exitCode": error.exit_code() }).to_string();
                }
            }
            json!({ "exitCode": refused.exit_code, "message": format!("sandbox-reclaim: {}", refused.message) })
                .to_string()
        }
    }
}

fn parse_plan(plan: &str) -> Result<Value> {
    serde_json::from_str(plan).map_err(|error| Error::new(Status::InvalidArg, format!("malformed plan: {error}")))
}

/// The command's name in JSON documents (`reconcile`, `orphans`).
fn command_of(plan: &Value) -> String {
    plan["command"].as_str().unwrap_or("reconcile").to_owned()
}

fn print_failure(command: &str, json: bool, failure: &Failure, pass: Option<u64>) -> i32 {
    let code = sandbox_reclaim_cli::hosted::print_failure(command, json, failure, pass);
    flush();
    code
}

/// Opens the plan's store and checks `--docker`/`--local` as the binary
/// does (`sandbox_reclaim_cli::host::host_open`); resolves to the native
/// store. On failure the failure is printed as the binary prints it and the
/// Promise rejects with code `SANDBOX_RECLAIM_EXIT` and `exitCode`.
#[napi]
pub fn host_open(env: &Env, plan: String) -> Result<PromiseRaw<'_, SqlStore>> {
    spawn_coded(env, async move {
        let opened = sandbox_reclaim_cli::host::host_open(&plan).await;
        flush();
        opened
            .map(SqlStore::from_command_store)
            .map_err(|code| Coded::new(EXIT_CODE, format!("exit {code}")).with_number("exitCode", f64::from(code)))
    })
}

/// Prints `report` (the core's report as JSON, camelCase) for `plan` exactly
/// as the binary prints a pass; `pass`: its number with `--every`. Answers
/// the exit code (0, or 1 when something is still leaking).
#[napi]
pub fn host_emit(plan: String, report: String, pass: Option<u32>) -> Result<i32> {
    let code = sandbox_reclaim_cli::host::host_emit(&plan, &report, pass.map(u64::from))
        .map_err(|message| Error::new(Status::InvalidArg, message))?;
    flush();
    Ok(code)
}

/// Checks what `lib/cli.cjs` found in the providers module (a JSON
/// description, `sandbox_reclaim_cli::providers_module::Found`) against the
/// plan; every rule and message is the command crate's. Answers `null` when
/// the pass may run, else the exit code (the refusal already printed).
#[napi]
pub fn host_check_module(plan: String, found: String) -> Result<Option<i32>> {
    let code = sandbox_reclaim_cli::providers_module::host_check_module(&plan, &found)
        .map_err(|message| Error::new(Status::InvalidArg, message))?;
    flush();
    Ok(code)
}

/// A failure the JS side met (`{kind: 'usage'|'unavailable'|'failed',
/// flag?, what?, message}`), printed exactly as the binary prints its
/// failures; with `pass`, as a failed `--every` pass. Answers the exit code.
#[napi]
pub fn host_fail(plan: String, failure: String, pass: Option<u32>) -> Result<i32> {
    let plan = parse_plan(&plan)?;
    let failure: Value = serde_json::from_str(&failure)
        .map_err(|error| Error::new(Status::InvalidArg, format!("malformed failure: {error}")))?;
    let text = |field: &str| failure[field].as_str().unwrap_or_default().to_owned();
    let failure = match failure["kind"].as_str() {
        Some("usage") => Failure::usage(text("flag"), text("message")),
        Some("unavailable") => Failure::unavailable(text("what"), text("message")),
        _ => Failure::failed(text("message")),
    };
    Ok(print_failure(&command_of(&plan), plan["json"] == json!(true), &failure, pass.map(u64::from)))
}

/// The command's pass loop for `--providers` (`sandbox_reclaim_cli::hosted`):
/// `lib/cli.cjs` reports what happened and does the step each call answers
/// (`{"step": "pass", "number"}`, `{"step": "sleep", "untilMs"}`,
/// `{"step": "exit", "code"}`, as JSON); every decision, line and exit code
/// is the command crate's.
#[napi]
pub struct HostLoop {
    inner: HostedLoop,
}

fn step(step: Step) -> String {
    flush();
    serde_json::to_string(&step).unwrap_or_default()
}

#[napi]
impl HostLoop {
    #[napi(constructor)]
    pub fn new(plan: String) -> Result<Self> {
        let inner = HostedLoop::new(&plan, Dialect::Node).map_err(|message| Error::new(Status::InvalidArg, message))?;
        Ok(Self { inner })
    }

    /// The first step, at `now` (epoch ms).
    #[napi]
    pub fn start(&mut self, now: f64) -> String {
        step(self.inner.start(now as u64))
    }

    /// The pass resolved with `report` (its JSON).
    #[napi]
    pub fn passed(&mut self, report: String, now: f64) -> Result<String> {
        let next = self.inner.passed(&report, now as u64).map_err(|message| Error::new(Status::InvalidArg, message))?;
        Ok(step(next))
    }

    /// The pass rejected: `kind` `option` (a TypeError), `store` (a
    /// SandboxStoreError) or `other`, with the error's message.
    #[napi]
    pub fn failed(&mut self, kind: String, message: String, now: f64) -> Result<String> {
        let rejection = Rejection::parse(&kind)
            .ok_or_else(|| Error::new(Status::InvalidArg, format!("unknown rejection kind {kind:?}")))?;
        Ok(step(self.inner.failed(rejection, &message, now as u64)))
    }

    /// The sleep ended (its time, or a signal woke it).
    #[napi]
    pub fn woke(&mut self, now: f64) -> String {
        step(self.inner.woke(now as u64))
    }

    /// SIGINT/SIGTERM: undefined (stop the pass, wake the sleep), or the code to exit with at once.
    #[napi]
    pub fn signal(&mut self, name: String) -> Option<i32> {
        let code = self.inner.signal(&name);
        flush();
        code
    }
}
