//! A pass's options as the command takes them, as flags and as
//! `[reconcile]` keys, read from the core's spec table
//! (`proto/src/options/flows.rs`): a flag's name, value, range, default and
//! help come from its spec, so an option the core's reconcile pass gains is
//! a flag (and a config key) here with no code of its own. The command
//! decides the rest itself: `--dry-run`, the global `--owner` and `--host`,
//! and whether leaks are retried (`reconcile` or `orphans`).
//!
//! A value is kept as the pass plan carries it (Node's spelling: counts as
//! numbers, durations in milliseconds), and the core checks it again on the
//! one path every host's options take (`pass_options::check_plan_options`).

use std::collections::BTreeMap;
use std::time::Duration;

use clap::{Arg, ArgMatches};
use serde_json::{json, Value};

use sandbox_reclaim::options::flows::{self, Spec};
use sandbox_reclaim::options::OptionId;
use sandbox_reclaim::report::messages;

use crate::heading::Heading;
use crate::time::parse_duration_at_least;

/// A pass's option values by their plan key (Node's spelling).
pub type PassValues = BTreeMap<&'static str, Value>;

/// The subcommands that run a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    Reconcile,
    Orphans,
}

impl Pass {
    /// The core's reconcile options this subcommand takes as flags, in the core's order.
    pub fn specs(self) -> impl Iterator<Item = Spec> {
        flows::reconcile::ALL.into_iter().filter(move |spec| self.takes(spec.name().id))
    }

    fn takes(self, id: OptionId) -> bool {
        match id {
            // The command's own: --dry-run, the subcommand, the global --owner and --host.
            OptionId::DryRun | OptionId::RetryLeaks | OptionId::Owner | OptionId::Host => false,
            // `orphans` only sweeps: no idle expiry, no leak retries.
            OptionId::MaxIdle | OptionId::Limit | OptionId::Backoff | OptionId::MaxBackoff => self == Self::Reconcile,
            _ => true,
        }
    }

    /// `values` without what this subcommand does not take (a `[reconcile]`
    /// key `orphans` ignores, say).
    pub fn only_its_own(self, values: &PassValues) -> PassValues {
        let keys: Vec<&str> = self.specs().map(|spec| spec.name().node).collect();
        values.iter().filter(|(key, _)| keys.contains(key)).map(|(key, value)| (*key, value.clone())).collect()
    }
}

/// The flag of a pass option (`--orphan-grace`), as `flag_of` names it in a refusal.
pub fn flag_of(id: OptionId) -> Option<String> {
    Pass::Reconcile.specs().find(|spec| spec.name().id == id).map(|spec| format!("--{}", key(spec)))
}

/// Its key in the config file's `[reconcile]` (and its flag without the dashes).
pub fn key(spec: Spec) -> String {
    spec.name().python.replace('_', "-")
}

/// The clap argument of `spec`: its value parsed (and its range kept) as the core states it.
fn arg(spec: Spec) -> Arg {
    let arg = Arg::new(spec.name().python).long(key(spec)).allow_hyphen_values(true).help(help(spec));
    let arg = arg.help_heading(Heading::Pass);
    match spec {
        Spec::Count(flows::Count { min, .. }) | Spec::MaybeCount(flows::MaybeCount { min, .. }) => {
            arg.value_name("N").value_parser(clap::value_parser!(u32).range(i64::from(min)..))
        }
        Spec::Millis(flows::Millis { min_ms, .. }) | Spec::MaybeMillis(flows::MaybeMillis { min_ms, .. }) => {
            arg.value_name("DURATION").value_parser(move |text: &str| parse_duration_at_least(text, min_ms))
        }
        Spec::Text(_) | Spec::MaybeText(_) | Spec::Flag(_) => arg.value_name("VALUE"),
    }
}

/// The spec's doc as help: option names as flags, its default in brackets.
fn help(spec: Spec) -> String {
    let mut doc = spec.doc().to_owned();
    for other in Pass::Reconcile.specs() {
        doc = doc.replace(&format!("`{}`", other.name().python), &format!("--{}", key(other)));
    }
    let (doc, absent) = match doc.split_once(" Absent: ") {
        Some((doc, absent)) => (doc.to_owned(), Some(absent.trim_end_matches('.').to_owned())),
        None => (doc, None),
    };
    let default = match spec {
        Spec::Count(count) => Some(count.default.to_string()),
        Spec::Millis(millis) => Some(short_duration(millis.default_ms)),
        Spec::Text(text) => Some(text.default.to_owned()),
        Spec::Flag(flag) => Some(flag.default.to_string()),
        _ => absent,
    };
    match default {
        Some(default) => format!("{} [default: {default}]", doc.trim_end_matches('.')),
        None => doc,
    }
}

/// `ms` in the largest unit that holds it whole, as the flags are written (`90d`, `10m`, `1500ms`).
fn short_duration(ms: u64) -> String {
    let units = [(86_400_000, "d"), (3_600_000, "h"), (60_000, "m"), (1000, "s")];
    match units.iter().find(|(size, _)| ms >= *size && ms % size == 0) {
        Some((size, unit)) => format!("{}{unit}", ms / size),
        None => format!("{ms}ms"),
    }
}

