//! `leaks list` and `leaks retry`.

use std::time::Duration;

use sandbox_reclaim::{retry_leaks, LeakEntry, LeakReason, RetryOptions, SandboxProvider, ScheduledLeak, StoreError};
use serde_json::{json, Value};

use crate::args::RetryArgs;
use crate::error::{exit_for, from_reclaim, Failure, EXIT_OK};
use crate::output::{clip, envelope, plain_line, print_json, print_text, Mode, Table};
use crate::providers::Providers;
use crate::store::Store;
use crate::time::{format_age, format_time, now_millis};
use crate::Context;

fn store_failure(store: &Store) -> impl Fn(StoreError) -> Failure + '_ {
    move |error| Failure::unavailable("store", format!("{}: {error}", store.describe()))
}

/// A ledger entry with what the fleet columns add.
struct Listed {
    entry: LeakEntry,
    reason: Option<LeakReason>,
    next_attempt_at: Option<u64>,
    /// `due` (the next pass retries it), `backoff` (not before
    /// `nextAttemptAt`), or `claimed` (a pass is retrying it right now).
    state: &'static str,
}

async fn listed(store: &Store, now: u64) -> Result<Vec<Listed>, Failure> {
    let scheduled = store.fleet().scheduled_leaks().await.map_err(store_failure(store))?;
    Ok(scheduled
        .into_iter()
        .map(|ScheduledLeak { due, claimed_until }| {
            let free = claimed_until.is_none_or(|until| until <= now);
            let state = if free && due.next_attempt_at <= now {
                "due"
            } else if due.next_attempt_at > now {
                "backoff"
            } else {
                "claimed"
            };
            Listed { entry: due.entry, reason: Some(due.reason), next_attempt_at: Some(due.next_attempt_at), state }
        })
        .collect())
}

pub async fn list(context: &Context) -> Result<i32, Failure> {
    let store = context.open_store().await?;
    let now = now_millis();
    let leaks = listed(&store, now).await;
    store.close().await;
    let leaks = leaks?;
    match context.mode {
        Mode::Json => {
            let rows: Vec<Value> = leaks
                .iter()
                .map(|leak| {
                    let mut row = serde_json::to_value(&leak.entry).unwrap_or(Value::Null);
                    row["reason"] = json!(leak.reason.map(LeakReason::as_str));
                    row["nextAttemptAt"] = json!(leak.next_attempt_at);
                    row["state"] = json!(leak.state);
                    row["ageMs"] = json!(now.saturating_sub(leak.entry.failed_at));
                    row
                })
                .collect();
            print_json(&envelope(
                context.command,
                json!({ "store": store.describe(), "total": rows.len(), "leaks": rows }),
            ));
        }
        Mode::Table => {
            let mut table = Table::new(&[
                "PROVIDER",
                "SANDBOX",
                "KEY",
                "REASON",
                "ATTEMPTS",
                "LAST FAILED",
                "STATE",
                "NEXT ATTEMPT",
                "LAST ERROR",
            ]);
            for leak in &leaks {
                let entry = &leak.entry;
                table.row(vec![
                    entry.provider.clone(),
                    clip(&entry.provider_sandbox_id, 40),
                    clip(&entry.key, 30),
                    leak.reason.map_or("-", LeakReason::as_str).to_owned(),
                    entry.attempts.to_string(),
                    format!("{} ago", format_age(now.saturating_sub(entry.failed_at))),
                    leak.state.to_owned(),
                    match leak.next_attempt_at {
                        Some(next) if next > now => format!("in {}", format_age(next - now)),
                        _ => "-".to_owned(),
                    },
                    clip(&entry.last_error, 60),
                ]);
            }
            let mut text = String::new();
            if !table.is_empty() {
                text.push_str(&table.render());
                text.push('\n');
            }
            text.push_str(&format!("{} leak(s) in {}\n", leaks.len(), store.describe()));
            print_text(&text);
        }
        Mode::Plain => {
            let mut text = String::new();
            for leak in &leaks {
                let entry = &leak.entry;
                text.push_str(&plain_line(
                    "leak",
                    &[
                        ("provider", entry.provider.clone()),
                        ("sandbox", entry.provider_sandbox_id.clone()),
                        ("key", entry.key.clone()),
                        ("run", entry.run_id.clone()),
                        ("reason", leak.reason.map_or("-", LeakReason::as_str).to_owned()),
                        ("attempts", entry.attempts.to_string()),
                        ("failed_at", format_time(entry.failed_at)),
                        ("state", leak.state.to_owned()),
                        ("next_attempt_at", leak.next_attempt_at.map(format_time).unwrap_or_default()),
                        ("error", entry.last_error.clone()),
                    ],
                ));
            }
            text.push_str(&plain_line("leaks", &[("total", leaks.len().to_string())]));
            print_text(&text);
        }
    }
    Ok(EXIT_OK)
}

