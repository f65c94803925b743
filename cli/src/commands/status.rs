//! `status`: records, leaks by provider and age, the last pass.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::error::{Failure, EXIT_OK};
use crate::output::{envelope, plain_line, print_json, print_text, Mode, Table};
use crate::time::{format_age, format_time, now_millis};
use crate::Context;

pub async fn run(context: &Context) -> Result<i32, Failure> {
    let store = context.open_store().await?;
    let facts = store.facts().await;
    let leaks = store.ledger().list_leaks(None).await;
    store.close().await;
    let facts = facts?;
    let leaks = leaks.map_err(|error| Failure::unavailable("store", format!("{}: {error}", store.describe())))?;
    let now = now_millis();
    // provider → (count, oldest failedAt)
    let mut by_provider: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for leak in &leaks {
        let entry = by_provider.entry(leak.provider.as_str()).or_insert((0, u64::MAX));
        entry.0 += 1;
        entry.1 = entry.1.min(leak.failed_at);
    }
    match context.mode {
        Mode::Json => {
            let providers: Vec<Value> = by_provider
                .iter()
                .map(|(provider, (count, oldest))| {
                    json!({
                        "provider": provider,
                        "count": count,
                        "oldestFailedAt": oldest,
                        "oldestAgeMs": now.saturating_sub(*oldest),
                    })
                })
                .collect();
            let last_pass = facts.last_audit_at.map(|at| json!({ "at": at, "ageMs": now.saturating_sub(at) }));
            print_json(&envelope(
                context.command,
                json!({
                    "store": store.describe(),
                    "schemaVersion": facts.schema_version,
                    "records": facts.records,
                    "leaks": { "total": leaks.len(), "byProvider": providers },
                    "lastPass": last_pass,
                }),
            ));
        }
        Mode::Table => {
            let mut text = format!(
                "Store:          {} (schema version {})\nRecords:        {}\nLeaks:          {}\nLast pass:      {}\n",
                store.describe(),
                facts.schema_version,
                facts.records,
                leaks.len(),
                match facts.last_audit_at {
                    Some(at) => format!("{} ({} ago)", format_time(at), format_age(now.saturating_sub(at))),
                    None => "none recorded".to_owned(),
                }
            );
            if !by_provider.is_empty() {
                let mut table = Table::new(&["PROVIDER", "LEAKS", "OLDEST"]);
                for (provider, (count, oldest)) in &by_provider {
                    table.row(vec![
                        (*provider).to_owned(),
                        count.to_string(),
                        format!("{} ago", format_age(now.saturating_sub(*oldest))),
                    ]);
                }
                text.push('\n');
                text.push_str(&table.render());
            }
            print_text(&text);
        }
        Mode::Plain => {
            let mut text = plain_line(
                "status",
                &[
                    ("store", store.describe()),
                    ("schema_version", facts.schema_version.to_string()),
                    ("records", facts.records.to_string()),
                    ("leaks", leaks.len().to_string()),
                    ("last_pass", facts.last_audit_at.map(format_time).unwrap_or_default()),
                ],
            );
            for (provider, (count, oldest)) in &by_provider {
                text.push_str(&plain_line(
                    "leaks",
                    &[
                        ("provider", (*provider).to_owned()),
                        ("count", count.to_string()),
                        ("oldest_failed_at", format_time(*oldest)),
                        ("oldest_age_s", (now.saturating_sub(*oldest) / 1000).to_string()),
                    ],
                ));
            }
            print_text(&text);
        }
    }
    Ok(EXIT_OK)
}
