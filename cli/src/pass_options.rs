//! A pass's options on their way to the core: the plan's option keys
//! (Node's spelling, milliseconds) built from the command's settings, the
//! core's own check of them (a refusal names the flag behind its option's
//! id, from `error::flag_of`). Shared by
//! the binary's `reconcile` / `orphans` and the `--providers` loop, so both
//! refuse the same values naming the same flag. Imports the settings, the
//! command's `Failure` and the core only (never `commands`, `host` or `hosted`).

use serde_json::{json, Value};

use sandbox_reclaim::machine::start::{self, HostProvider, PassStart};
use sandbox_reclaim::options::{self, Dialect, FlowOptions, HostOptions};

use crate::config::{PassSettings, Settings};
use crate::error::{flag_of, Failure};

/// A duration as the plan carries it: whole milliseconds (saturating), or `null`.
pub fn millis(duration: Option<std::time::Duration>) -> Value {
    duration.map_or(Value::Null, |duration| json!(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)))
}

/// A pass's options as the core's host path reads them (Node's spelling,
/// milliseconds): what a `--providers` plan hands its host, and what the
/// binary has the core check ([`check_plan_options`]) before
/// it opens anything, so both refuse the same values naming the same flag.
pub fn pass_options(
    settings: &Settings,
    pass: &PassSettings,
    dry_run: bool,
    reconcile: bool,
    max_idle: Option<std::time::Duration>,
    budget: Option<std::time::Duration>,
) -> serde_json::Map<String, Value> {
    let options = json!({
        "owner": settings.owner,
        "host": settings.host,
        "dryRun": dry_run,
        "retryLeaks": reconcile,
        "concurrency": pass.concurrency,
        "destroyTimeoutMs": millis(pass.destroy_timeout),
        "orphanGraceMs": millis(pass.orphan_grace),
        "registryRetentionMs": millis(pass.registry_retention),
        "auditRetentionMs": millis(pass.audit_retention),
        "maxIdleMs": millis(max_idle),
        "budgetMs": millis(budget),
    });
    match options {
        Value::Object(options) => options,
        _ => serde_json::Map::new(),
    }
}

/// The plan's pass options (`host_plan`), checked by the core before any pass
/// exactly as a `dialect` host's `reconcile` will check them (its spelling,
/// its message): a refusal names its flag through the option's id. (A
/// stand-in provider: the providers module is the host's, and what it holds
/// is `--providers`'s business.)
pub fn check_plan_options(plan: &Value, dialect: Dialect) -> Result<(), Failure> {
    let empty = serde_json::Map::new();
    let given = options::respell(FlowOptions::Reconcile, plan.as_object().unwrap_or(&empty), dialect);
    let stand_in = vec![HostProvider { name: "plan".to_owned(), can_list: true, owner: None }];
    let pass = PassStart { progress: false, stopped: false, host_name: None, registry: false, prune: false };
    HostOptions::parse(&Value::Object(given).to_string(), dialect)
        .and_then(|options| start::reconcile(&options, stand_in, pass, 0))
        .map(drop)
        .map_err(|refusal| Failure::usage(flag_of(refusal.option, "--providers"), refusal.message))
}