/// What clap read for `pass`'s flags, as plan values.
fn read(pass: Pass, matches: &ArgMatches) -> PassValues {
    let mut values = PassValues::new();
    for spec in pass.specs() {
        let id = spec.name().python;
        let value = match spec {
            Spec::Count(_) | Spec::MaybeCount(_) => matches.get_one::<u32>(id).map(|count| json!(count)),
            Spec::Millis(_) | Spec::MaybeMillis(_) => matches.get_one::<Duration>(id).map(|duration| millis(*duration)),
            Spec::Text(_) | Spec::MaybeText(_) | Spec::Flag(_) => matches.get_one::<String>(id).map(|text| json!(text)),
        };
        if let Some(value) = value {
            values.insert(spec.name().node, value);
        }
    }
    values
}

/// A duration as the plan carries it: whole milliseconds (saturating; the core refuses what is too long).
pub fn millis(duration: Duration) -> Value {
    json!(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

/// `[reconcile]`'s keys read as plan values: what `key` names, of the type
/// its spec says (a count, or a duration string), within its range;
/// `Err((key, message))` names the key.
pub fn from_config(table: &toml::Table) -> Result<PassValues, (String, String)> {
    let specs: Vec<Spec> = Pass::Reconcile.specs().collect();
    let mut values = PassValues::new();
    for (name, value) in table {
        let Some(spec) = specs.iter().copied().find(|spec| key(*spec) == *name) else {
            let known: Vec<String> = specs.iter().map(|spec| format!("`{}`", key(*spec))).collect();
            return Err((name.clone(), messages::command::unknown_pass_key(&known)));
        };
        let refused = |message: String| (name.clone(), message);
        let parsed = match (spec, value) {
            (
                Spec::Count(flows::Count { min, .. }) | Spec::MaybeCount(flows::MaybeCount { min, .. }),
                toml::Value::Integer(count),
            ) => match u32::try_from(*count) {
                Ok(count) if count >= min => json!(count),
                _ => return Err(refused(messages::command::pass_count_range(min, *count))),
            },
            (
                Spec::Millis(flows::Millis { min_ms, .. }) | Spec::MaybeMillis(flows::MaybeMillis { min_ms, .. }),
                toml::Value::String(text),
            ) => millis(parse_duration_at_least(text, min_ms).map_err(refused)?),
            (Spec::Text(_) | Spec::MaybeText(_), toml::Value::String(text)) => json!(text),
            (Spec::Count(_) | Spec::MaybeCount(_), other) => {
                return Err(refused(messages::command::pass_count_type(other.type_str())))
            }
            (_, other) => return Err(refused(messages::command::pass_duration_type(other.type_str()))),
        };
        values.insert(spec.name().node, parsed);
    }
    Ok(values)
}

macro_rules! pass_flags {
    ($(#[$doc:meta])* $name:ident, $pass:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct $name(pub PassValues);

        impl clap::FromArgMatches for $name {
            fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
                Ok(Self(read($pass, matches)))
            }

            fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
                self.0.extend(read($pass, matches));
                Ok(())
            }
        }

        impl clap::Args for $name {
            fn augment_args(command: clap::Command) -> clap::Command {
                $pass.specs().fold(command, |command, spec| command.arg(arg(spec)))
            }

            fn augment_args_for_update(command: clap::Command) -> clap::Command {
                Self::augment_args(command)
            }
        }
    };
}

pass_flags!(
    /// `reconcile`'s pass flags.
    ReconcileFlags,
    Pass::Reconcile
);
pass_flags!(
    /// `orphans`' pass flags.
    OrphansFlags,
    Pass::Orphans
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_a_pass_takes_as_a_flag_is_a_count_or_a_duration() {
        // A flag- or text-valued option would need its own spelling on the
        // command line (`--no-...`); the core has none yet.
        for spec in Pass::Reconcile.specs() {
            assert!(
                matches!(spec, Spec::Count(_) | Spec::MaybeCount(_) | Spec::Millis(_) | Spec::MaybeMillis(_)),
                "{spec:?}"
            );
        }
    }

    #[test]
    fn help_says_the_cores_default() {
        assert_eq!(
            help(Spec::Millis(flows::reconcile::ORPHAN_GRACE)),
            "Spare unreferenced sandboxes younger than this (by their creation time as the provider lists it) \
             [default: 10m]"
        );
        assert_eq!(
            help(Spec::MaybeCount(flows::reconcile::PER_PROVIDER_CONCURRENCY)),
            "Destroys in flight per provider [default: --concurrency]"
        );
        assert!(help(Spec::Millis(flows::reconcile::AUDIT_RETENTION)).ends_with("[default: 90d]"));
        assert_eq!(flag_of(OptionId::OrphanGrace).as_deref(), Some("--orphan-grace"));
        assert_eq!(flag_of(OptionId::Owner), None, "a global flag, named by the command's table");
    }

    #[test]
    fn config_keys_are_read_by_their_spec() {
        let table: toml::Table = toml::from_str("concurrency = 4\norphan-grace = \"5m\"\nmax-idle = \"1h\"").unwrap();
        let values = from_config(&table).unwrap();
        assert_eq!(values.get("concurrency"), Some(&json!(4)));
        assert_eq!(values.get("orphanGraceMs"), Some(&json!(300_000)));
        assert_eq!(Pass::Orphans.only_its_own(&values).get("maxIdleMs"), None, "orphans expire nothing");
        for (text, key) in [
            ("concurrensy = 4", "concurrensy"),
            ("concurrency = 0", "concurrency"),
            ("concurrency = \"4\"", "concurrency"),
            ("budget = \"soon\"", "budget"),
            ("destroy-timeout = \"0s\"", "destroy-timeout"),
            ("lease = 5", "lease"),
        ] {
            let table: toml::Table = toml::from_str(text).unwrap();
            assert_eq!(from_config(&table).unwrap_err().0, key, "{text}");
        }
    }
}
