//! `orphans`: a reconcile pass restricted to the orphan sweep: no leak
//! retries and no idle expiry (inputs of the core's pass), so the pass
//! destroys orphans only; the report shows that part.

use sandbox_reclaim::StopSignal;

use super::reconcile::{emit, still_leaking, View};
use super::{install_signals, run_pass, PassPlan};
use crate::args::OrphansArgs;
use crate::error::{Failure, EXIT_LEAKING, EXIT_OK};
use crate::providers::Providers;
use crate::Context;

pub async fn run(context: &Context, args: &OrphansArgs) -> Result<i32, Failure> {
    let settings = context.settings.pass.with_pass(&args.pass);
    let store = context.open_store().await?;
    let providers = Providers::build(&context.settings, None, true).await?;
    let stop = StopSignal::new();
    let _stopped = install_signals(stop.clone())?;
    let plan = PassPlan { settings: &settings, dry_run: args.dry_run, orphans_only: true };
    let report = run_pass(context, store.fleet(), &providers, &plan, &stop).await;
    store.close().await;
    let report = report?;
    emit(context, &store, &report, View::Orphans, None);
    Ok(if still_leaking(&report, View::Orphans) { EXIT_LEAKING } else { EXIT_OK })
}
