//! The command as the npm and pip packages run it.
//!
//! * [`run_cli`]: the whole command, exactly as the binary runs it, for
//!   `npx sandbox-reclaim` and the `sandbox-reclaim` console script.
//! * With `--providers` (a JS module / a Python `module:attribute` naming
//!   host-language providers), the pass runs on that host's driver: the
//!   host asks [`host_plan`] what to run (flags and config resolved here, so
//!   every language reads them alike), runs `reconcile` itself with its
//!   providers plus `--docker`/`--local`, and hands each report to
//!   [`host_emit`], which prints it exactly as the binary would and answers
//!   the exit code.

use std::ffi::OsString;

use clap::Parser;
use sandbox_reclaim::{ReconcileReport, ReportScope};
use serde_json::{json, Value};

use crate::args::{bare_docker, Cli, Command};
use crate::commands::reconcile::emit_to;
use crate::config::{self, StoreSpec};
use crate::error::EXIT_USAGE;
use crate::output::Mode;
use crate::pass_flags::millis;
use crate::pass_options::pass_options;

/// Runs the command with `args` (without the program name); answers its
/// exit code. Usage errors and `--help` print as the binary prints them.
pub fn run_cli(args: Vec<String>) -> i32 {
    let argv = std::iter::once(OsString::from("sandbox-reclaim")).chain(args.into_iter().map(OsString::from));
    let cli = match Cli::try_parse_from(bare_docker(argv)) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return error.exit_code();
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("sandbox-reclaim: error: cannot start the async runtime: {error}");
            return crate::error::EXIT_UNAVAILABLE;
        }
    };
    let code = runtime.block_on(crate::run(cli));
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    code
}

/// Why a host plan was refused: the exit code and the message to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub exit_code: i32,
    pub message: String,
}

fn refused(exit_code: i32, message: impl Into<String>) -> Refused {
    Refused { exit_code, message: message.into() }
}

/// Splits `--providers VALUE` / `--providers=VALUE` off `args`.
fn take_providers(args: Vec<String>) -> Result<(Option<String>, Vec<String>), Refused> {
    let mut providers = None;
    let mut rest = Vec::with_capacity(args.len());
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let value = if arg == "--providers" {
            match args.next() {
                Some(value) if !value.is_empty() => value,
                _ => return Err(refused(EXIT_USAGE, "error: --providers needs a value (a module with the providers)")),
            }
        } else if let Some(value) = arg.strip_prefix("--providers=") {
            value.to_owned()
        } else {
            rest.push(arg);
            continue;
        };
        if providers.replace(value).is_some() {
            return Err(refused(EXIT_USAGE, "error: --providers given twice"));
        }
    }
    Ok((providers, rest))
}

/// What a host runs for `args` (without the program name), as JSON:
///
/// ```text
/// { "providers": "./providers.mjs" | null,   // null: run `run_cli(args)` instead
///   "args": [...],                           // args without --providers
///   "command": "reconcile" | "orphans" | ..., // others never need host providers
///   "store": {"kind": "sqlite", "path"} | {"kind": "postgres", "url", "schema"},
///   "storeDescribed": "...", "connectTimeoutMs": n,
///   "docker": {"url": null | "...", "name"} | null, "local": {"baseDir", "name"} | null,
///   "owner": null | "...", "host": null | "...", "json": bool, "everyMs": null | n,
///   "dryRun": bool, "retryLeaks": bool, "concurrency": null | n, "destroyTimeoutMs",
///   "orphanGraceMs", "registryRetentionMs", "maxIdleMs", "budgetMs": null | n }
/// ```
///
/// The pass options are the command's: `orphans` has `retryLeaks` false and
/// no `maxIdleMs`, so a host passes them on as they are.
pub fn host_plan(args: Vec<String>) -> Result<String, Refused> {
    let (providers, rest) = take_providers(args)?;
    let Some(providers) = providers else {
        return Ok(json!({ "providers": null, "args": rest }).to_string());
    };
    let argv = std::iter::once(OsString::from("sandbox-reclaim")).chain(rest.iter().map(OsString::from));
    let cli = Cli::try_parse_from(bare_docker(argv))
        .map_err(|error| refused(error.exit_code(), error.render().to_string().trim_end().to_owned()))?;
    let fail = |failure: crate::error::Failure| refused(failure.exit_code(), format!("error: {failure}"));
    let file = match &cli.global.config {
        Some(path) => config::load(path).map_err(fail)?,
        None => config::ConfigFile::default(),
    };
    let settings = config::resolve(&cli.global, file).map_err(fail)?;
    if settings.metrics_addr.is_some() {
        return Err(refused(
            EXIT_USAGE,
            format!(
                "error: --metrics-addr: {}",
                sandbox_reclaim::report::messages::command::METRICS_NOT_WITH_PROVIDERS
            ),
        ));
    }
    let (dry_run, pass) = match &cli.command {
        Command::Reconcile(args) => (args.dry_run, settings.pass.with_reconcile(args)),
        Command::Orphans(args) => (args.dry_run, settings.pass.with_orphans(args)),
        _ => return Ok(json!({ "providers": null, "args": rest }).to_string()),
    };
    let every = pass.every;
    let store = match &settings.store {
        StoreSpec::Sqlite(path) => json!({ "kind": "sqlite", "path": path }),
        StoreSpec::Postgres { url, schema } => json!({ "kind": "postgres", "url": url, "schema": schema }),
    };
    let described = crate::store::describe(&settings.store);
    if settings.default_store {
        if let StoreSpec::Sqlite(path) = &settings.store {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|error| {
                    refused(crate::error::EXIT_UNAVAILABLE, format!("error: {}: {error}", parent.display()))
                })?;
            }
        }
    }
    let options = pass_options(&settings, &pass, dry_run, matches!(cli.command, Command::Reconcile(_)));
    let mut plan = json!({
        "providers": providers,
        "args": rest,
        "command": cli.command.name(),
        "store": store,
        "storeDescribed": described,
        "connectTimeoutMs": millis(settings.connect_timeout),
        "docker": settings.docker.as_ref().map(|docker| json!({ "url": docker.url, "name": docker.name })),
        "local": settings.local.as_ref().map(|local| json!({ "baseDir": local.base_dir, "name": local.name })),
        // Names and flags only: a credential never enters the plan.
        "hosted": settings.hosted.iter().map(|spec| json!({ "flag": format!("--{}", spec.vendor.spec().key), "name": spec.name })).collect::<Vec<_>>(),
        "json": settings.json,
        "everyMs": every.map_or(Value::Null, millis),
    });
    if let Value::Object(plan) = &mut plan {
        plan.extend(options);
    }
    Ok(plan.to_string())
}

