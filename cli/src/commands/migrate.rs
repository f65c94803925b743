//! `migrate`: opening a store applies its pending migrations; print the
//! schema version it is now at.

use serde_json::json;

use crate::error::{Failure, EXIT_OK};
use crate::output::{envelope, plain_line, print_json, print_text, Mode};
use crate::Context;

pub async fn run(context: &Context) -> Result<i32, Failure> {
    let store = context.open_store().await?;
    let facts = store.facts().await;
    store.close().await;
    let facts = facts?;
    match context.mode {
        Mode::Json => print_json(&envelope(
            context.command,
            json!({ "store": store.describe(), "schemaVersion": facts.schema_version }),
        )),
        Mode::Table => print_text(&format!("{}: schema version {}\n", store.describe(), facts.schema_version)),
        Mode::Plain => print_text(&plain_line(
            "migrate",
            &[("store", store.describe()), ("schema_version", facts.schema_version.to_string())],
        )),
    }
    Ok(EXIT_OK)
}
