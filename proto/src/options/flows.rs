//! Each flow's plain-valued options as data: which options it takes, in the
//! order they are checked, each with its range, its default and its doc.
//!
//! This is the one place an option of a flow is written. The flow's start
//! (`machine/start.rs`) reads its values through these specs, so a default
//! or a range lives here once; the command builds its pass flags and
//! `[reconcile]` keys from them (`cli/src/pass_flags.rs`); and
//! `scripts/gen_declarations.py` reads this file (each spec's kind, minimum,
//! default and doc) to write the hosts' declarations: the TypeScript
//! `...Settings` interfaces in `index.d.ts`, the Python keyword arguments
//! (and their doc lines) in `_flows.py` and the Rust API's option fields in
//! `core/src/runtime/passes.rs`. A doc says what the option does, in no
//! unit: each host adds the unit, the range and the default in its spelling.
//!
//! A spec is a kind's constructor with the option's [`Name`], its minimum
//! and default (where the kind has them) and its doc, a plain string
//! literal: the generator reads them with a pattern.

use serde_json::{Map, Value};

use super::{defaults, Dialect, HostOptionError, HostOptions, Name, NoneMeansDefault};

/// The flows whose options a host hands over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowOptions {
    /// `reclaimSandbox` / `sandboxReclaimer` (only when the caller gives a deadline).
    Reclaim,
    ReclaimAll,
    Reconcile,
    RetryLeaks,
}

impl FlowOptions {
    /// Parses the flow's name as the bindings say it (`reclaim`, `reclaimAll`, `reconcile`, `retryLeaks`).
    pub fn parse(flow: &str) -> Option<Self> {
        match flow {
            "reclaim" => Some(Self::Reclaim),
            "reclaimAll" => Some(Self::ReclaimAll),
            "reconcile" => Some(Self::Reconcile),
            "retryLeaks" => Some(Self::RetryLeaks),
            _ => None,
        }
    }

    /// The plain-valued options the flow takes, in the order they are
    /// checked, with their ranges and defaults (below).
    pub fn specs(self) -> &'static [Spec] {
        match self {
            Self::Reclaim => &reclaim::ALL,
            Self::ReclaimAll => &reclaim_all::ALL,
            Self::Reconcile => &reconcile::ALL,
            Self::RetryLeaks => &retry_leaks::ALL,
        }
    }

    /// The names of [`Self::specs`], in order.
    pub fn names(self) -> impl Iterator<Item = Name> {
        self.specs().iter().map(|spec| spec.name())
    }
}

/// `flow`'s options as given in the Node spelling (camelCase, durations in
/// milliseconds: what the command's pass plan holds), respelled for
/// `dialect` (Python: snake_case, seconds). Options absent or null are left
/// out; nothing is checked here (the flow's start checks what it is given).
pub fn respell(flow: FlowOptions, node_values: &Map<String, Value>, dialect: Dialect) -> Map<String, Value> {
    let mut respelled = Map::new();
    for name in flow.names() {
        let value = match node_values.get(name.node) {
            None | Some(Value::Null) => continue,
            Some(Value::Number(millis)) if name.duration && dialect == Dialect::Python => {
                millis.as_f64().map_or(Value::Null, |millis| Value::from(millis / 1000.0))
            }
            Some(value) => value.clone(),
        };
        respelled.insert(dialect.spell(name).to_owned(), value);
    }
    respelled
}

/// The option names of `flow` in `dialect`'s spelling: what a binding reads
/// from the user's options object (each once) and hands to [`HostOptions`].
pub fn option_names(flow: FlowOptions, dialect: Dialect) -> Vec<&'static str> {
    flow.names().map(|name| dialect.spell(name)).collect()
}

/// A boolean option.
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    pub name: Name,
    /// What it does, in no unit: each host's declaration adds its unit, range and default.
    pub doc: &'static str,
    pub default: bool,
}

/// A whole count from `min` below 2^32.
#[derive(Debug, Clone, Copy)]
pub struct Count {
    pub name: Name,
    /// What it does, in no unit: each host's declaration adds its unit, range and default.
    pub doc: &'static str,
    pub min: u32,
    pub default: u32,
}

