//! What each effect op carries and how a host driver calls the host with it:
//! the operand table the JS and Python drivers are built from, so neither
//! hard-codes an op's slot count, its host method or how its answer is read.
//!
//! A driver reads [`EFFECTS`] once (through `wire::protocol()`), turns each
//! row into a small function, and from then on only maps slots to host
//! calls. Ops with target [`target::DRIVER`] (logs, cancellations, progress
//! events) are the driver's own business: logging, cancellation and events.

use serde::Serialize;

/// Effect ops and their slots after `op, id` (the [`EFFECTS`] row says how to read them).
pub mod op {
    /// key
    pub const GET_INSTANCE: u32 = 0;
    /// key
    pub const DELETE_INSTANCE: u32 = 1;
    /// key, leak key, provider, providerSandboxId, runId, errorMessage, failedAt
    pub const DELETE_RECORDING_LEAK: u32 = 2;
    /// provider number, providerSandboxId, deadline | Nothing
    pub const DESTROY: u32 = 3;
    /// provider, limit, leaseMs
    pub const CLAIM_LEAKS: u32 = 4;
    /// claim effect, entry index
    pub const RESOLVE_LEAK: u32 = 5;
    /// claim effect, entry index, message, failedAt
    pub const RECORD_RETRY_FAILURE: u32 = 6;
    /// level, message, n, then n × (key, meta kind, value...)
    pub const LOG: u32 = 7;
    /// target effect
    pub const CANCEL: u32 = 8;
    /// provider number, deadline | Nothing; answered with JSON
    pub const LIST_SANDBOXES: u32 = 9;
    /// provider, destroyedSince; answered with JSON
    pub const SANDBOX_REFERENCES: u32 = 10;
    /// olderThan, limit; answered with JSON
    pub const LIST_STALE: u32 = 11;
    /// key, updatedAt, leak key, provider, providerSandboxId, runId, errorMessage, failedAt; answered with JSON
    pub const EXPIRE_IDLE: u32 = 12;
    /// leak key, provider, providerSandboxId, runId, errorMessage, failedAt, reason, nextAttemptAt
    pub const RECORD_LEAK: u32 = 13;
    /// provider, limit, leaseMs | Nothing, now; answered with JSON
    pub const DUE_LEAKS: u32 = 14;
    /// claim effect, entry index, message, failedAt, nextAttemptAt
    pub const DEFER_LEAK: u32 = 15;
    /// provider, holder, leaseMs, now; answered with JSON
    pub const CLAIM_SWEEP: u32 = 16;
    /// provider, holder
    pub const RELEASE_SWEEP: u32 = 17;
    /// the entries as a JSON array
    pub const APPEND_AUDIT: u32 = 18;
    /// the event as JSON; never completed
    pub const PROGRESS: u32 = 19;
    /// provider, since; answered with JSON
    pub const REGISTERED_SANDBOXES: u32 = 20;
    /// provider, registryBefore, auditBefore
    pub const PRUNE: u32 = 21;
    /// provider number, the ids as a JSON array, deadline | Nothing; answered with JSON
    pub const LOOKUP_SANDBOXES: u32 = 22;
    /// provider; answered with JSON (a whole number)
    pub const SWEEP_MARK: u32 = 23;
    /// provider, the ids as a JSON array, destroyedSince, mark; answered with JSON
    pub const REFERENCED_AMONG: u32 = 24;
    /// provider, the ids as a JSON array, since; answered with JSON
    pub const REGISTERED_AMONG: u32 = 25;
    /// provider, since, limit; answered with JSON
    pub const LOOKUP_CANDIDATES: u32 = 26;
    /// provider, the gone ids as a JSON array, the checked ids as a JSON array, now
    pub const LOOKUP_CHECKED: u32 = 27;

    /// Every op, in number order.
    pub const ALL: [u32; 28] =
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27];
}