/// Prints `report` (the core's JSON report) for `plan` exactly as the
/// binary would, and answers the exit code (0, or 1 when still leaking).
/// `pass`: the pass number with `--every`.
pub fn host_emit(plan: &str, report: &str, pass: Option<u64>) -> Result<i32, String> {
    let plan: Value = serde_json::from_str(plan).map_err(|error| format!("malformed plan: {error}"))?;
    let report: ReconcileReport = serde_json::from_str(report).map_err(|error| format!("malformed report: {error}"))?;
    let command = match plan["command"].as_str() {
        Some("orphans") => "orphans",
        _ => "reconcile",
    };
    let view = if command == "orphans" { ReportScope::Orphans } else { ReportScope::Pass };
    let mode = Mode::detect(plan["json"] == json!(true));
    let described = plan["storeDescribed"].as_str().unwrap_or_default();
    Ok(emit_to(mode, command, described, &report, view, pass))
}

/// The settings the plan was made from: `plan.args` (already without
/// `--providers`) parsed and resolved again exactly as [`host_plan`] did.
fn settings_of(plan: &Value) -> Result<config::Settings, crate::error::Failure> {
    let args = plan["args"].as_array().into_iter().flatten().filter_map(Value::as_str).map(OsString::from);
    let argv = std::iter::once(OsString::from("sandbox-reclaim")).chain(args);
    let cli = Cli::try_parse_from(bare_docker(argv))
        .map_err(|error| crate::error::Failure::failed(error.render().to_string().trim_end().to_owned()))?;
    let file = match &cli.global.config {
        Some(path) => config::load(path)?,
        None => config::ConfigFile::default(),
    };
    config::resolve(&cli.global, file)
}

/// The plan's hosted providers (`--e2b`, `--sprites`, ...), built natively from
/// the flags, config and environment (so no credential crosses to the host),
/// in the plan's `hosted` order. [`host_open`] already checked their access.
pub fn host_hosted(plan: &str) -> Result<Vec<Box<dyn sandbox_reclaim::HostedSandboxProvider>>, String> {
    let plan: Value = serde_json::from_str(plan).map_err(|error| format!("malformed plan: {error}"))?;
    let settings = settings_of(&plan).map_err(|failure| failure.to_string())?;
    let owner = settings.owner.clone().unwrap_or_else(|| sandbox_reclaim::DEFAULT_OWNER.to_owned());
    settings
        .hosted
        .iter()
        .map(|spec| crate::providers::build_hosted(spec, &owner).map_err(|failure| failure.to_string()))
        .collect()
}

/// The configs of the plan's `--docker` and `--local` providers, exactly as
/// the binary configures them; a host builds its provider objects from them
/// ([`host_open`] already pinged the engine and checked the directory).
pub struct ManagedConfigs {
    pub docker: Option<sandbox_reclaim::DockerConfig>,
    #[cfg(unix)]
    pub local: Option<sandbox_reclaim::LocalConfig>,
}