/// A whole count from `min` below 2^32, unset unless given (Python: `None`).
#[derive(Debug, Clone, Copy)]
pub struct MaybeCount {
    pub name: Name,
    /// What it does, in no unit: each host's declaration adds its unit, range and default.
    pub doc: &'static str,
    pub min: u32,
}

/// A duration in whole milliseconds from `min_ms` (Python: seconds).
#[derive(Debug, Clone, Copy)]
pub struct Millis {
    pub name: Name,
    /// What it does, in no unit: each host's declaration adds its unit, range and default.
    pub doc: &'static str,
    pub min_ms: u64,
    pub default_ms: u64,
}

/// A duration as [`Millis`], unset unless given (Python: `None`).
#[derive(Debug, Clone, Copy)]
pub struct MaybeMillis {
    pub name: Name,
    /// What it does, in no unit: each host's declaration adds its unit, range and default.
    pub doc: &'static str,
    pub min_ms: u64,
}

/// A string that must cross exactly (Python's `None`, too, means the default).
#[derive(Debug, Clone, Copy)]
pub struct Text {
    pub name: Name,
    /// What it does, in no unit: each host's declaration adds its unit, range and default.
    pub doc: &'static str,
    pub default: &'static str,
}

/// A string that must cross exactly, decided by the flow unless given
/// (e.g. the machine's host name).
#[derive(Debug, Clone, Copy)]
pub struct MaybeText {
    pub name: Name,
    /// What it does, in no unit: each host's declaration adds its unit, range and default.
    pub doc: &'static str,
}

/// One option of one flow.
#[derive(Debug, Clone, Copy)]
pub enum Spec {
    Flag(Flag),
    Count(Count),
    MaybeCount(MaybeCount),
    Millis(Millis),
    MaybeMillis(MaybeMillis),
    Text(Text),
    MaybeText(MaybeText),
}

impl Spec {
    /// Its doc: what it does, in no unit.
    pub fn doc(self) -> &'static str {
        match self {
            Self::Flag(Flag { doc, .. })
            | Self::Count(Count { doc, .. })
            | Self::MaybeCount(MaybeCount { doc, .. })
            | Self::Millis(Millis { doc, .. })
            | Self::MaybeMillis(MaybeMillis { doc, .. })
            | Self::Text(Text { doc, .. })
            | Self::MaybeText(MaybeText { doc, .. }) => doc,
        }
    }

    pub fn name(self) -> Name {
        match self {
            Self::Flag(Flag { name, .. })
            | Self::Count(Count { name, .. })
            | Self::MaybeCount(MaybeCount { name, .. })
            | Self::Millis(Millis { name, .. })
            | Self::MaybeMillis(MaybeMillis { name, .. })
            | Self::Text(Text { name, .. })
            | Self::MaybeText(MaybeText { name, .. }) => name,
        }
    }
}

const fn flag(name: Name, default: bool, doc: &'static str) -> Flag {
    Flag { name, doc, default }
}

const fn count(name: Name, min: u32, default: u32, doc: &'static str) -> Count {
    Count { name, doc, min, default }
}

const fn maybe_count(name: Name, min: u32, doc: &'static str) -> MaybeCount {
    MaybeCount { name, doc, min }
}

const fn millis(name: Name, min_ms: u64, default_ms: u64, doc: &'static str) -> Millis {
    Millis { name, doc, min_ms, default_ms }
}

const fn maybe_millis(name: Name, min_ms: u64, doc: &'static str) -> MaybeMillis {
    MaybeMillis { name, doc, min_ms }
}

const fn text(name: Name, default: &'static str, doc: &'static str) -> Text {
    Text { name, doc, default }
}

const fn maybe_text(name: Name, doc: &'static str) -> MaybeText {
    MaybeText { name, doc }
}

// Python's `None` means the default exactly where the Python default is
// `None`: the options unset unless given, and every string.
use NoneMeansDefault::{No, Yes};

impl HostOptions {
    /// `spec`'s value, its default when not given.
    pub fn flag_of(&self, spec: Flag) -> Result<bool, HostOptionError> {
        Ok(self.flag(spec.name, No)?.unwrap_or(spec.default))
    }

    /// `spec`'s value, its default when not given.
    pub fn count_of(&self, spec: Count) -> Result<u32, HostOptionError> {
        Ok(self.count(spec.name, spec.min, No)?.unwrap_or(spec.default))
    }

