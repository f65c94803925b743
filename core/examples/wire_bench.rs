//! What a plain reclaim costs in the core alone: its four machine calls
//! through the wire's run table (start, then get / destroy / delete
//! completions), no language boundary. `make bench` prints it beside the
//! bindings' per-call figures, so the boundary's share is visible.
//!
//!   cargo run --release -p sandbox-reclaim --example wire_bench

use sandbox_reclaim::machine::{BoxedFlow, Reclaim, ReclaimApi, ReclaimInput};
use sandbox_reclaim::wire::{completion, ending, RunTable, Slot};

/// The id of the one effect a plain reclaim's batch starts (after `op`).
fn effect_id(batch: &[Slot]) -> u32 {
    match batch[4] {
        Slot::Int(id) => id as u32,
        _ => panic!("a running reclaim starts one effect"),
    }
}

fn main() {
    let calls = 200_000;
    let mut table = RunTable::new();
    let mut round = || {
        let start = std::time::Instant::now();
        for i in 0..calls {
            let input = ReclaimInput {
                api: ReclaimApi::ReclaimSandbox,
                run_id: format!("run-{i}"),
                sandbox_key: Some(format!("thread-{i}:sandbox")),
                providers: vec!["docker".into()],
                store_has_ledger: false,
                destroy_timeout_ms: None,
            };
            let flow: BoxedFlow = Box::new(Reclaim::new(input, 0));
            let batch = table.start(flow);
            let Slot::Int(run) = batch[0] else { panic!("no run number") };
            let run = run as u32;
            let found = Some(format!("ctr-{i}"));
            let batch = table.complete(run, effect_id(&batch), completion::INSTANCE, Some("docker".into()), found, 0);
            let batch = table.complete(run, effect_id(&batch.unwrap()), completion::OK, None, None, 0).unwrap();
            let batch = table.complete(run, effect_id(&batch), completion::OK, None, None, 0).unwrap();
            assert_eq!(batch[2], Slot::Int(u64::from(ending::RESOLVE_STRING)), "the reclaim ended");
        }
        start.elapsed().as_secs_f64() * 1e6 / f64::from(calls)
    };
    let mut rounds: Vec<f64> = (0..7).map(|_| round()).collect();
    rounds.sort_by(f64::total_cmp);
    println!("core alone: a plain reclaim's 4 machine calls, {calls} reclaims x 7 rounds (median)");
    println!("  {:.3} µs/reclaim", rounds[3]);
}
