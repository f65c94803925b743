//! Properties of the reclaim and retry machines over everything a host might
//! answer (proptest), plus the protocol's edge cases.

use proptest::prelude::*;
use sandbox_reclaim::machine::effects::{
    Completion, Effect, Ending, Flow, InstanceFields, LogLevel, MetaValue, Output,
};
use sandbox_reclaim::machine::{Reclaim, ReclaimApi, ReclaimInput, Retry, RetryInput};
use sandbox_reclaim::ReclaimOutcome;

const NOW: u64 = 1_700_000_000_000;

fn input(api: ReclaimApi, key: Option<&str>, ledger: bool, timeout: Option<u64>) -> ReclaimInput {
    ReclaimInput {
        api,
        run_id: "run-1".into(),
        sandbox_key: key.map(str::to_owned),
        providers: vec!["docker".into()],
        store_has_ledger: ledger,
        destroy_timeout_ms: timeout,
    }
}

fn drain(flow: &mut dyn Flow) -> Vec<(u32, Effect)> {
    std::iter::from_fn(|| flow.poll_effect()).collect()
}

/// The one effect the machine asks for next.
fn one(flow: &mut dyn Flow) -> (u32, Effect) {
    let mut effects = drain(flow);
    assert_eq!(effects.len(), 1, "exactly one effect: {effects:?}");
    effects.remove(0)
}

#[test]
fn no_key_finishes_without_any_effect() {
    let mut flow = Reclaim::new(input(ReclaimApi::ReclaimSandbox, None, false, None), NOW);
    assert!(drain(&mut flow).is_empty());
    assert_eq!(flow.poll_done(), Some(Ending::Resolved(Output::Outcome(ReclaimOutcome::NoSandboxKey))));
    assert_eq!(flow.poll_done(), None, "the ending is taken once");
}

#[test]
fn happy_path_asks_get_destroy_delete_in_order() {
    let mut flow = Reclaim::new(input(ReclaimApi::ReclaimSandbox, Some("k"), false, None), NOW);
    let (get, Effect::GetInstance { key }) = one(&mut flow) else { panic!("get first") };
    assert_eq!(key, "k");
    assert_eq!(flow.poll_done(), None, "not done while waiting");
    let found = InstanceFields { provider: "docker".into(), provider_sandbox_id: "ctr-1".into() };
    flow.complete(get, Completion::Instance(Some(found)), NOW).unwrap();
    let (destroy, Effect::Destroy { provider_sandbox_id, deadline: None, .. }) = one(&mut flow) else {
        panic!("destroy second")
    };
    assert_eq!(provider_sandbox_id, "ctr-1");
    flow.complete(destroy, Completion::Ok, NOW).unwrap();
    let (delete, Effect::DeleteInstance { .. }) = one(&mut flow) else { panic!("delete") };
    flow.complete(delete, Completion::Ok, NOW).unwrap();
    assert_eq!(flow.poll_done(), Some(Ending::Resolved(Output::Outcome(ReclaimOutcome::Destroyed))));
}

#[test]
fn completions_it_did_not_ask_for_are_misuse_not_panics() {
    let mut flow = Reclaim::new(input(ReclaimApi::ReclaimSandbox, Some("k"), false, None), NOW);
    let get = drain(&mut flow)[0].0;
    assert!(flow.complete(get + 7, Completion::Ok, NOW).is_err(), "unknown effect");
    assert!(flow.complete(get, Completion::Leaks(vec![]), NOW).is_err(), "wrong kind");
    // Still usable after a refused completion.
    flow.complete(get, Completion::Instance(None), NOW).unwrap();
    assert_eq!(flow.poll_done(), Some(Ending::Resolved(Output::Outcome(ReclaimOutcome::NotFound))));
}

#[test]
fn a_throwing_logger_rejects_with_its_error_and_stops_the_batch() {
    let mut flow = Reclaim::new(input(ReclaimApi::ReclaimSandbox, Some("k"), false, None), NOW);
    let get = drain(&mut flow)[0].0;
    flow.complete(
        get,
        Completion::Instance(Some(InstanceFields { provider: "docker".into(), provider_sandbox_id: "c".into() })),
        NOW,
    )
    .unwrap();
    let destroy = drain(&mut flow)[0].0;
    flow.complete(destroy, Completion::Failed { message: "down".into() }, NOW).unwrap();
    // Warn, then delete: the driver runs the warn first; it throws.
    let (warn, line) = flow.poll_effect().unwrap();
    assert!(matches!(line, Effect::Log(_)));
    flow.complete(warn, Completion::Failed { message: String::new() }, NOW).unwrap();
    assert_eq!(flow.poll_effect(), None, "the delete after the throwing warn never starts");
    assert_eq!(flow.poll_done(), Some(Ending::HostError(warn)));
}