    /// `spec`'s value when given.
    pub fn maybe_count_of(&self, spec: MaybeCount) -> Result<Option<u32>, HostOptionError> {
        self.count(spec.name, spec.min, Yes)
    }

    /// `spec`'s value in milliseconds, its default when not given.
    pub fn millis_of(&self, spec: Millis) -> Result<u64, HostOptionError> {
        Ok(self.millis(spec.name, spec.min_ms, No)?.unwrap_or(spec.default_ms))
    }

    /// `spec`'s value in milliseconds when given.
    pub fn maybe_millis_of(&self, spec: MaybeMillis) -> Result<Option<u64>, HostOptionError> {
        self.millis(spec.name, spec.min_ms, Yes)
    }

    /// `spec`'s value, its default when not given.
    pub fn text_of(&self, spec: Text) -> Result<String, HostOptionError> {
        Ok(self.text(spec.name, Yes)?.unwrap_or_else(|| spec.default.to_owned()))
    }

    /// `spec`'s value when given.
    pub fn maybe_text_of(&self, spec: MaybeText) -> Result<Option<String>, HostOptionError> {
        self.text(spec.name, Yes)
    }
}

/// `reclaimSandbox` / `sandboxReclaimer` / `reclaim_sandbox`.
pub mod reclaim {
    use super::*;
    use crate::options as names;

    pub const DESTROY_TIMEOUT: MaybeMillis = maybe_millis(
        names::DESTROY_TIMEOUT,
        1,
        "Cancel a destroy still running after this long (its signal aborts, its task is cancelled) and take \
         the destroy-failed path with a `SandboxDestroyTimeoutError`. Absent: no deadline, as the reference.",
    );

    pub const ALL: [Spec; 1] = [Spec::MaybeMillis(DESTROY_TIMEOUT)];
}

/// `reclaimAll` / `reclaim_all`.
pub mod reclaim_all {
    use super::*;
    use crate::options as names;

    pub const CONCURRENCY: Count = count(
        names::CONCURRENCY,
        1,
        defaults::CONCURRENCY,
        "Records in progress at once; a record writing its outcome gives its slot to the next one meanwhile, \
         with at most this many such writes at once.",
    );
    pub const PER_PROVIDER_CONCURRENCY: MaybeCount =
        maybe_count(names::PER_PROVIDER_CONCURRENCY, 1, "Destroys in flight per provider. Absent: `concurrency`.");
    pub const DESTROY_TIMEOUT: MaybeMillis = maybe_millis(
        names::DESTROY_TIMEOUT,
        1,
        "Cancel a destroy still running after this long: it counts as failed. Absent: no deadline.",
    );
    pub const BUDGET: MaybeMillis = maybe_millis(
        names::BUDGET,
        1,
        "Start nothing new after this long; the rest is reported `deferred`. Absent: no budget.",
    );

    pub const ALL: [Spec; 4] = [
        Spec::Count(CONCURRENCY),
        Spec::MaybeCount(PER_PROVIDER_CONCURRENCY),
        Spec::MaybeMillis(DESTROY_TIMEOUT),
        Spec::MaybeMillis(BUDGET),
    ];
}

/// `reconcile`.
pub mod reconcile {
    use super::*;
    use crate::options as names;

