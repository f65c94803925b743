//! `audit`: the destroy attempts fleet passes made, oldest first.

use serde_json::json;

use crate::args::AuditArgs;
use crate::error::{Failure, EXIT_OK};
use crate::output::{clip, envelope, plain_line, print_json, print_text, Mode, Table};
use crate::time::{format_time, now_millis, parse_time};
use crate::Context;

pub async fn run(context: &Context, args: &AuditArgs) -> Result<i32, Failure> {
    let since = parse_time(&args.since, now_millis()).map_err(|message| Failure::usage("--since", message))?;
    let store = context.open_store().await?;
    let rows = store.fleet().list_audit(Some(since), args.limit as usize).await;
    store.close().await;
    let rows = rows.map_err(|error| Failure::unavailable("store", format!("{}: {error}", store.describe())))?;
    match context.mode {
        Mode::Json => print_json(&envelope(
            context.command,
            json!({
                "store": store.describe(),
                "since": since,
                "limit": args.limit,
                "total": rows.len(),
                "entries": rows,
            }),
        )),
        Mode::Table => {
            let mut table = Table::new(&["AT", "HOST", "PROVIDER", "SANDBOX", "KEY", "REASON", "RESULT", "ERROR"]);
            for row in &rows {
                table.row(vec![
                    format_time(row.at),
                    row.host.clone(),
                    row.provider.clone(),
                    clip(&row.provider_sandbox_id, 40),
                    clip(row.key.as_deref().unwrap_or("-"), 30),
                    row.reason.clone(),
                    row.result.clone(),
                    clip(row.error.as_deref().unwrap_or(""), 60),
                ]);
            }
            let mut text = String::new();
            if !table.is_empty() {
                text.push_str(&table.render());
                text.push('\n');
            }
            text.push_str(&format!("{} audit row(s) since {}\n", rows.len(), format_time(since)));
            print_text(&text);
        }
        Mode::Plain => {
            let mut text = String::new();
            for row in &rows {
                let mut pairs = vec![
                    ("at", format_time(row.at)),
                    ("host", row.host.clone()),
                    ("provider", row.provider.clone()),
                    ("sandbox", row.provider_sandbox_id.clone()),
                ];
                if let Some(key) = &row.key {
                    pairs.push(("key", key.clone()));
                }
                pairs.push(("reason", row.reason.clone()));
                pairs.push(("result", row.result.clone()));
                if let Some(error) = &row.error {
                    pairs.push(("error", error.clone()));
                }
                text.push_str(&plain_line("audit", &pairs));
            }
            print_text(&text);
        }
    }
    Ok(EXIT_OK)
}
