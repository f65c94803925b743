//! Every option a flow takes, checked once, here: its name in each host's
//! spelling, its default, its range and the error text (from
//! [`crate::report::messages`]).
//!
//! A binding reads the option properties the core names
//! ([`option_names`]) from the user's options object, once each, and hands
//! them over as plain values ([`HostOptions::parse`]: a JSON object, with
//! `{"$type": "..."}` for a value that is no JSON scalar). The core answers
//! the machine's input with its defaults, or a [`HostOptionError`] naming the
//! field as the user wrote it, which the binding raises as its own
//! `TypeError` / `ValueError`. Node spells options camelCase with
//! milliseconds (`destroyTimeoutMs`); Python snake_case with seconds
//! (`destroy_timeout`).
//!
//! Layer: every option and argument checked once. May import
//! [`crate::model`] and [`crate::report`] (for the error texts); never the
//! contracts, the machines or the wire.

pub mod arguments;
pub mod flows;
pub mod provider;
mod retry;
pub mod stores;

pub use flows::{option_names, respell, FlowOptions};
pub use retry::RetryOptions;

use serde_json::{Map, Value};

use crate::model::MAX_SAFE_INTEGER;
use crate::report::messages;

/// The defaults of every option, for every host and the Rust API.
pub mod defaults {
    /// Records in progress (or destroys in flight) at once.
    pub const CONCURRENCY: u32 = 16;
    /// Most ledger entries a reconcile pass claims per provider (and stale records it reads).
    pub const LIMIT: u32 = 1000;
    /// Most ledger entries a leak retry claims.
    pub const RETRY_LIMIT: u32 = 100;
    /// How long a claim (ledger entries, a sweep) holds.
    pub const LEASE_MS: u64 = 300_000;
    /// Unreferenced sandboxes younger than this are spared by the sweep.
    pub const ORPHAN_GRACE_MS: u64 = 600_000;
    /// The first backoff after a failed retry (doubling per failure).
    pub const BACKOFF_MS: u64 = 30_000;
    /// The longest backoff.
    pub const MAX_BACKOFF_MS: u64 = 3_600_000;
    /// How long the registry keeps naming a sandbox as ours after its
    /// record was last written or deleted (30 days).
    pub const REGISTRY_RETENTION_MS: u64 = 30 * 24 * 3_600_000;
    /// How long the audit log keeps a row before the sweep's holder prunes
    /// it (90 days).
    pub const AUDIT_RETENTION_MS: u64 = 90 * 24 * 3_600_000;
    /// The owner namespace sandboxes are swept under unless a provider or the
    /// pass names another (the managed providers' default too).
    pub const OWNER: &str = "sandbox-reclaim";
    /// Audit rows a store's `listAudit` / `list_audit` answers unless told.
    pub const AUDIT_LIMIT: usize = 1000;
}

/// How a host spells and scales its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// camelCase, durations in milliseconds (`destroyTimeoutMs`); every error a `TypeError`.
    Node,
    /// snake_case, durations in seconds (`destroy_timeout`); a wrong type is a
    /// `TypeError`, a value out of range a `ValueError`.
    Python,
}

/// What is wrong with an option value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// Not of the option's type (Python: `TypeError`).
    Type,
    /// Of the right type, out of range (Python: `ValueError`).
    Range,
}

/// An option refused before anything ran: `field` as the user spelled it,
/// `option` which one it is (`None`: the options object itself). A command
/// names the flag behind `option` from a table keyed by it, never by text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HostOptionError {
    pub field: String,
    pub option: Option<OptionId>,
    pub problem: Problem,
    pub message: String,
}

/// Every option a host hands the core, by identity (its spellings are in its [`Name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OptionId {
    DryRun,
    RetryLeaks,
    Concurrency,
    PerProviderConcurrency,
    DestroyTimeout,
    Budget,
    OrphanGrace,
    MaxIdle,
    Limit,
    Lease,
    Backoff,
    MaxBackoff,
    RegistryRetention,
    AuditRetention,
    Owner,
    Host,
    Providers,
    // A hosted provider's options (`provider.rs`).
    ProviderName,
    ApiKey,
    ApiUrl,
    /// A vendor's own option (a scope or a credential part), named in the
    /// vendor's module; told apart by its name.
    Vendor,
    PageSize,
    RequestTimeout,
    SweepUnlabelled,
    MaxListingPages,
    MaxListingItems,
}

