//! The command's pass loop when a host language runs the passes
//! (`--providers`): a machine that decides, prints and answers exit codes,
//! so npx and the pip console script behave alike and like the binary.
//!
//! Like the flow machines it performs no I/O of its own but printing (the
//! command's output *is* its job) and reads no clock: the host tells it the
//! time and what happened (a pass's report, a pass's failure, a signal, a
//! wake-up), and it answers the next [`Step`]: run a pass, sleep until a
//! time, or exit with a code. The host only loads its providers, runs a pass
//! on its driver, sleeps, listens for SIGINT/SIGTERM and exits.

use serde::Serialize;
use serde_json::{json, Value};

use sandbox_reclaim::options::Dialect;

use crate::pass_options::check_plan_options;

use crate::error::Failure;
pub use crate::output::print_failure;

pub use crate::error::{signal_again_message, EXIT_AGAIN};

/// When the pass after one that started at `next` runs, with `every` between
/// passes: a pass longer than the interval is followed by the next at once,
/// the missed ones skipped. Shared with the binary's loop.
pub fn next_pass_at(next: u64, every: u64, now: u64) -> u64 {
    next.saturating_add(every).max(now)
}

/// What the host does next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "step", rename_all = "camelCase")]
pub enum Step {
    /// Run a pass; `number` with `--every` (what to report it as).
    Pass { number: Option<u64> },
    /// Sleep until `untilMs` (epoch ms) or a signal, then call `woke`.
    #[serde(rename_all = "camelCase")]
    Sleep { until_ms: u64 },
    /// Exit the process with `code`.
    Exit { code: i32 },
}

/// Why a pass rejected, as the host classifies the error it caught.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// An option the core refused (a `TypeError`/`ValueError` naming it).
    Option,
    /// A store failure (`SandboxStoreError`).
    Store,
    /// Anything else: the pass could not finish.
    Other,
}

impl Rejection {
    pub fn parse(kind: &str) -> Option<Self> {
        match kind {
            "option" => Some(Self::Option),
            "store" => Some(Self::Store),
            "other" => Some(Self::Other),
            _ => None,
        }
    }
}

/// The command's failure for a pass's rejection. The plan's options passed
/// the core's checks before the first pass ([`check_plan_options`]), so an
/// option the host refuses now is its providers module's (`--providers`).
pub fn pass_failure(rejection: Rejection, message: &str) -> Failure {
    match rejection {
        Rejection::Option => Failure::usage("--providers", message),
        // As the binary words a store failure (`error::from_reclaim`).
        Rejection::Store => Failure::unavailable("store", crate::redact::redact_text(message)),
        Rejection::Other => Failure::failed(message),
    }
}

/// One hosted command run: a pass, or with `--every` a pass every interval
/// until a signal.
#[derive(Debug)]
pub struct HostedLoop {
    plan: String,
    /// The plan as parsed once by `new` (its options are checked at `start`).
    parsed: Value,
    command: String,
    json: bool,
    dialect: Dialect,
    every_ms: Option<u64>,
    number: u64,
    next_at: u64,
    stopped: bool,
    signals: u32,
}

impl HostedLoop {
    /// For the plan `host_plan` made (JSON), run by a host of `dialect`.
    pub fn new(plan: &str, dialect: Dialect) -> Result<Self, String> {
        let parsed: Value = serde_json::from_str(plan).map_err(|error| format!("malformed plan: {error}"))?;
        Ok(Self {
            plan: plan.to_owned(),
            command: parsed["command"].as_str().unwrap_or("reconcile").to_owned(),
            json: parsed["json"] == json!(true),
            dialect,
            every_ms: parsed["everyMs"].as_u64(),
            parsed,
            number: 0,
            next_at: 0,
            stopped: false,
            signals: 0,
        })
    }

    /// The first step, at `now` (epoch ms).
    pub fn start(&mut self, now: u64) -> Step {
        self.next_at = now;
        if let Err(failure) = check_plan_options(&self.parsed, self.dialect) {
            return Step::Exit { code: print_failure(&self.command, self.json, &failure, None) };
        }
        self.pass()
    }