/// Whom an effect calls.
pub mod target {
    /// The instance store (`options.instances`).
    pub const STORE: &str = "store";
    /// The provider whose number is the first operand.
    pub const PROVIDER: &str = "provider";
    /// Nobody: the driver logs, cancels or reports an event itself.
    pub const DRIVER: &str = "driver";
}

/// How one operand (one or more batch slots) becomes a host call's argument.
pub mod operand {
    /// One slot, passed as it is.
    pub const VALUE: &str = "value";
    /// One slot: the provider number the call goes to (no argument).
    pub const PROVIDER: &str = "provider";
    /// Six slots (key, provider, providerSandboxId, runId, errorMessage,
    /// failedAt): the host's new-leak record.
    pub const LEAK: &str = "leak";
    /// Two slots (an effect, an index): the entry that effect's answer held,
    /// the very host object.
    pub const ENTRY: &str = "entry";
    /// One slot, a leak reason's name: the host's reason value.
    pub const REASON: &str = "reason";
    /// One slot, milliseconds: a claim's lease in the host store's unit
    /// (Node `leaseMs`, Python `lease_seconds`).
    pub const LEASE: &str = "lease";
    /// One slot, the audit rows as a JSON array: the host's rows.
    pub const AUDIT: &str = "audit";
    /// Two slots (providerSandboxId, deadline | Nothing): Node `{ id, signal? }`
    /// (a signal only under a deadline), Python the id.
    pub const SANDBOX: &str = "sandbox";
    /// One slot (deadline | Nothing): Node passes `{ signal }` under a
    /// deadline and nothing otherwise; Python passes nothing.
    pub const SIGNAL: &str = "signal";
    /// Two slots (the ids as a JSON array, deadline | Nothing): Node
    /// `{ ids, signal? }` (a signal only under a deadline), Python the ids.
    pub const IDS: &str = "ids";
    /// One slot, the ids as a JSON array: the host's array (Python list) of strings.
    pub const ID_LIST: &str = "idList";
}

/// How a driver reports an effect's answer.
pub mod answer {
    /// `completion::OK`; the value is not read.
    pub const OK: &str = "ok";
    /// `completion::INSTANCE` with the record's two fields, or `NO_INSTANCE` for null.
    pub const INSTANCE: &str = "instance";
    /// `completeLeaks` with each claimed entry's providerSandboxId.
    pub const CLAIMED: &str = "claimed";
    /// `completion::JSON`: the answer in its wire form, which the core decodes.
    pub const JSON: &str = "json";
    /// A fenced ledger write: `false` means the store refused it (the
    /// entry's claim had passed to another holder); any other value (a store
    /// written before claims were fenced answers nothing) means it landed.
    /// Reported as the JSON answer `false` or `true`.
    pub const HELD: &str = "held";
    /// Never completed (driver ops).
    pub const NONE: &str = "none";
}

/// One field of a JSON answer's items, as a host gives it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Field {
    /// Its key in the wire form (camelCase, as the Node contract names it).
    pub wire: &'static str,
    /// Its attribute in the Python contract (snake_case).
    pub python: &'static str,
    /// `text`, `millis` (epoch milliseconds), `count` (a u32) or `flag` (a bool).
    pub kind: &'static str,
    /// Absent (or None) is refused; an optional one absent is left out.
    pub required: bool,
}

/// What a JSON answer is: `flag` (a bool), `ids` (a list of strings) or
/// `records` (a list of items with [`Shape::fields`]).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Shape {
    pub kind: &'static str,
    /// What one item is called in an error ("sandbox 3 of provider.list()").
    pub noun: &'static str,
    pub fields: &'static [Field],
}

/// One effect op: its host method, its operands and how its answer is read.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectSpec {
    pub op: u32,
    /// The host method in the Node contract (`destroy`, `deleteRecordingLeak`).
    pub method: &'static str,
    /// The same method in the Python contract (`delete_recording_leak`).
    pub python: &'static str,
    pub target: &'static str,
    /// One entry per operand, in slot order ([`operand`]).
    pub operands: &'static [&'static str],
    pub answer: &'static str,
    /// The driver keeps the host's answer: later effects name its entries.
    pub keeps: bool,
    /// For JSON answers, their shape (what the Python driver reads).
    pub shape: Option<Shape>,
}