/// An option the Rust API refused: the very refusal a Node host gets (the
/// Rust API's options go through the same checks, spelled as Node spells
/// them, durations in milliseconds).
pub type InvalidOption = HostOptionError;

/// One option's name in each host's spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Name {
    pub id: OptionId,
    pub node: &'static str,
    pub python: &'static str,
    /// A duration: milliseconds in Node, seconds in Python.
    pub duration: bool,
}

/// An option that is not a duration, in each host's spelling.
pub const fn name(id: OptionId, node: &'static str, python: &'static str) -> Name {
    Name { id, node, python, duration: false }
}

/// A duration option: milliseconds in Node, seconds in Python.
pub const fn duration(id: OptionId, node: &'static str, python: &'static str) -> Name {
    Name { id, node, python, duration: true }
}

pub const DRY_RUN: Name = name(OptionId::DryRun, "dryRun", "dry_run");
pub const RETRY_LEAKS: Name = name(OptionId::RetryLeaks, "retryLeaks", "retry_leaks");
pub const CONCURRENCY: Name = name(OptionId::Concurrency, "concurrency", "concurrency");
pub const PER_PROVIDER_CONCURRENCY: Name =
    name(OptionId::PerProviderConcurrency, "perProviderConcurrency", "per_provider_concurrency");
pub const DESTROY_TIMEOUT: Name = duration(OptionId::DestroyTimeout, "destroyTimeoutMs", "destroy_timeout");
pub const BUDGET: Name = duration(OptionId::Budget, "budgetMs", "budget");
pub const ORPHAN_GRACE: Name = duration(OptionId::OrphanGrace, "orphanGraceMs", "orphan_grace");
pub const MAX_IDLE: Name = duration(OptionId::MaxIdle, "maxIdleMs", "max_idle");
pub const LIMIT: Name = name(OptionId::Limit, "limit", "limit");
pub const LEASE: Name = duration(OptionId::Lease, "leaseMs", "lease");
pub const BACKOFF: Name = duration(OptionId::Backoff, "backoffMs", "backoff");
pub const MAX_BACKOFF: Name = duration(OptionId::MaxBackoff, "maxBackoffMs", "max_backoff");
pub const REGISTRY_RETENTION: Name = duration(OptionId::RegistryRetention, "registryRetentionMs", "registry_retention");
pub const AUDIT_RETENTION: Name = duration(OptionId::AuditRetention, "auditRetentionMs", "audit_retention");
pub const OWNER: Name = name(OptionId::Owner, "owner", "owner");
pub const HOST: Name = name(OptionId::Host, "host", "host");
pub const PROVIDERS: Name = name(OptionId::Providers, "providers", "providers");

impl Dialect {
    /// `name` as this host spells it.
    pub fn spell(self, name: Name) -> &'static str {
        match self {
            Self::Node => name.node,
            Self::Python => name.python,
        }
    }

    /// How an error names the field: `options.limit` (Node), `` `limit` `` (Python).
    pub fn field(self, name: Name) -> String {
        match self {
            Self::Node => format!("options.{}", name.node),
            Self::Python => format!("`{}`", name.python),
        }
    }
}

/// A plain value as the host had it.
#[derive(Debug, Clone, PartialEq)]
enum Plain {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Text(String),
    /// A string holding a lone UTF-16 surrogate: it cannot be carried exactly.
    LoneSurrogate,
    /// Anything else, by the host's type name (`object`, `bytes`, ...).
    Other(String),
}