    fn pass(&mut self) -> Step {
        if self.stopped {
            return Step::Exit { code: crate::error::EXIT_OK };
        }
        self.number += 1;
        Step::Pass { number: self.every_ms.map(|_| self.number) }
    }

    /// The pass that ran produced `report` (the core's JSON report): printed
    /// as the binary prints it.
    pub fn passed(&mut self, report: &str, now: u64) -> Result<Step, String> {
        let numbered = self.every_ms.map(|_| self.number);
        let code = crate::host::host_emit(&self.plan, report, numbered)?;
        Ok(match self.every_ms {
            None => Step::Exit { code },
            Some(every) => self.after_pass(every, now),
        })
    }

    /// The pass rejected with `message`: printed as the binary prints it. An
    /// option refusal ends an `--every` loop too (options do not get better).
    pub fn failed(&mut self, rejection: Rejection, message: &str, now: u64) -> Step {
        let failure = pass_failure(rejection, message);
        let usage = matches!(failure, Failure::Usage { .. });
        let numbered = self.every_ms.filter(|_| !usage).map(|_| self.number);
        let code = print_failure(&self.command, self.json, &failure, numbered);
        match self.every_ms {
            Some(every) if !usage => self.after_pass(every, now),
            _ => Step::Exit { code },
        }
    }

    fn after_pass(&mut self, every: u64, now: u64) -> Step {
        self.next_at = next_pass_at(self.next_at, every, now);
        self.woke(now)
    }

    /// The host's sleep ended (its time, or a signal), at `now`.
    pub fn woke(&mut self, now: u64) -> Step {
        if self.stopped {
            Step::Exit { code: crate::error::EXIT_OK }
        } else if now >= self.next_at {
            self.pass()
        } else {
            Step::Sleep { until_ms: self.next_at }
        }
    }

    /// SIGINT/SIGTERM (`signal` its name). The first stops: the host aborts
    /// the running pass (which settles and reports) and wakes its sleep. A
    /// second prints why and answers the code to exit with at once.
    pub fn signal(&mut self, signal: &str) -> Option<i32> {
        self.signals += 1;
        if self.signals > 1 {
            eprintln!("{}", signal_again_message(signal));
            return Some(EXIT_AGAIN);
        }
        self.stopped = true;
        None
    }

