//! `reconcile`: one pass, or a pass every DURATION as a service (with
//! Prometheus metrics), until SIGINT/SIGTERM.

use sandbox_reclaim::{ReconcileReport, ReportScope, StopSignal};
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::time::Instant;

use super::{check_pass, install_signals, run_pass, PassPlan};
use crate::args::ReconcileArgs;
use crate::error::{exit_for, Failure, EXIT_OK};
use crate::metrics::Metrics;
use crate::output::{clip, envelope, plain_line, print_json, print_text, Mode, Table};
use crate::providers::Providers;
use crate::store::Store;
use crate::time::{format_age, now_millis};
use crate::Context;

pub async fn run(context: &Context, args: &ReconcileArgs) -> Result<i32, Failure> {
    let settings = context.settings.pass.with_reconcile(args);
    let plan = PassPlan { settings: &settings, dry_run: args.dry_run, orphans_only: false };
    check_pass(context, &plan)?;
    let store = context.open_store().await?;
    let service = settings.every.map(|every| (every, context.settings.metrics_addr));
    let metrics = match service {
        Some((_, Some(_))) => Some(Arc::new(Metrics::new())),
        _ => None,
    };
    let providers = Providers::build(&context.settings, metrics.clone(), true).await?;
    let stop = StopSignal::new();
    let mut stopped = install_signals(stop.clone())?;

    let Some((every, metrics_addr)) = service else {
        let report = run_pass(context, store.fleet(), &providers, &plan, &stop).await;
        store.close().await;
        let report = report?;
        emit(context, &store, &report, ReportScope::Pass, None);
        return Ok(exit_for(report.still_leaking()));
    };

    let server = match (metrics_addr, &metrics) {
        (Some(addr), Some(metrics)) => {
            let (bound, task) = crate::metrics::serve(addr, metrics.clone()).await?;
            tracing::info!(addr = %bound, "serving Prometheus metrics at /metrics");
            Some(task)
        }
        _ => None,
    };
    if let Some(metrics) = &metrics {
        update_leak_metrics(&store, &providers, metrics).await;
    }
    tracing::info!(every = %humantime::format_duration(every), store = %store.describe(), providers = ?providers.names(), "reconciling");
    let mut pass = 0_u64;
    let mut next = Instant::now();
    while !stop.is_stopped() {
        pass += 1;
        let started = Instant::now();
        match run_pass(context, store.fleet(), &providers, &plan, &stop).await {
            Ok(report) => {
                tracing::info!(
                    pass,
                    destroyed = report.counts.destroyed,
                    failed = report.counts.failed,
                    deferred = report.counts.deferred,
                    planned = report.counts.planned,
                    cut_short = report.cut_short,
                    still_leaking = report.still_leaking(),
                    elapsed_ms = report.elapsed_ms,
                    "pass done"
                );
                if let Some(metrics) = &metrics {
                    metrics.observe_pass(&report, now_millis());
                    update_leak_metrics(&store, &providers, metrics).await;
                }
                emit(context, &store, &report, ReportScope::Pass, Some(pass));
            }
            // Options are checked before anything runs: they will not get better.
            Err(failure @ Failure::Usage { .. }) => return Err(failure),
            Err(failure) => {
                tracing::error!(pass, error = %failure, "pass failed; retrying at the next interval");
                if let Some(metrics) = &metrics {
                    metrics.observe_failed_pass(started.elapsed(), now_millis());
                }
                if context.mode == Mode::Json {
                    print_json(&envelope(context.command, json!({ "pass": pass, "error": failure.to_json() })));
                }
            }
        }
        next += every;
        let now = Instant::now();
        if next < now {
            // A pass longer than the interval: start the next one now, skip the missed ones.
            next = now;
        }
        tokio::select! {
            () = tokio::time::sleep_until(next) => {}
            _ = stopped.changed() => {}
        }
    }
    tracing::info!(passes = pass, "stopped");
    if let Some(task) = server {
        task.abort();
    }
    store.close().await;
    Ok(EXIT_OK)
}

async fn update_leak_metrics(store: &Store, providers: &Providers, metrics: &Metrics) {
    // One grouping query, not the whole ledger, each pass.
    match store.ledger().summarize_leaks().await {
        Ok(leaks) => metrics.observe_leaks(&providers.names(), &leaks, now_millis()),
        Err(error) => tracing::warn!(%error, "could not read the leak ledger for the metrics"),
    }
}