pub async fn retry(context: &Context, args: &RetryArgs) -> Result<i32, Failure> {
    let store = context.open_store().await?;
    let providers = Providers::build(&context.settings, None, true).await?;
    let options = RetryOptions {
        limit: args.limit as usize,
        // The flag, else `[reconcile] destroy-timeout`.
        destroy_timeout: args.destroy_timeout.or_else(|| {
            context
                .settings
                .pass
                .values
                .get("destroyTimeoutMs")
                .and_then(serde_json::Value::as_u64)
                .map(Duration::from_millis)
        }),
        ..RetryOptions::default()
    };
    let mut rows = Vec::new();
    for provider in &providers.list {
        let summary = retry_leaks(provider, store.ledger(), options).await.map_err(from_reclaim);
        let summary = match summary {
            Ok(summary) => summary,
            Err(failure) => {
                store.close().await;
                return Err(failure);
            }
        };
        let remaining = store.ledger().count_leaks(Some(provider.name())).await.map_err(store_failure(&store))?;
        tracing::info!(
            provider = provider.name(),
            retried = summary.retried,
            destroyed = summary.destroyed,
            still_failing = summary.still_failing,
            remaining,
            "leaks retried"
        );
        rows.push((provider.name().to_owned(), summary, remaining));
    }
    store.close().await;
    let leaking = rows.iter().any(|(_, summary, remaining)| summary.still_leaking(*remaining));
    let code = exit_for(leaking);
    match context.mode {
        Mode::Json => {
            let providers: Vec<Value> = rows
                .iter()
                .map(|(name, summary, remaining)| {
                    json!({
                        "provider": name,
                        "retried": summary.retried,
                        "destroyed": summary.destroyed,
                        "stillFailing": summary.still_failing,
                        "remaining": remaining,
                    })
                })
                .collect();
            print_json(&envelope(
                context.command,
                json!({ "store": store.describe(), "stillLeaking": leaking, "exitCode": code, "providers": providers }),
            ));
        }
        Mode::Table => {
            let mut table = Table::new(&["PROVIDER", "RETRIED", "DESTROYED", "STILL FAILING", "REMAINING"]);
            for (name, summary, remaining) in &rows {
                table.row(vec![
                    name.clone(),
                    summary.retried.to_string(),
                    summary.destroyed.to_string(),
                    summary.still_failing.to_string(),
                    remaining.to_string(),
                ]);
            }
            let verdict = if leaking { "STILL LEAKING (exit 1)" } else { "nothing left leaking" };
            print_text(&format!("{}\n{verdict}\n", table.render()));
        }
        Mode::Plain => {
            let mut text = String::new();
            for (name, summary, remaining) in &rows {
                text.push_str(&plain_line(
                    "retry",
                    &[
                        ("provider", name.clone()),
                        ("retried", summary.retried.to_string()),
                        ("destroyed", summary.destroyed.to_string()),
                        ("still_failing", summary.still_failing.to_string()),
                        ("remaining", remaining.to_string()),
                    ],
                ));
            }
            text.push_str(&plain_line("leaks", &[("still_leaking", leaking.to_string())]));
            print_text(&text);
        }
    }
    Ok(code)
}
