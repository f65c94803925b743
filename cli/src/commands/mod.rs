//! One module per subcommand, plus what passes share: running one, signals,
//! rendering its report.

pub mod audit;
pub mod leaks;
pub mod migrate;
pub mod orphans;
pub mod reconcile;
pub mod status;

use std::time::Duration;

use sandbox_reclaim::{FleetStore, PassHosts, ReconcileReport, StopSignal};
use tokio::sync::watch;

use crate::config::PassSettings;
use crate::error::{from_reclaim, Failure};
use crate::pass_options::{check_plan_options, pass_options};
use crate::progress::Progress;
use crate::providers::Providers;
use crate::Context;

/// Listens for SIGINT and SIGTERM: the first stops `stop` (nothing new
/// starts; what runs settles up to its deadline and is written down; sweep
/// claims are released) and flips the returned flag; a second one exits at
/// once with 130.
pub fn install_signals(stop: StopSignal) -> Result<watch::Receiver<bool>, Failure> {
    let (sender, receiver) = watch::channel(false);
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let listen = |kind| {
            signal(kind).map_err(|error| {
                Failure::failed(sandbox_reclaim::report::messages::command::cannot_listen_for_signals(
                    &error.to_string(),
                ))
            })
        };
        let mut terminate = listen(SignalKind::terminate())?;
        let mut interrupt = listen(SignalKind::interrupt())?;
        tokio::spawn(async move {
            let mut received = 0;
            loop {
                let name = tokio::select! {
                    _ = terminate.recv() => "SIGTERM",
                    _ = interrupt.recv() => "SIGINT",
                };
                received += 1;
                if received > 1 {
                    eprintln!("{}", crate::error::signal_again_message(name));
                    std::process::exit(crate::error::EXIT_AGAIN);
                }
                tracing::info!(signal = name, "stopping: in-flight destroys finish up to their deadline, then exit");
                stop.stop();
                let _ = sender.send(true);
            }
        });
    }
    #[cfg(not(unix))]
    {
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                stop.stop();
                let _ = sender.send(true);
            }
        });
    }
    Ok(receiver)
}

/// What a pass is asked to do.
pub struct PassPlan<'a> {
    pub settings: &'a PassSettings,
    pub dry_run: bool,
    /// `orphans`: the sweep only, no leak retries and no idle expiry (`--max-idle`).
    pub orphans_only: bool,
}

/// The pass's options checked by the core exactly as every host's path
/// checks them, before anything opens: the binary refuses what
/// `--providers` refuses (a duration too long for the core, say), naming the
/// same flag through the option's id.
pub fn check_pass(context: &Context, plan: &PassPlan<'_>) -> Result<(), Failure> {
    check_plan_options(&serde_json::Value::Object(options_of(context, plan)), sandbox_reclaim::options::Dialect::Node)
}

/// The pass's options as the core reads them (the plan's keys).
fn options_of(context: &Context, plan: &PassPlan<'_>) -> serde_json::Map<String, serde_json::Value> {
    pass_options(&context.settings, plan.settings, plan.dry_run, !plan.orphans_only)
}

/// Runs one reconcile pass with a progress bar.
pub async fn run_pass(
    context: &Context,
    store: &dyn FleetStore,
    providers: &Providers,
    plan: &PassPlan<'_>,
    stop: &StopSignal,
) -> Result<ReconcileReport, Failure> {
    let progress = Progress::start(true);
    let on_progress = |event: &serde_json::Value| progress.event(event);
    // The options as checked by `check_pass`: the command maps none of them by hand.
    let hosts = PassHosts { providers: providers.as_dyn(), store, on_progress: Some(&on_progress), stop: Some(stop) };
    let result = sandbox_reclaim::reconcile_values(options_of(context, plan), hosts).await;
    progress.finish();
    result.map_err(from_reclaim)
}

/// A pass's wall time for logs.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