/// The report as JSON: the core's report, or its orphan part.
pub fn report_json(report: &ReconcileReport, view: ReportScope) -> Value {
    let mut value = serde_json::to_value(report).unwrap_or(Value::Null);
    if view == ReportScope::Orphans {
        if let Value::Object(object) = &mut value {
            object.remove("idle");
            // The view's own verdict, so the document never says two things.
            object.insert("stillLeaking".to_owned(), Value::Bool(report.still_leaking_in(view)));
            if let Some(Value::Array(providers)) = object.get_mut("providers") {
                for provider in providers {
                    if let Value::Object(provider) = provider {
                        provider.remove("leaks");
                    }
                }
            }
            object.insert("counts".into(), serde_json::to_value(report.counts_in(view)).unwrap_or(Value::Null));
            let actions: Vec<_> = report.actions_in(view).collect();
            object.insert("actions".into(), serde_json::to_value(&actions).unwrap_or(Value::Null));
        }
    }
    value
}

/// Prints a pass's report in the context's mode.
pub fn emit(context: &Context, store: &Store, report: &ReconcileReport, view: ReportScope, pass: Option<u64>) {
    emit_to(context.mode, context.command, &store.describe(), report, view, pass);
}

/// Prints `report` in `mode`; answers the exit code it stands for.
pub fn emit_to(
    mode: Mode,
    command: &str,
    store: &str,
    report: &ReconcileReport,
    view: ReportScope,
    pass: Option<u64>,
) -> i32 {
    let leaking = report.still_leaking_in(view);
    match mode {
        Mode::Json => {
            let mut fields = json!({
                "store": store,
                "stillLeaking": leaking,
                "exitCode": exit_for(leaking),
                "report": report_json(report, view),
            });
            if let Some(pass) = pass {
                fields["pass"] = json!(pass);
            }
            print_json(&envelope(command, fields));
        }
        Mode::Table => print_text(&render_table(report, view, leaking)),
        Mode::Plain => print_text(&render_plain(report, view, leaking)),
    }
    exit_for(leaking)
}

fn kebab<T: serde::Serialize>(value: T) -> String {
    serde_json::to_value(value).ok().and_then(|value| value.as_str().map(str::to_owned)).unwrap_or_default()
}

const MAX_ACTION_ROWS: usize = 50;

fn render_table(report: &ReconcileReport, view: ReportScope, leaking: bool) -> String {
    let mut text = String::new();
    let what = if view == ReportScope::Pass { "Reconcile pass" } else { "Orphan sweep" };
    let dry = if report.dry_run { " (dry run: nothing changed)" } else { "" };
    let cut = if report.cut_short { ", cut short" } else { "" };
    text.push_str(&format!("{what} on {}{dry}: {}{cut}\n\n", report.host, format_age(report.elapsed_ms)));

    let mut providers = match view {
        ReportScope::Pass => Table::new(&[
            "PROVIDER",
            "LEAKS due/destroyed/failed/deferred",
            "SWEEP",
            "LISTED",
            "ORPHANS found/destroyed/failed/deferred",
        ]),
        ReportScope::Orphans => Table::new(&[
            "PROVIDER",
            "SWEEP",
            "LISTED",
            "FOREIGN",
            "REFERENCED",
            "YOUNG",
            "DELETING",
            "ORPHANS",
            "DESTROYED",
            "FAILED",
            "DEFERRED",
        ]),
    };
    let mut errors = Vec::new();
    for provider in &report.providers {
        let (leaks, orphans) = (&provider.leaks, &provider.orphans);
        let sweep = kebab(orphans.status);
        if let Some(error) = &orphans.error {
            errors.push(format!("  {} sweep {sweep}: {error}\n", provider.name));
        }
        let cells = match view {
            ReportScope::Pass => vec![
                provider.name.clone(),
                format!("{}/{}/{}/{}", leaks.due, leaks.destroyed, leaks.failed, leaks.deferred),
                sweep,
                orphans.listed.to_string(),
                format!("{}/{}/{}/{}", orphans.found, orphans.destroyed, orphans.failed, orphans.deferred),
            ],
            ReportScope::Orphans => vec![
                provider.name.clone(),
                sweep,
                orphans.listed.to_string(),
                orphans.foreign.to_string(),
                orphans.referenced.to_string(),
                orphans.young.to_string(),
                orphans.deleting.to_string(),
                orphans.found.to_string(),
                orphans.destroyed.to_string(),
                orphans.failed.to_string(),
                orphans.deferred.to_string(),
            ],
        };
        providers.row(cells);
    }
    text.push_str(&providers.render());
    for error in errors {
        text.push_str(&error);
    }
    if view == ReportScope::Pass && report.idle.enabled {
        let idle = &report.idle;
        text.push_str(&format!(
            "\nIdle records: {} stale, {} expired, {} touched since, {} of other providers\n",
            idle.stale, idle.expired, idle.touched, idle.skipped
        ));
    }

    let shown: Vec<_> = report.actions_in(view).collect();
    if !shown.is_empty() {
        let mut table = Table::new(&["REASON", "PROVIDER", "SANDBOX", "KEY", "RESULT", "ERROR"]);
        for action in shown.iter().take(MAX_ACTION_ROWS) {
            table.row(vec![
                action.reason.as_str().to_owned(),
                action.provider.clone(),
                clip(&action.provider_sandbox_id, 40),
                clip(action.key.as_deref().unwrap_or("-"), 30),
                kebab(action.result),
                clip(action.error.as_deref().unwrap_or(""), 60),
            ]);
        }
        text.push('\n');
        text.push_str(&table.render());
        if shown.len() > MAX_ACTION_ROWS {
            text.push_str(&format!("… and {} more (--json lists them all)\n", shown.len() - MAX_ACTION_ROWS));
        }
    }
    text.push('\n');
    text.push_str(&summary(report, view, leaking));
    text.push('\n');
    text
}

