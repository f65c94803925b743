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

/// A pass's options as the core's host path reads them (Node's spelling,
/// milliseconds): what a `--providers` plan hands its host, what the binary
/// has the core check ([`check_plan_options`]) before it opens anything, so
/// both refuse the same values naming the same flag, and what the binary's
/// pass runs with. `pass` holds the subcommand's own option values
/// (`pass_flags`); the command adds what it decides itself.
pub fn pass_options(
    settings: &Settings,
    pass: &PassSettings,
    dry_run: bool,
    reconcile: bool,
) -> serde_json::Map<String, Value> {
    let mut options: serde_json::Map<String, Value> =
        pass.values.iter().map(|(key, value)| ((*key).to_owned(), value.clone())).collect();
    options.insert("dryRun".to_owned(), json!(dry_run));
    options.insert("retryLeaks".to_owned(), json!(reconcile));
    for (key, value) in [("owner", &settings.owner), ("host", &settings.host)] {
        if let Some(value) = value {
            options.insert(key.to_owned(), json!(value));
        }
    }
    options
}

/// The plan's pass options (`host_plan`), checked by the core before any pass
/// exactly as a `dialect` host's `reconcile` will check them (its spelling,
/// its message): a refusal names its flag through the option's id. (A
/// stand-in provider: the providers module is the host's, and what it holds
/// is `--providers`'s business.)
pub fn check_plan_options(plan: &Value, dialect: Dialect) -> Result<(), Failure> {
    let empty = serde_json::Map::new();
    let given = options::respell(FlowOptions::Reconcile, plan.as_object().unwrap_or(&empty), dialect);
    let stand_in = vec![HostProvider { name: "plan".to_owned(), can_list: true, can_lookup: false, owner: None }];
    let pass =
        PassStart { progress: false, stopped: false, host_name: None, registry: false, prune: false, scoped: false };
    HostOptions::parse(&Value::Object(given).to_string(), dialect)
        .and_then(|options| start::reconcile(&options, stand_in, pass, 0))
        .map(drop)
        .map_err(|refusal| Failure::usage(flag_of(refusal.option, "--providers"), refusal.message))
}