impl Plain {
    fn of(value: &Value) -> Self {
        match value {
            Value::Null => Self::Null,
            Value::Bool(flag) => Self::Bool(*flag),
            Value::Number(number) => match (number.as_i64(), number.as_u64()) {
                (Some(int), _) => Self::Int(i128::from(int)),
                (None, Some(int)) => Self::Int(i128::from(int)),
                _ => Self::Float(number.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(text) => Self::Text(text.clone()),
            Value::Object(marked) => Self::marked(marked),
            Value::Array(_) => Self::Other("array".to_owned()),
        }
    }

    /// The markers a binding uses for what JSON cannot say.
    fn marked(object: &Map<String, Value>) -> Self {
        let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        if object.contains_key("$loneSurrogate") {
            Self::LoneSurrogate
        } else if object.contains_key("$float") {
            match text("$float").as_str() {
                "inf" => Self::Float(f64::INFINITY),
                "-inf" => Self::Float(f64::NEG_INFINITY),
                _ => Self::Float(f64::NAN),
            }
        } else if object.contains_key("$hugeInt") {
            Self::Int(if text("$hugeInt") == "-" { i128::MIN } else { i128::MAX })
        } else {
            Self::Other(object.get("$type").and_then(Value::as_str).unwrap_or("object").to_owned())
        }
    }

    /// The host's type name, as Python's `type(value).__name__` says it.
    fn python_type(&self) -> String {
        match self {
            Self::Null => "NoneType".to_owned(),
            Self::Bool(_) => "bool".to_owned(),
            Self::Int(_) => "int".to_owned(),
            Self::Float(_) => "float".to_owned(),
            Self::Text(_) | Self::LoneSurrogate => "str".to_owned(),
            Self::Other(name) => name.clone(),
        }
    }

    /// The value as Python's `repr` shows a number.
    fn python_repr(&self) -> String {
        match self {
            Self::Int(int) if *int == i128::MAX || *int == i128::MIN => "an int beyond 64 bits".to_owned(),
            Self::Int(int) => int.to_string(),
            Self::Float(float) if float.is_nan() => "nan".to_owned(),
            Self::Float(float) if float.is_infinite() => if *float > 0.0 { "inf" } else { "-inf" }.to_owned(),
            Self::Float(float) if float.fract() == 0.0 && float.abs() < 1e16 => format!("{float:.1}"),
            Self::Float(float) => float.to_string(),
            other => other.python_type(),
        }
    }
}

/// Whether Python's `None` means "the default" for an option: it does for
/// those whose Python default is `None`; for the others it is a wrong type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoneMeansDefault {
    Yes,
    No,
}

/// The options a host handed over, read by name.
#[derive(Debug, Clone)]
pub struct HostOptions {
    dialect: Dialect,
    values: Map<String, Value>,
}

impl HostOptions {
    /// Parses the binding's JSON object of plain option values. A malformed
    /// document is a binding bug, reported as a type error on `options`.
    /// The options as values already parsed (the Rust API's, in Node's
    /// spelling): the same checks as a host's, without a JSON round trip.
    pub fn from_values(values: Map<String, Value>, dialect: Dialect) -> Self {
        Self { dialect, values }
    }