fn summary(report: &ReconcileReport, view: ReportScope, leaking: bool) -> String {
    let counts = report.counts_in(view);
    let mut text = if report.dry_run {
        format!("{} planned", counts.planned)
    } else {
        format!("{} destroyed, {} failed, {} deferred", counts.destroyed, counts.failed, counts.deferred)
    };
    if leaking {
        text.push_str(" — STILL LEAKING (exit 1)");
    } else {
        text.push_str(" — nothing left leaking");
    }
    text
}

fn render_plain(report: &ReconcileReport, view: ReportScope, leaking: bool) -> String {
    let mut text = String::new();
    for provider in &report.providers {
        let (leaks, orphans) = (&provider.leaks, &provider.orphans);
        let mut pairs = vec![("name", provider.name.clone())];
        if view == ReportScope::Pass {
            pairs.extend([
                ("leaks_due", leaks.due.to_string()),
                ("leaks_destroyed", leaks.destroyed.to_string()),
                ("leaks_failed", leaks.failed.to_string()),
                ("leaks_deferred", leaks.deferred.to_string()),
            ]);
        }
        pairs.extend([
            ("sweep", kebab(orphans.status)),
            ("listed", orphans.listed.to_string()),
            ("foreign", orphans.foreign.to_string()),
            ("referenced", orphans.referenced.to_string()),
            ("young", orphans.young.to_string()),
            ("deleting", orphans.deleting.to_string()),
            ("orphans_found", orphans.found.to_string()),
            ("orphans_destroyed", orphans.destroyed.to_string()),
            ("orphans_failed", orphans.failed.to_string()),
            ("orphans_deferred", orphans.deferred.to_string()),
        ]);
        if let Some(error) = &orphans.error {
            pairs.push(("sweep_error", error.clone()));
        }
        text.push_str(&plain_line("provider", &pairs));
    }
    if view == ReportScope::Pass && report.idle.enabled {
        let idle = &report.idle;
        text.push_str(&plain_line(
            "idle",
            &[
                ("stale", idle.stale.to_string()),
                ("expired", idle.expired.to_string()),
                ("touched", idle.touched.to_string()),
                ("skipped", idle.skipped.to_string()),
            ],
        ));
    }
    for action in report.actions_in(view) {
        let mut pairs = vec![
            ("reason", action.reason.as_str().to_owned()),
            ("provider", action.provider.clone()),
            ("sandbox", action.provider_sandbox_id.clone()),
        ];
        if let Some(key) = &action.key {
            pairs.push(("key", key.clone()));
        }
        pairs.push(("result", kebab(action.result)));
        if let Some(error) = &action.error {
            pairs.push(("error", error.clone()));
        }
        text.push_str(&plain_line("action", &pairs));
    }
    let counts = report.counts_in(view);
    let kind = if view == ReportScope::Pass { "reconcile" } else { "orphans" };
    text.push_str(&plain_line(
        kind,
        &[
            ("host", report.host.clone()),
            ("dry_run", report.dry_run.to_string()),
            ("planned", counts.planned.to_string()),
            ("destroyed", counts.destroyed.to_string()),
            ("failed", counts.failed.to_string()),
            ("deferred", counts.deferred.to_string()),
            ("cut_short", report.cut_short.to_string()),
            ("elapsed_ms", report.elapsed_ms.to_string()),
            ("still_leaking", leaking.to_string()),
        ],
    ));
    text
}
