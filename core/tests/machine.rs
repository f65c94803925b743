//! Unit and property tests of the sans-IO machines: no driver, no I/O, just
//! steps in and steps out.

use proptest::prelude::*;
use sandbox_reclaim::machine::{
    DestroyResult, InstanceView, LogLevel, MetaValue, Reclaim, Reclaimer, Step, StepMachine,
};
use sandbox_reclaim::ReclaimOutcome;

/// Polls until the machine waits (or is done), returning the steps in order.
fn drain(machine: &mut Reclaim) -> Vec<Step> {
    std::iter::from_fn(|| machine.poll()).collect()
}

fn drain_reclaimer(machine: &mut Reclaimer) -> Vec<Step> {
    std::iter::from_fn(|| machine.poll()).collect()
}

#[test]
fn no_key_finishes_without_any_io_step() {
    let mut machine = Reclaim::new("run-1", None, "docker", false);
    assert_eq!(drain(&mut machine), vec![Step::Finish(ReclaimOutcome::NoSandboxKey)]);
    assert!(machine.is_finished());
}

#[test]
fn happy_path_asks_get_destroy_delete_in_order() {
    let mut machine = Reclaim::new("run-1", Some("k".into()), "docker", false);
    assert_eq!(drain(&mut machine), vec![Step::GetInstance { key: "k".into() }]);
    machine.instance_loaded(Some(InstanceView { provider: "docker", provider_sandbox_id: "c1" })).unwrap();
    assert_eq!(drain(&mut machine), vec![Step::Destroy { provider_sandbox_id: "c1".into() }]);
    machine.destroy_finished(DestroyResult::Succeeded).unwrap();
    assert_eq!(drain(&mut machine), vec![Step::DeleteInstance { key: "k".into() }]);
    machine.instance_deleted().unwrap();
    assert_eq!(drain(&mut machine), vec![Step::Finish(ReclaimOutcome::Destroyed)]);
}

#[test]
fn answers_out_of_order_are_misuse_not_panics() {
    let mut machine = Reclaim::new("run-1", Some("k".into()), "docker", false);
    // Not polled yet: the question has not been asked.
    assert!(machine.instance_loaded(None).is_err());
    drain(&mut machine);
    assert!(machine.destroy_finished(DestroyResult::Succeeded).is_err());
    assert!(machine.instance_deleted().is_err());
    machine.instance_loaded(None).unwrap();
    assert!(machine.instance_loaded(None).is_err(), "a second answer is refused");
}

#[test]
fn destroy_failure_warns_with_a_placeholder_for_the_host_error() {
    let mut machine = Reclaim::new("run-1", Some("k".into()), "docker", false);
    drain(&mut machine);
    machine.instance_loaded(Some(InstanceView { provider: "docker", provider_sandbox_id: "c1" })).unwrap();
    drain(&mut machine);
    machine.destroy_finished(DestroyResult::Failed { message: "boom".into() }).unwrap();
    let steps = drain(&mut machine);
    let Step::Log(line) = &steps[0] else { panic!("expected a log line first, got {steps:?}") };
    assert_eq!(line.level, LogLevel::Warn);
    assert_eq!(line.meta.last(), Some(&("error", MetaValue::DestroyError)));
    assert_eq!(steps[1], Step::DeleteInstance { key: "k".into() });
}

#[test]
fn reclaimer_fails_after_its_errors_line_on_destroy_failed() {
    let mut machine = Reclaimer::new("run-1", Some("k".into()), "docker", true);
    drain_reclaimer(&mut machine);
    machine.instance_loaded(Some(InstanceView { provider: "docker", provider_sandbox_id: "c1" })).unwrap();
    drain_reclaimer(&mut machine);
    machine.destroy_finished(DestroyResult::Failed { message: "boom".into() }).unwrap();
    let steps = drain_reclaimer(&mut machine);
    assert!(matches!(&steps[1], Step::DeleteInstanceRecordingLeak { leak, .. } if leak.error_message == "boom"));
    machine.instance_deleted().unwrap();
    let steps = drain_reclaimer(&mut machine);
    assert!(matches!(&steps[0], Step::Log(line) if line.level == LogLevel::Errors));
    assert!(matches!(&steps[1], Step::Fail(failure) if failure.run_id == "run-1"));
    assert_eq!(steps.len(), 2);
    assert!(machine.is_finished());
}

/// Everything a host might answer, chosen by proptest.
#[derive(Debug, Clone)]
struct Scenario {
    has_key: bool,
    instance: Option<(String, String)>,
    provider_name: String,
    destroy_fails: bool,
    ledger: bool,
    reclaimer: bool,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let name = prop_oneof![Just("docker".to_owned()), Just("Docker".to_owned()), "[a-zA-Z]{0,4}"];
    (any::<bool>(), proptest::option::of((name.clone(), ".{0,6}")), name, any::<bool>(), any::<bool>(), any::<bool>())
        .prop_map(|(has_key, instance, provider_name, destroy_fails, ledger, reclaimer)| Scenario {
            has_key,
            instance,
            provider_name,
            destroy_fails,
            ledger,
            reclaimer,
        })
}