    pub fn parse(json: &str, dialect: Dialect) -> Result<Self, HostOptionError> {
        match serde_json::from_str::<Value>(json) {
            Ok(Value::Object(values)) => Ok(Self { dialect, values }),
            _ => Err(HostOptionError {
                field: "options".to_owned(),
                option: None,
                problem: Problem::Type,
                message: messages::option_not_an_object(),
            }),
        }
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The value given for `name`; `None` when absent (or Python's `None` where it means the default).
    fn given(&self, name: Name, none: NoneMeansDefault) -> Option<Plain> {
        let plain = Plain::of(self.values.get(self.dialect.spell(name))?);
        let default = plain == Plain::Null && self.dialect == Dialect::Python && none == NoneMeansDefault::Yes;
        (!default).then_some(plain)
    }

    fn refuse(&self, name: Name, problem: Problem, message: String) -> HostOptionError {
        HostOptionError { field: self.dialect.spell(name).to_owned(), option: Some(name.id), problem, message }
    }

    /// A whole count from `minimum` below 2^32.
    pub fn count(&self, name: Name, minimum: u32, none: NoneMeansDefault) -> Result<Option<u32>, HostOptionError> {
        self.count_up_to(name, minimum, u32::MAX, none)
    }

    /// A whole count from `minimum` to `maximum`.
    pub fn count_up_to(
        &self,
        name: Name,
        minimum: u32,
        maximum: u32,
        none: NoneMeansDefault,
    ) -> Result<Option<u32>, HostOptionError> {
        let Some(plain) = self.given(name, none) else { return Ok(None) };
        let field = self.dialect.field(name);
        let within = |int: i128| int >= i128::from(minimum) && int <= i128::from(maximum);
        let node_message = |too_big: bool| match (maximum == u32::MAX, too_big) {
            (true, true) => messages::node_count_below_2_32(&field, minimum),
            (true, false) => messages::node_whole_number(&field, minimum),
            (false, _) => messages::node_whole_number_between(&field, u64::from(minimum), u64::from(maximum)),
        };
        match (self.dialect, &plain) {
            (_, Plain::Int(int)) if within(*int) => Ok(Some(*int as u32)),
            (Dialect::Node, Plain::Int(int)) => {
                Err(self.refuse(name, Problem::Type, node_message(*int > i128::from(maximum))))
            }
            (Dialect::Node, _) => Err(self.refuse(name, Problem::Type, node_message(false))),
            (Dialect::Python, Plain::Int(_)) => Err(self.refuse(
                name,
                Problem::Range,
                messages::python_whole_number_range(
                    &field,
                    u64::from(minimum),
                    u64::from(maximum),
                    &plain.python_repr(),
                ),
            )),
            (Dialect::Python, _) => {
                Err(self.refuse(name, Problem::Type, messages::python_must_be(&field, "an int", &plain.python_type())))
            }
        }
    }

    /// A duration, as whole milliseconds from `minimum_ms` (Node: whole
    /// milliseconds; Python: seconds, rounded half to even to milliseconds).
    pub fn millis(&self, name: Name, minimum_ms: u64, none: NoneMeansDefault) -> Result<Option<u64>, HostOptionError> {
        self.millis_up_to(name, minimum_ms, MAX_SAFE_INTEGER, none)
    }

    /// A duration from `minimum_ms` to `maximum_ms` (at most 2^53-1), as [`Self::millis`].
    pub fn millis_up_to(
        &self,
        name: Name,
        minimum_ms: u64,
        maximum_ms: u64,
        none: NoneMeansDefault,
    ) -> Result<Option<u64>, HostOptionError> {
        let Some(plain) = self.given(name, none) else { return Ok(None) };
        let field = self.dialect.field(name);
        match self.dialect {
            Dialect::Node => match plain {
                Plain::Int(int) if int >= i128::from(minimum_ms) && int <= i128::from(maximum_ms) => {
                    Ok(Some(int as u64))
                }
                _ if maximum_ms >= MAX_SAFE_INTEGER => {
                    Err(self.refuse(name, Problem::Type, messages::node_whole_number(&field, minimum_ms)))
                }
                _ => Err(self.refuse(
                    name,
                    Problem::Type,
                    messages::node_whole_number_between(&field, minimum_ms, maximum_ms),
                )),
            },
            Dialect::Python => {
                let seconds = match plain {
                    Plain::Int(int) => int as f64,
                    Plain::Float(float) => float,
                    _ => {
                        let got = plain.python_type();
                        return Err(self.refuse(
                            name,
                            Problem::Type,
                            messages::python_must_be(&field, "a number of seconds", &got),
                        ));
                    }
                };
                let max_seconds = maximum_ms.min(MAX_SAFE_INTEGER) as f64 / 1000.0;
                // NaN fails both comparisons, so it is refused too.
                if !(0.0..=max_seconds).contains(&seconds) || seconds.is_nan() {
                    let message = messages::python_seconds_range(&field, max_seconds, &plain.python_repr());
                    return Err(self.refuse(name, Problem::Range, message));
                }
                let millis = (seconds * 1000.0).round_ties_even() as u64;
                if millis < minimum_ms {
                    let message = messages::python_at_least_seconds(&field, minimum_ms, &plain.python_repr());
                    return Err(self.refuse(name, Problem::Range, message));
                }
                Ok(Some(millis))
            }
        }
    }

    /// A boolean.
    pub fn flag(&self, name: Name, none: NoneMeansDefault) -> Result<Option<bool>, HostOptionError> {
        match self.given(name, none) {
            None => Ok(None),
            Some(Plain::Bool(flag)) => Ok(Some(flag)),
            Some(other) => Err(self.type_error(name, &other, "a boolean", "a bool")),
        }
    }

    /// A string that crossed exactly.
    pub fn text(&self, name: Name, none: NoneMeansDefault) -> Result<Option<String>, HostOptionError> {
        match self.given(name, none) {
            None => Ok(None),
            Some(Plain::Text(text)) => Ok(Some(text)),
            Some(Plain::LoneSurrogate) => {
                let field = self.dialect.field(name);
                let message = messages::lone_surrogate(&field, self.dialect == Dialect::Node);
                Err(self.refuse(name, Problem::Type, message))
            }
            Some(other) => Err(self.type_error(name, &other, "a string", "a str")),
        }
    }

    fn type_error(&self, name: Name, got: &Plain, node_type: &str, python_type: &str) -> HostOptionError {
        let field = self.dialect.field(name);
        let message = match self.dialect {
            Dialect::Node => messages::node_must_be(&field, node_type),
            Dialect::Python => messages::python_must_be(&field, python_type, &got.python_type()),
        };
        self.refuse(name, Problem::Type, message)
    }

    /// The providers' names: at least one, each distinct (records are routed by name).
    pub fn provider_names(&self, names: &[String]) -> Result<(), HostOptionError> {
        let field = self.dialect.field(PROVIDERS);
        if names.is_empty() {
            return Err(self.refuse(PROVIDERS, Problem::Range, messages::no_provider(&field)));
        }
        let mut seen = std::collections::HashSet::new();
        match names.iter().find(|name| !seen.insert(name.as_str())) {
            Some(shared) => Err(self.refuse(
                PROVIDERS,
                Problem::Range,
                messages::providers_share_a_name(&field, shared, self.dialect == Dialect::Python),
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_values_respell_for_python_in_seconds_and_back() {
        let given = serde_json::json!({"orphanGraceMs": 1500, "registryRetentionMs": 1, "concurrency": 4,
                                        "dryRun": true, "owner": null, "unknown": 1});
        let python = respell(FlowOptions::Reconcile, given.as_object().unwrap(), Dialect::Python);
        let expected =
            serde_json::json!({"dry_run": true, "concurrency": 4, "orphan_grace": 1.5, "registry_retention": 0.001});
        assert_eq!(Value::Object(python.clone()), expected);
        let parsed = HostOptions::parse(&Value::Object(python).to_string(), Dialect::Python).unwrap();
        assert_eq!(parsed.millis(ORPHAN_GRACE, 0, NoneMeansDefault::No).unwrap(), Some(1500));
        assert_eq!(parsed.millis(REGISTRY_RETENTION, 0, NoneMeansDefault::No).unwrap(), Some(1));
        let node = respell(FlowOptions::Reconcile, given.as_object().unwrap(), Dialect::Node);
        assert_eq!(node.get("orphanGraceMs"), Some(&Value::from(1500)));
    }

    fn node(json: &str) -> HostOptions {
        HostOptions::parse(json, Dialect::Node).unwrap()
    }

    fn python(json: &str) -> HostOptions {
        HostOptions::parse(json, Dialect::Python).unwrap()
    }

    #[test]
    fn node_counts_are_whole_numbers_below_2_32() {
        let options = node(r#"{"concurrency": 4, "limit": 4294967296, "perProviderConcurrency": 1.5}"#);
        assert_eq!(options.count(CONCURRENCY, 1, NoneMeansDefault::No), Ok(Some(4)));
        let too_big = options.count(LIMIT, 1, NoneMeansDefault::No).unwrap_err();
        assert_eq!(too_big.message, "options.limit must be a whole number >= 1 and < 2^32");
        let fraction = options.count(PER_PROVIDER_CONCURRENCY, 1, NoneMeansDefault::No).unwrap_err();
        assert_eq!((fraction.field.as_str(), fraction.problem), ("perProviderConcurrency", Problem::Type));
        assert_eq!(node("{}").count(CONCURRENCY, 1, NoneMeansDefault::No), Ok(None));
    }

    #[test]
    fn node_null_is_a_wrong_type_never_the_default() {
        let error = node(r#"{"maxIdleMs": null}"#).millis(MAX_IDLE, 1, NoneMeansDefault::Yes).unwrap_err();
        assert_eq!(error.message, "options.maxIdleMs must be a whole number >= 1");
    }

    #[test]
    fn python_durations_are_seconds_rounded_to_milliseconds() {
        let options =
            python(r#"{"lease": 1.5, "budget": 0.0004, "backoff": 0, "max_idle": null, "orphan_grace": null}"#);
        assert_eq!(options.millis(LEASE, 1, NoneMeansDefault::No), Ok(Some(1500)));
        assert_eq!(options.millis(BACKOFF, 0, NoneMeansDefault::No), Ok(Some(0)));
        assert_eq!(options.millis(MAX_IDLE, 1, NoneMeansDefault::Yes), Ok(None));
        let tiny = options.millis(BUDGET, 1, NoneMeansDefault::Yes).unwrap_err();
        assert_eq!(
            (tiny.problem, tiny.message.as_str()),
            (Problem::Range, "`budget` must be at least 0.001 seconds, got 0.0004")
        );
        let none = options.millis(ORPHAN_GRACE, 0, NoneMeansDefault::No).unwrap_err();
        assert_eq!(
            (none.problem, none.message.as_str()),
            (Problem::Type, "`orphan_grace` must be a number of seconds, got NoneType")
        );
        let nan = python(r#"{"budget": {"$float": "nan"}}"#).millis(BUDGET, 1, NoneMeansDefault::Yes).unwrap_err();
        assert_eq!(nan.problem, Problem::Range);
    }

    #[test]
    fn python_counts_refuse_bools_and_floats_by_type_and_big_ints_by_range() {
        let options = python(r#"{"concurrency": true, "limit": 10.0, "per_provider_concurrency": {"$hugeInt": "+"}}"#);
        let flag = options.count(CONCURRENCY, 1, NoneMeansDefault::No).unwrap_err();
        assert_eq!(flag.message, "`concurrency` must be an int, got bool");
        assert_eq!(options.count(LIMIT, 1, NoneMeansDefault::No).unwrap_err().problem, Problem::Type);
        assert_eq!(
            options.count(PER_PROVIDER_CONCURRENCY, 1, NoneMeansDefault::Yes).unwrap_err().problem,
            Problem::Range
        );
    }

    #[test]
    fn strings_must_cross_exactly() {
        let error = node(r#"{"host": {"$loneSurrogate": true}}"#).text(HOST, NoneMeansDefault::Yes).unwrap_err();
        assert_eq!(
            error.message,
            "options.host must not contain a lone UTF-16 surrogate (it cannot be carried exactly)"
        );
        let error = python(r#"{"owner": 7}"#).text(OWNER, NoneMeansDefault::Yes).unwrap_err();
        assert_eq!(error.message, "`owner` must be a str, got int");
    }

    #[test]
    fn providers_are_named_distinctly() {
        let options = node("{}");
        assert_eq!(options.provider_names(&["a".into(), "b".into()]), Ok(()));
        let shared = options.provider_names(&["a".into(), "a".into()]).unwrap_err();
        assert_eq!(shared.message, "options.providers: two providers share the name \"a\"");
        assert_eq!(
            python("{}").provider_names(&[]).unwrap_err().message,
            "`providers` must name at least one provider"
        );
    }
}