#[test]
fn a_deadline_cancels_the_destroy_and_ignores_its_late_settle() {
    let mut flow = Reclaim::new(input(ReclaimApi::ReclaimSandbox, Some("k"), true, Some(100)), NOW);
    let get = drain(&mut flow)[0].0;
    flow.complete(
        get,
        Completion::Instance(Some(InstanceFields { provider: "docker".into(), provider_sandbox_id: "c".into() })),
        NOW + 5,
    )
    .unwrap();
    let (destroy, Effect::Destroy { deadline: Some(deadline), .. }) = one(&mut flow) else {
        panic!("destroy with a deadline")
    };
    assert_eq!(deadline, NOW + 105, "the deadline counts from the destroy's start");
    assert_eq!(flow.poll_timeout(), Some(NOW + 105));
    flow.handle_timeout(NOW + 104);
    assert!(drain(&mut flow).is_empty(), "an early wake-up changes nothing");
    flow.handle_timeout(NOW + 105);
    let effects = drain(&mut flow);
    assert_eq!(effects[0].1, Effect::Cancel { target: destroy });
    let Effect::Log(line) = &effects[1].1 else { panic!("warn") };
    assert!(matches!(line.meta[3].1, MetaValue::DestroyTimeout { timeout_ms: 100, .. }));
    let Effect::DeleteRecordingLeak { leak, .. } = &effects[2].1 else { panic!("ledger delete") };
    assert_eq!(leak.failed_at, NOW + 105);
    flow.complete(destroy, Completion::Ok, NOW + 150).expect("a late settle is ignored, not misuse");
    assert!(drain(&mut flow).is_empty(), "no second line, no second delete");
    flow.complete(effects[2].0, Completion::Ok, NOW + 160).unwrap();
    assert_eq!(flow.poll_done(), Some(Ending::Resolved(Output::Outcome(ReclaimOutcome::DestroyFailed))));
}

#[test]
fn retry_checks_its_lease_before_each_destroy() {
    let input = RetryInput { provider_name: "docker".into(), limit: 10, lease_ms: 50, destroy_timeout_ms: None };
    let mut flow = Retry::new(input, NOW);
    let claim = drain(&mut flow)[0].0;
    flow.complete(claim, Completion::Leaks(vec!["a".into(), "b".into()]), NOW + 10).unwrap();
    let (destroy, Effect::Destroy { deadline: Some(deadline), .. }) = one(&mut flow) else { panic!("destroy") };
    assert_eq!(deadline, NOW + 45, "no destroy runs into the lease's last tenth, kept for the store write");
    flow.complete(destroy, Completion::Ok, NOW + 20).unwrap();
    let resolve = drain(&mut flow)[0].0;
    flow.complete(resolve, Completion::Ok, NOW + 45).unwrap();
    assert!(drain(&mut flow).is_empty(), "the lease has ended: b is not destroyed");
    let Some(Ending::Resolved(Output::Retry(summary))) = flow.poll_done() else { panic!("summary") };
    assert_eq!((summary.retried, summary.destroyed, summary.still_failing), (1, 1, 0));
}

/// Everything a host might answer, chosen by proptest.
#[derive(Debug, Clone)]
struct Scenario {
    reclaimer: bool,
    key: Option<String>,
    instance_provider: Option<String>,
    destroy: u8, // 0 ok, 1 fails, 2 hangs past its deadline
    delete_fails: bool,
    ledger: bool,
    timeout: Option<u64>,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let provider = prop_oneof![Just("docker".to_owned()), Just("Docker".to_owned()), ".{0,4}"];
    (
        any::<bool>(),
        proptest::option::of(".{0,6}"),
        proptest::option::of(provider),
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        proptest::option::of(1u64..1_000),
    )
        .prop_map(|(reclaimer, key, instance_provider, destroy, delete_fails, ledger, timeout)| Scenario {
            reclaimer,
            key,
            instance_provider,
            destroy: if timeout.is_none() { destroy.min(1) } else { destroy },
            delete_fails,
            ledger,
            timeout,
        })
}