const fn field(wire: &'static str, python: &'static str, kind: &'static str, required: bool) -> Field {
    Field { wire, python, kind, required }
}

const FLAG: Option<Shape> = Some(Shape { kind: "flag", noun: "", fields: &[] });

/// A whole number of at least 0 (a store's mark).
const MARK: Option<Shape> = Some(Shape { kind: "mark", noun: "", fields: &[] });

/// Every op's row, in op number order.
pub const EFFECTS: [EffectSpec; 28] = {
    use self::{answer as a, operand as o, target as t};
    const fn spec(
        op: u32,
        method: &'static str,
        python: &'static str,
        target: &'static str,
        operands: &'static [&'static str],
        answer: &'static str,
    ) -> EffectSpec {
        EffectSpec { op, method, python, target, operands, answer, keeps: false, shape: None }
    }
    const fn answered(mut spec: EffectSpec, shape: Option<Shape>, keeps: bool) -> EffectSpec {
        spec.shape = shape;
        spec.keeps = keeps;
        spec
    }
    [
        spec(op::GET_INSTANCE, "get", "get", t::STORE, &[o::VALUE], a::INSTANCE),
        spec(op::DELETE_INSTANCE, "delete", "delete", t::STORE, &[o::VALUE], a::OK),
        spec(
            op::DELETE_RECORDING_LEAK,
            "deleteRecordingLeak",
            "delete_recording_leak",
            t::STORE,
            &[o::VALUE, o::LEAK],
            a::OK,
        ),
        spec(op::DESTROY, "destroy", "destroy", t::PROVIDER, &[o::PROVIDER, o::SANDBOX], a::OK),
        answered(
            spec(op::CLAIM_LEAKS, "claimLeaks", "claim_leaks", t::STORE, &[o::VALUE, o::VALUE, o::LEASE], a::CLAIMED),
            None,
            true,
        ),
        spec(op::RESOLVE_LEAK, "resolveLeak", "resolve_leak", t::STORE, &[o::ENTRY], a::HELD),
        spec(
            op::RECORD_RETRY_FAILURE,
            "recordRetryFailure",
            "record_retry_failure",
            t::STORE,
            &[o::ENTRY, o::VALUE, o::VALUE],
            a::HELD,
        ),
        spec(op::LOG, "log", "log", t::DRIVER, &[], a::NONE),
        spec(op::CANCEL, "cancel", "cancel", t::DRIVER, &[o::VALUE], a::NONE),
        answered(
            spec(op::LIST_SANDBOXES, "list", "list", t::PROVIDER, &[o::PROVIDER, o::SIGNAL], a::JSON),
            LISTED,
            false,
        ),
        answered(
            spec(
                op::SANDBOX_REFERENCES,
                "sandboxReferences",
                "sandbox_references",
                t::STORE,
                &[o::VALUE, o::VALUE],
                a::JSON,
            ),
            IDS,
            false,
        ),
        answered(
            spec(op::LIST_STALE, "listStale", "list_stale", t::STORE, &[o::VALUE, o::VALUE], a::JSON),
            STALE,
            false,
        ),
        answered(
            spec(op::EXPIRE_IDLE, "expireIdle", "expire_idle", t::STORE, &[o::VALUE, o::VALUE, o::LEAK], a::JSON),
            FLAG,
            false,
        ),
        spec(op::RECORD_LEAK, "recordLeak", "record_leak", t::STORE, &[o::LEAK, o::REASON, o::VALUE], a::OK),
        answered(
            spec(op::DUE_LEAKS, "dueLeaks", "due_leaks", t::STORE, &[o::VALUE, o::VALUE, o::VALUE, o::VALUE], a::JSON),
            DUE,
            true,
        ),
        spec(op::DEFER_LEAK, "deferLeak", "defer_leak", t::STORE, &[o::ENTRY, o::VALUE, o::VALUE, o::VALUE], a::HELD),
        answered(
            spec(
                op::CLAIM_SWEEP,
                "claimSweep",
                "claim_sweep",
                t::STORE,
                &[o::VALUE, o::VALUE, o::VALUE, o::VALUE],
                a::JSON,
            ),
            FLAG,
            false,
        ),
        spec(op::RELEASE_SWEEP, "releaseSweep", "release_sweep", t::STORE, &[o::VALUE, o::VALUE], a::OK),
        spec(op::APPEND_AUDIT, "appendAudit", "append_audit", t::STORE, &[o::AUDIT], a::OK),
        spec(op::PROGRESS, "progress", "progress", t::DRIVER, &[o::VALUE], a::NONE),
        answered(
            spec(
                op::REGISTERED_SANDBOXES,
                "registeredSandboxes",
                "registered_sandboxes",
                t::STORE,
                &[o::VALUE, o::VALUE],
                a::JSON,
            ),
            IDS,
            false,
        ),
        spec(op::PRUNE, "prune", "prune", t::STORE, &[o::VALUE, o::VALUE, o::VALUE], a::OK),
        answered(
            spec(op::LOOKUP_SANDBOXES, "lookup", "lookup", t::PROVIDER, &[o::PROVIDER, o::IDS], a::JSON),
            LISTED,
            false,
        ),
        answered(spec(op::SWEEP_MARK, "sweepMark", "sweep_mark", t::STORE, &[o::VALUE], a::JSON), MARK, false),
        answered(
            spec(
                op::REFERENCED_AMONG,
                "referencedAmong",
                "referenced_among",
                t::STORE,
                &[o::VALUE, o::ID_LIST, o::VALUE, o::VALUE],
                a::JSON,
            ),
            IDS,
            false,
        ),
        answered(
            spec(
                op::REGISTERED_AMONG,
                "registeredAmong",
                "registered_among",
                t::STORE,
                &[o::VALUE, o::ID_LIST, o::VALUE],
                a::JSON,
            ),
            IDS,
            false,
        ),
        answered(
            spec(
                op::LOOKUP_CANDIDATES,
                "lookupCandidates",
                "lookup_candidates",
                t::STORE,
                &[o::VALUE, o::VALUE, o::VALUE],
                a::JSON,
            ),
            IDS,
            false,
        ),
        spec(
            op::LOOKUP_CHECKED,
            "lookupChecked",
            "lookup_checked",
            t::STORE,
            &[o::VALUE, o::ID_LIST, o::ID_LIST, o::VALUE],
            a::OK,
        ),
    ]
};