/// Runs a scenario to the end, answering every question; returns all steps.
fn run(scenario: &Scenario) -> Vec<Step> {
    enum Either {
        Reclaim(Reclaim),
        Reclaimer(Reclaimer),
    }
    let key = scenario.has_key.then(|| "k".to_owned());
    let mut machine = if scenario.reclaimer {
        Either::Reclaimer(Reclaimer::new("r", key, scenario.provider_name.clone(), scenario.ledger))
    } else {
        Either::Reclaim(Reclaim::new("r", key, scenario.provider_name.clone(), scenario.ledger))
    };
    let mut steps = Vec::new();
    for _ in 0..32 {
        let step = match &mut machine {
            Either::Reclaim(m) => m.poll(),
            Either::Reclaimer(m) => m.poll(),
        };
        let Some(step) = step else { break };
        steps.push(step.clone());
        let answer = |m: &mut dyn FnMut() -> Result<(), sandbox_reclaim::machine::Misuse>| m().unwrap();
        match (&step, &mut machine) {
            (Step::GetInstance { .. }, Either::Reclaim(m)) => answer(&mut || m.instance_loaded(view(scenario))),
            (Step::GetInstance { .. }, Either::Reclaimer(m)) => answer(&mut || m.instance_loaded(view(scenario))),
            (Step::Destroy { .. }, Either::Reclaim(m)) => answer(&mut || m.destroy_finished(destroy(scenario))),
            (Step::Destroy { .. }, Either::Reclaimer(m)) => answer(&mut || m.destroy_finished(destroy(scenario))),
            (Step::DeleteInstance { .. } | Step::DeleteInstanceRecordingLeak { .. }, Either::Reclaim(m)) => {
                answer(&mut || m.instance_deleted())
            }
            (Step::DeleteInstance { .. } | Step::DeleteInstanceRecordingLeak { .. }, Either::Reclaimer(m)) => {
                answer(&mut || m.instance_deleted())
            }
            _ => {}
        }
    }
    steps
}

fn view(scenario: &Scenario) -> Option<InstanceView<'_>> {
    scenario.instance.as_ref().map(|(provider, id)| InstanceView { provider, provider_sandbox_id: id })
}

fn destroy(scenario: &Scenario) -> DestroyResult {
    if scenario.destroy_fails {
        DestroyResult::Failed { message: "boom".into() }
    } else {
        DestroyResult::Succeeded
    }
}

fn is_io(step: &Step) -> bool {
    matches!(
        step,
        Step::GetInstance { .. }
            | Step::Destroy { .. }
            | Step::DeleteInstance { .. }
            | Step::DeleteInstanceRecordingLeak { .. }
    )
}

fn is_delete(step: &Step) -> bool {
    matches!(step, Step::DeleteInstance { .. } | Step::DeleteInstanceRecordingLeak { .. })
}

proptest! {
    #[test]
    fn a_provider_mismatch_never_destroys_or_deletes(scenario in scenario()) {
        let steps = run(&scenario);
        let mismatch = steps.iter().any(|step| matches!(step, Step::Finish(ReclaimOutcome::ProviderMismatch)))
            || matches!(&scenario.instance, Some((provider, _)) if scenario.has_key && *provider != scenario.provider_name);
        if mismatch {
            let touched = steps.iter().any(|step| matches!(step, Step::Destroy { .. }) || is_delete(step));
            prop_assert!(!touched, "a mismatch touched the provider or the store");
        }
    }

    #[test]
    fn delete_is_attempted_exactly_once_whenever_destroy_was(scenario in scenario()) {
        let steps = run(&scenario);
        let destroys = steps.iter().filter(|step| matches!(step, Step::Destroy { .. })).count();
        let deletes = steps.iter().filter(|step| is_delete(step)).count();
        prop_assert!(destroys <= 1);
        prop_assert_eq!(destroys, deletes);
        if let Some(destroy_at) = steps.iter().position(|step| matches!(step, Step::Destroy { .. })) {
            let delete_at = steps.iter().position(is_delete).unwrap();
            prop_assert!(destroy_at < delete_at, "destroy before delete");
        }
    }

    #[test]
    fn no_io_without_a_key(scenario in scenario()) {
        let steps = run(&Scenario { has_key: false, ..scenario });
        prop_assert!(!steps.iter().any(is_io));
    }

    #[test]
    fn every_run_ends_with_exactly_one_final_step(scenario in scenario()) {
        let steps = run(&scenario);
        let finals = steps.iter().filter(|step| matches!(step, Step::Finish(_) | Step::Fail(_))).count();
        prop_assert_eq!(finals, 1);
        prop_assert!(matches!(steps.last(), Some(Step::Finish(_) | Step::Fail(_))));
        // Only the reclaimer fails, and only after a failed destroy.
        let failed = matches!(steps.last(), Some(Step::Fail(_)));
        let destroyed = steps.iter().any(|step| matches!(step, Step::Destroy { .. }));
        prop_assert_eq!(failed, scenario.reclaimer && destroyed && scenario.destroy_fails);
    }

    #[test]
    fn the_ledger_step_appears_only_for_a_failed_destroy_on_a_ledger_store(scenario in scenario()) {
        let steps = run(&scenario);
        let ledger_steps = steps.iter().filter(|step| matches!(step, Step::DeleteInstanceRecordingLeak { .. })).count();
        let destroyed = steps.iter().any(|step| matches!(step, Step::Destroy { .. }));
        prop_assert_eq!(ledger_steps == 1, destroyed && scenario.destroy_fails && scenario.ledger);
    }
}