    pub const DRY_RUN: Flag =
        flag(names::DRY_RUN, false, "Plan only: read, change nothing, report what would be destroyed (`planned`).");
    pub const RETRY_LEAKS: Flag = flag(
        names::RETRY_LEAKS,
        true,
        "Retry the ledger's due leaks; off: sweep orphans and expire idle records only (the command's \
         `orphans`).",
    );
    pub const CONCURRENCY: Count = count(names::CONCURRENCY, 1, defaults::CONCURRENCY, "Destroys in flight at once.");
    pub const PER_PROVIDER_CONCURRENCY: MaybeCount =
        maybe_count(names::PER_PROVIDER_CONCURRENCY, 1, "Destroys in flight per provider. Absent: `concurrency`.");
    pub const DESTROY_TIMEOUT: MaybeMillis = maybe_millis(
        names::DESTROY_TIMEOUT,
        1,
        "Cancel a destroy or a listing still running after this long: it counts as failed. Absent: no \
         deadline.",
    );
    pub const BUDGET: MaybeMillis = maybe_millis(
        names::BUDGET,
        1,
        "Start nothing new after this long; the rest is reported `deferred`. Absent: no budget.",
    );
    pub const ORPHAN_GRACE: Millis = millis(
        names::ORPHAN_GRACE,
        0,
        defaults::ORPHAN_GRACE_MS,
        "Spare unreferenced sandboxes younger than this (by their creation time as the provider lists it).",
    );
    pub const MAX_IDLE: MaybeMillis = maybe_millis(
        names::MAX_IDLE,
        1,
        "Expire records not updated for this long into the ledger (reason `idle`). Absent: no idle expiry.",
    );
    pub const LIMIT: Count = count(
        names::LIMIT,
        1,
        defaults::LIMIT,
        "Most ledger entries claimed per provider, stale records read, and registered sandboxes a provider looks \
         up by id.",
    );
    pub const LEASE: Millis =
        millis(names::LEASE, 1, defaults::LEASE_MS, "How long claims (ledger entries, a provider's sweep) hold.");
    pub const BACKOFF: Millis = millis(
        names::BACKOFF,
        0,
        defaults::BACKOFF_MS,
        "The first wait after a failed retry, doubling per failure: after an entry's n-th failed destroy its \
         next attempt waits this × 2^(n−1), at most `max_backoff` (a reclaim's failed destroy is failure 1).",
    );
    pub const MAX_BACKOFF: Millis =
        millis(names::MAX_BACKOFF, 0, defaults::MAX_BACKOFF_MS, "The longest wait between retries.");
    pub const REGISTRY_RETENTION: Millis = millis(
        names::REGISTRY_RETENTION,
        0,
        defaults::REGISTRY_RETENTION_MS,
        "How long after its record was last written or deleted the store's registry still names a sandbox as \
         ours, so that an unlabelled listed sandbox it names is swept. Ignored by a store without the \
         registry.",
    );
    pub const AUDIT_RETENTION: Millis = millis(
        names::AUDIT_RETENTION,
        0,
        defaults::AUDIT_RETENTION_MS,
        "How long the audit log keeps a row: the pass that takes a provider's sweep prunes that provider's \
         audit rows older than this (and its registry rows past the registry retention). Ignored by a store \
         without `prune`.",
    );
    pub const OWNER: Text = text(names::OWNER, defaults::OWNER, "The owner namespace of providers that name none.");
    pub const HOST: MaybeText =
        maybe_text(names::HOST, "Who runs the pass: the audit rows' `host`. Absent: this machine's host name.");

    pub const ALL: [Spec; 16] = [
        Spec::Flag(DRY_RUN),
        Spec::Flag(RETRY_LEAKS),
        Spec::Count(CONCURRENCY),
        Spec::MaybeCount(PER_PROVIDER_CONCURRENCY),
        Spec::MaybeMillis(DESTROY_TIMEOUT),
        Spec::MaybeMillis(BUDGET),
        Spec::Millis(ORPHAN_GRACE),
        Spec::MaybeMillis(MAX_IDLE),
        Spec::Count(LIMIT),
        Spec::Millis(LEASE),
        Spec::Millis(BACKOFF),
        Spec::Millis(MAX_BACKOFF),
        Spec::Millis(REGISTRY_RETENTION),
        Spec::Millis(AUDIT_RETENTION),
        Spec::Text(OWNER),
        Spec::MaybeText(HOST),
    ];
}

/// `retryLeaks` / `retry_leaks`.
pub mod retry_leaks {
    use super::*;
    use crate::options as names;

    pub const LIMIT: Count = count(names::LIMIT, 0, defaults::RETRY_LIMIT, "Most leaks claimed in this call.");
    pub const LEASE: Millis = millis(
        names::LEASE,
        1,
        defaults::LEASE_MS,
        "How long a claim holds before another retrier may take the entry: no destroy starts after it ends, \
         and one still running then is cancelled and its entry left to its new holder.",
    );
    pub const DESTROY_TIMEOUT: MaybeMillis = maybe_millis(
        names::DESTROY_TIMEOUT,
        1,
        "Cancel a destroy still running after this long and record it as failed. Absent: no deadline.",
    );

    pub const ALL: [Spec; 3] = [Spec::Count(LIMIT), Spec::Millis(LEASE), Spec::MaybeMillis(DESTROY_TIMEOUT)];
}