/// Runs the scenario to its end; returns every effect and the ending.
fn run(scenario: &Scenario) -> (Vec<Effect>, Ending) {
    let api = if scenario.reclaimer { ReclaimApi::SandboxReclaimer } else { ReclaimApi::ReclaimSandbox };
    let mut flow = Reclaim::new(input(api, scenario.key.as_deref(), scenario.ledger, scenario.timeout), NOW);
    let mut seen = Vec::new();
    let mut now = NOW;
    loop {
        let mut answers = Vec::new();
        for (id, effect) in drain(&mut flow) {
            let answer = match &effect {
                Effect::GetInstance { .. } => Some(Completion::Instance(
                    scenario
                        .instance_provider
                        .clone()
                        .map(|provider| InstanceFields { provider, provider_sandbox_id: "ctr-1".into() }),
                )),
                Effect::Destroy { .. } => match scenario.destroy {
                    0 => Some(Completion::Ok),
                    1 => Some(Completion::Failed { message: "down".into() }),
                    _ => None,
                },
                Effect::DeleteInstance { .. } | Effect::DeleteRecordingLeak { .. } if scenario.delete_fails => {
                    Some(Completion::Failed { message: String::new() })
                }
                Effect::DeleteInstance { .. } | Effect::DeleteRecordingLeak { .. } => Some(Completion::Ok),
                _ => None,
            };
            if let Some(answer) = answer {
                answers.push((id, answer));
            }
            seen.push(effect);
        }
        if let Some(ending) = flow.poll_done() {
            return (seen, ending);
        }
        match answers.pop() {
            Some((id, answer)) => flow.complete(id, answer, now).unwrap(),
            None => {
                now = flow.poll_timeout().expect("a flow waiting on nothing has a deadline");
                flow.handle_timeout(now);
            }
        }
    }
}

fn is_io(effect: &Effect) -> bool {
    !matches!(effect, Effect::Log(_) | Effect::Cancel { .. })
}

fn is_delete(effect: &Effect) -> bool {
    matches!(effect, Effect::DeleteInstance { .. } | Effect::DeleteRecordingLeak { .. })
}

proptest! {
    #[test]
    fn a_provider_mismatch_never_destroys_or_deletes(scenario in scenario()) {
        let (effects, _) = run(&scenario);
        if scenario.instance_provider.as_deref().is_some_and(|p| p != "docker") {
            let touched = effects.iter().any(|e| matches!(e, Effect::Destroy { .. }) || is_delete(e));
            prop_assert!(!touched);
        }
    }

    #[test]
    fn delete_is_asked_exactly_once_whenever_destroy_was_and_after_it(scenario in scenario()) {
        let (effects, _) = run(&scenario);
        let destroy = effects.iter().position(|e| matches!(e, Effect::Destroy { .. }));
        let deletes: Vec<_> = effects.iter().enumerate().filter(|(_, e)| is_delete(e)).map(|(i, _)| i).collect();
        match destroy {
            Some(at) => { prop_assert_eq!(deletes.len(), 1); prop_assert!(deletes[0] > at); }
            None => prop_assert!(deletes.is_empty()),
        }
    }

    #[test]
    fn no_io_without_a_key(scenario in scenario()) {
        let (effects, _) = run(&scenario);
        if scenario.key.is_none() {
            prop_assert!(!effects.iter().any(is_io));
        }
    }

    #[test]
    fn the_ledger_effect_appears_only_for_a_failed_destroy_on_a_ledger_store(scenario in scenario()) {
        let (effects, _) = run(&scenario);
        let ledgered = effects.iter().any(|e| matches!(e, Effect::DeleteRecordingLeak { .. }));
        let destroyed_ok = scenario.destroy == 0;
        let reached_destroy = effects.iter().any(|e| matches!(e, Effect::Destroy { .. }));
        prop_assert_eq!(ledgered, scenario.ledger && reached_destroy && !destroyed_ok);
    }

    #[test]
    fn a_timeout_is_cancelled_and_reported_like_a_failed_destroy(scenario in scenario()) {
        let (effects, ending) = run(&scenario);
        let cancelled = effects.iter().any(|e| matches!(e, Effect::Cancel { .. }));
        let reached_destroy = effects.iter().any(|e| matches!(e, Effect::Destroy { .. }));
        prop_assert_eq!(cancelled, reached_destroy && scenario.destroy == 2);
        if cancelled && !scenario.delete_fails && !scenario.reclaimer {
            prop_assert_eq!(ending, Ending::Resolved(Output::Outcome(ReclaimOutcome::DestroyFailed)));
        }
    }

    #[test]
    fn the_reclaimer_logs_its_outcome_once_unless_a_store_call_failed(scenario in scenario()) {
        let (effects, ending) = run(&scenario);
        let own_lines = effects.iter().filter(|e| matches!(e, Effect::Log(line) if line.level != LogLevel::Warn)).count();
        let store_failed = matches!(ending, Ending::HostError(_));
        prop_assert_eq!(own_lines, usize::from(scenario.reclaimer && !store_failed));
    }
}