    /// Whether a signal stopped the loop.
    pub fn stopped(&self) -> bool {
        self.stopped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(every: Option<u64>) -> String {
        json!({ "command": "reconcile", "json": false, "everyMs": every, "storeDescribed": "s" }).to_string()
    }

    #[test]
    fn a_single_pass_exits_with_what_its_report_says() {
        let mut hosted = HostedLoop::new(&plan(None), Dialect::Node).unwrap();
        assert_eq!(hosted.start(0), Step::Pass { number: None });
        let failed = hosted.failed(Rejection::Store, "down", 5);
        assert_eq!(failed, Step::Exit { code: crate::error::EXIT_UNAVAILABLE });
    }

    #[test]
    fn a_store_rejection_is_printed_without_credentials() {
        let message = "cannot reach postgres://u:HostPw1@db:5432/x?password=HostPw2 (host=db password=HostPw3)";
        let failure = pass_failure(Rejection::Store, message).to_string();
        assert!(!failure.contains("HostPw"), "{failure}");
        assert!(failure.contains("postgres://u:***@db:5432/x?password=***"), "{failure}");
        assert!(failure.contains("host=db password=***"), "{failure}");
        // The binary's own store failures alike.
        let error = sandbox_reclaim::StoreError::backend(std::io::Error::other(message));
        let native = crate::error::from_reclaim(sandbox_reclaim::ReclaimError::Store(error)).to_string();
        assert!(!native.contains("HostPw") && native.contains("u:***@db:5432"), "{native}");
    }

    #[test]
    fn every_interval_a_pass_a_long_one_skips_the_missed_ones_and_a_signal_ends_it() {
        let mut hosted = HostedLoop::new(&plan(Some(1000)), Dialect::Node).unwrap();
        assert_eq!(hosted.start(10_000), Step::Pass { number: Some(1) });
        assert_eq!(hosted.failed(Rejection::Other, "boom", 10_200), Step::Sleep { until_ms: 11_000 });
        assert_eq!(hosted.woke(10_900), Step::Sleep { until_ms: 11_000 }, "an early wake-up sleeps again");
        assert_eq!(hosted.woke(11_000), Step::Pass { number: Some(2) });
        // Pass 2 took 3.5 s: the next starts at once.
        assert_eq!(hosted.failed(Rejection::Other, "boom", 14_500), Step::Pass { number: Some(3) });
        assert_eq!(hosted.signal("SIGTERM"), None);
        assert_eq!(hosted.failed(Rejection::Other, "boom", 14_600), Step::Exit { code: 0 });
        assert_eq!(hosted.signal("SIGINT"), Some(EXIT_AGAIN), "a second signal exits at once");
    }

    #[test]
    fn an_option_refusal_names_its_flag_by_the_options_id_before_any_pass() {
        // The plan's options are checked when the loop starts: nothing runs.
        let mut bad: Value = serde_json::from_str(&plan(Some(1000))).unwrap();
        bad["concurrency"] = json!(0);
        for dialect in [Dialect::Node, Dialect::Python] {
            let mut hosted = HostedLoop::new(&bad.to_string(), dialect).unwrap();
            assert_eq!(hosted.start(0), Step::Exit { code: 2 });
        }
        for (option, value, flag) in [
            ("concurrency", json!(0), "--concurrency"),
            ("destroyTimeoutMs", json!(0), "--destroy-timeout"),
            ("budgetMs", json!(0), "--budget"),
            ("maxIdleMs", json!(0), "--max-idle"),
            ("orphanGraceMs", json!(-1), "--orphan-grace"),
            // Accepted by the binary's parser, refused by the core: named, not blamed on --providers.
            ("registryRetentionMs", json!(1e300), "--registry-retention"),
            ("auditRetentionMs", json!(-1), "--audit-retention"),
        ] {
            let mut options = serde_json::Map::new();
            options.insert(option.to_owned(), value);
            for dialect in [Dialect::Node, Dialect::Python] {
                match check_plan_options(&Value::Object(options.clone()), dialect) {
                    Err(Failure::Usage { flag: named, .. }) => assert_eq!(named, flag, "{option}"),
                    other => panic!("{option}: {other:?}"),
                }
            }
        }
        assert_eq!(
            check_plan_options(&json!({ "concurrency": 4, "orphanGraceMs": 0, "budgetMs": null }), Dialect::Python),
            Ok(())
        );
        // What a host refuses after that is its providers module's.
        let mut hosted = HostedLoop::new(&plan(Some(1000)), Dialect::Node).unwrap();
        assert_eq!(hosted.start(0), Step::Pass { number: Some(1) });
        assert_eq!(hosted.failed(Rejection::Option, "provider [0] has no destroy", 1), Step::Exit { code: 2 });
        let failure = pass_failure(Rejection::Option, "provider [0] has no destroy");
        assert_eq!(failure, Failure::usage("--providers", "provider [0] has no destroy"));
    }

    #[test]
    fn malformed_plans_and_reports_are_refused() {
        assert!(HostedLoop::new("{", Dialect::Node).is_err());
        let mut hosted = HostedLoop::new(&plan(None), Dialect::Node).unwrap();
        hosted.start(0);
        assert!(hosted.passed("[]", 0).is_err());
    }

    #[test]
    fn the_next_pass_never_starts_in_the_past() {
        assert_eq!(next_pass_at(0, 1000, 500), 1000);
        assert_eq!(next_pass_at(0, 1000, 2500), 2500);
        assert_eq!(next_pass_at(u64::MAX - 1, 1000, 0), u64::MAX);
    }
}