const IDS: Option<Shape> = Some(Shape { kind: "ids", noun: "an id", fields: &[] });

const LISTED: Option<Shape> = Some(Shape {
    kind: "records",
    noun: "sandbox",
    fields: &[
        field("id", "id", "text", true),
        field("createdAt", "created_at", "millis", false),
        field("owner", "owner", "text", false),
        field("key", "key", "text", false),
        field("deleting", "deleting", "flag", false),
    ],
});

const STALE: Option<Shape> = Some(Shape {
    kind: "records",
    noun: "record",
    fields: &[
        field("key", "key", "text", true),
        field("provider", "provider", "text", true),
        field("providerSandboxId", "provider_sandbox_id", "text", true),
        field("updatedAt", "updated_at", "millis", true),
    ],
});

const DUE: Option<Shape> = Some(Shape {
    kind: "records",
    noun: "entry",
    fields: &[
        field("providerSandboxId", "provider_sandbox_id", "text", true),
        field("key", "key", "text", true),
        field("attempts", "attempts", "count", false),
        field("reason", "reason", "text", false),
        field("nextAttemptAt", "next_attempt_at", "millis", false),
    ],
});

/// How many batch slots an operand kind takes.
pub const fn slots(kind: &str) -> usize {
    match kind.as_bytes() {
        b"leak" => 6,
        b"entry" | b"sandbox" | b"ids" => 2,
        _ => 1,
    }
}