/// The plan's `--docker` and `--local` configs (see [`ManagedConfigs`]).
pub fn host_managed(plan: &str) -> Result<ManagedConfigs, String> {
    let plan: Value = serde_json::from_str(plan).map_err(|error| format!("malformed plan: {error}"))?;
    let settings = settings_of(&plan).map_err(|failure| failure.to_string())?;
    let owner = settings.owner.clone().unwrap_or_else(|| sandbox_reclaim::DEFAULT_OWNER.to_owned());
    Ok(ManagedConfigs {
        docker: settings.docker.as_ref().map(|docker| crate::providers::docker_config(docker, &owner)),
        #[cfg(unix)]
        local: settings.local.as_ref().map(|local| crate::providers::local_config(local, &owner)),
    })
}

/// Opens the plan's store as the binary does (within `--connect-timeout`,
/// with the binary's messages), then checks `--docker` (the engine answers
/// its ping) and `--local` (the base directory is usable) as the binary does.
/// On failure, prints it as the binary prints it and answers the exit code
/// (3 unavailable, 2 usage).
pub async fn host_open(plan: &str) -> Result<crate::store::Store, i32> {
    let plan: Value = serde_json::from_str(plan).map_err(|_| EXIT_USAGE)?;
    let command = plan["command"].as_str().unwrap_or("reconcile").to_owned();
    let json = plan["json"] == json!(true);
    let exit = |failure: crate::error::Failure| crate::output::print_failure(&command, json, &failure, None);
    let settings = settings_of(&plan).map_err(exit)?;
    let store = crate::store::Store::open(&settings.store, settings.default_store, settings.connect_timeout)
        .await
        .map_err(exit)?;
    if let Err(failure) = crate::providers::Providers::build(&settings, None, false).await {
        store.close().await;
        return Err(exit(failure));
    }
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Value {
        let args = args.iter().map(|arg| (*arg).to_owned()).collect();
        serde_json::from_str(&host_plan(args).expect("a plan")).unwrap()
    }

    #[test]
    fn the_plan_carries_the_registry_retention() {
        let base = ["--providers=./p.mjs", "--store=sqlite:/nonexistent/s.db", "--local=/nonexistent/l"];
        let with = |extra: &[&str]| plan(&[&base[..], extra].concat());
        assert_eq!(with(&["reconcile", "--registry-retention=90d"])["registryRetentionMs"], 7_776_000_000_u64);
        assert_eq!(with(&["orphans", "--registry-retention=0s"])["registryRetentionMs"], 0);
        assert_eq!(with(&["reconcile"])["registryRetentionMs"], Value::Null, "absent: the core's default");
        let args = [&base[..], &["reconcile", "--registry-retention=soon"]].concat();
        let refused = host_plan(args.into_iter().map(String::from).collect()).unwrap_err();
        assert_eq!(refused.exit_code, EXIT_USAGE);
        assert!(refused.message.contains("--registry-retention"), "{refused:?}");
    }

    #[test]
    fn the_plan_carries_every_pass_flag_under_its_node_name() {
        let base = ["--providers=./p.mjs", "--store=sqlite:/nonexistent/s.db", "--local=/nonexistent/l"];
        let with = |extra: &[&str]| plan(&[&base[..], extra].concat());
        let planned = with(&["reconcile", "--lease=2m", "--backoff=1s", "--per-provider-concurrency=3"]);
        assert_eq!((planned["leaseMs"].clone(), planned["backoffMs"].clone()), (json!(120_000), json!(1000)));
        assert_eq!(planned["perProviderConcurrency"], 3);
        assert_eq!(with(&["orphans", "--lease=1m"])["leaseMs"], 60_000);
        let args = [&base[..], &["orphans", "--max-idle=1h"]].concat();
        assert_eq!(host_plan(args.into_iter().map(String::from).collect()).unwrap_err().exit_code, EXIT_USAGE);
    }

    #[test]
    fn the_plan_carries_the_audit_retention() {
        let base = ["--providers=./p.mjs", "--store=sqlite:/nonexistent/s.db", "--local=/nonexistent/l"];
        let with = |extra: &[&str]| plan(&[&base[..], extra].concat());
        assert_eq!(with(&["reconcile", "--audit-retention=1d"])["auditRetentionMs"], 86_400_000_u64);
        assert_eq!(with(&["orphans", "--audit-retention=0s"])["auditRetentionMs"], 0);
        assert_eq!(with(&["reconcile"])["auditRetentionMs"], Value::Null, "absent: the core's default");
        let args = [&base[..], &["reconcile", "--audit-retention=soon"]].concat();
        let refused = host_plan(args.into_iter().map(String::from).collect()).unwrap_err();
        assert_eq!(refused.exit_code, EXIT_USAGE);
        assert!(refused.message.contains("--audit-retention"), "{refused:?}");
    }
}
