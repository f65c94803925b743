//! `orphans`: a reconcile pass restricted to the orphan sweep: no leak
//! retries and no idle expiry (inputs of the core's pass), so the pass
//! destroys orphans only; the report shows that part.

use sandbox_reclaim::{ReportScope, StopSignal};

use super::reconcile::emit;
use super::{check_pass, install_signals, run_pass, PassPlan};
use crate::args::OrphansArgs;
use crate::error::{exit_for, Failure};
use crate::providers::Providers;
use crate::Context;

pub async fn run(context: &Context, args: &OrphansArgs) -> Result<i32, Failure> {
    let settings = context.settings.pass.with_orphans(args);
    let plan = PassPlan { settings: &settings, dry_run: args.dry_run, orphans_only: true };
    check_pass(context, &plan)?;
    let store = context.open_store().await?;
    let providers = Providers::build(&context.settings, None, true).await?;
    let stop = StopSignal::new();
    let _stopped = install_signals(stop.clone())?;
    let report = run_pass(context, store.fleet(), &providers, &plan, &stop).await;
    store.close().await;
    let report = report?;
    emit(context, &store, &report, ReportScope::Orphans, None);
    Ok(exit_for(report.orphans_still_leaking()))
}