/// The ops a driver reports as JSON.
pub fn answered_with_json(op: u32) -> bool {
    // A `held` answer reaches the core as the JSON `true` or `false`.
    EFFECTS.get(op as usize).is_some_and(|spec| {
        spec.answer.as_bytes() == answer::JSON.as_bytes() || spec.answer.as_bytes() == answer::HELD.as_bytes()
    })
}

#[cfg(test)]
mod host_contract {
    use super::*;
    use crate::contract::host::{
        Kind, Method, FLEET_PROVIDER, FLEET_STORE, INSTANCE_STORE, LEDGER_INSTANCE_STORE, LOGGER, RETRY_LEDGER,
        SANDBOX_PROVIDER,
    };
    use crate::machine::effects::LogLevel;

    /// The operand an effect passes for a parameter of this kind.
    fn operand_of(kind: Kind) -> &'static str {
        match kind {
            Kind::NewLeak => operand::LEAK,
            Kind::Entry => operand::ENTRY,
            Kind::Reason => operand::REASON,
            Kind::AuditRows => operand::AUDIT,
            Kind::Lease => operand::LEASE,
            Kind::Destroy => operand::SANDBOX,
            Kind::ListInput => operand::SIGNAL,
            Kind::LookupInput => operand::IDS,
            Kind::Ids => operand::ID_LIST,
            _ => operand::VALUE,
        }
    }

    /// Each declared method of `target` is an effect's: the same names, as
    /// many parameters as the effect has operands (a provider call's first
    /// operand picks the provider and is no argument), of the kinds it passes.
    fn check(target: &str, declared: &[Method]) {
        for declared in declared.iter().filter(|member| !member.property) {
            let Some(row) = EFFECTS.iter().find(|row| row.method == declared.node) else {
                // The app's own call (a flow never writes a record).
                assert_eq!(declared.node, "upsert", "{} is no effect's", declared.node);
                continue;
            };
            assert_eq!((row.python, row.target), (declared.python, target), "{}", declared.node);
            let operands = match row.operands.split_first() {
                Some((&operand::PROVIDER, rest)) => rest,
                _ => row.operands,
            };
            assert_eq!(operands.len(), declared.params.len(), "{}", declared.node);
            for (operand, param) in operands.iter().zip(declared.params) {
                assert_eq!(*operand, operand_of(param.kind), "{}.{}", declared.node, param.node);
            }
            let held = declared.answer == Kind::Held;
            assert_eq!(row.answer == answer::HELD, held, "{}", declared.node);
        }
    }

    /// The stores, providers and logger the hosts' declarations describe
    /// are the ones the drivers call, and every effect a flow makes on a
    /// store or a provider is declared.
    #[test]
    fn the_declared_host_objects_are_the_ones_the_effects_call() {
        let stores: Vec<Method> = [&INSTANCE_STORE[..], &LEDGER_INSTANCE_STORE, &FLEET_STORE, &RETRY_LEDGER].concat();
        let providers: Vec<Method> = [&SANDBOX_PROVIDER[..], &FLEET_PROVIDER].concat();
        check(target::STORE, &stores);
        check(target::PROVIDER, &providers);
        for row in EFFECTS.iter() {
            let declared = match row.target {
                target::STORE => &stores,
                target::PROVIDER => &providers,
                _ => continue,
            };
            assert!(declared.iter().any(|method| method.node == row.method), "{} is not declared", row.method);
        }
    }

    /// The logger's declared methods are the log levels, in order.
    #[test]
    fn the_declared_logger_is_one_method_per_log_level() {
        let declared: Vec<&str> = LOGGER.iter().map(|method| method.node).collect();
        let levels: Vec<&str> = LogLevel::ALL.iter().map(|level| level.as_str()).collect();
        assert_eq!(declared, levels);
        assert!(LOGGER.iter().all(|method| method.python == method.node && method.answer == Kind::Unread));
    }
}
