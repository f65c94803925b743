//! How results are printed: aligned tables on a terminal, plain `key=value`
//! lines otherwise, or one JSON document (`--json`; JSON lines with `--every`).

use std::io::{IsTerminal, Write};

use serde_json::{json, Map, Value};

/// Version of the JSON documents' envelope; bumped only on a breaking change.
pub const JSON_VERSION: u64 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Json,
    /// Tables for a person at a terminal.
    Table,
    /// `key=value` lines for pipes and logs.
    Plain,
}

impl Mode {
    pub fn detect(json: bool) -> Self {
        if json {
            Self::Json
        } else if std::io::stdout().is_terminal() {
            Self::Table
        } else {
            Self::Plain
        }
    }
}

/// A JSON document: `{"version": 1, "command": ..., <fields>}`.
pub fn envelope(command: &str, fields: Value) -> Value {
    let mut document = Map::new();
    document.insert("version".into(), json!(JSON_VERSION));
    document.insert("command".into(), json!(command));
    if let Value::Object(fields) = fields {
        document.extend(fields);
    }
    Value::Object(document)
}

/// Prints a JSON document on one line (so `--every` output is JSON lines).
pub fn print_json(document: &Value) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{document}");
    let _ = stdout.flush();
}

/// Prints text as is.
pub fn print_text(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// A table: a header row and rows, columns padded to their widest cell.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Self { header: header.iter().map(|cell| (*cell).to_owned()).collect(), rows: Vec::new() }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|cell| cell.chars().count()).collect();
        for row in &self.rows {
            for (index, cell) in row.iter().enumerate().take(columns) {
                widths[index] = widths[index].max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut text = String::new();
            for (index, cell) in cells.iter().enumerate().take(columns) {
                if index + 1 == columns {
                    text.push_str(cell);
                } else {
                    text.push_str(&format!("{cell:<width$}  ", width = widths[index]));
                }
            }
            text.trim_end().to_owned() + "\n"
        };
        let mut text = line(&self.header);
        for row in &self.rows {
            text.push_str(&line(row));
        }
        text
    }
}

/// One plain line: `kind key=value ...`, values with spaces or quotes quoted.
pub fn plain_line(kind: &str, pairs: &[(&str, String)]) -> String {
    let mut text = kind.to_owned();
    for (key, value) in pairs {
        text.push(' ');
        text.push_str(key);
        text.push('=');
        if value.is_empty() || value.chars().any(|c| c.is_whitespace() || c == '"' || c == '=') {
            text.push_str(&serde_json::to_string(value).unwrap_or_default());
        } else {
            text.push_str(value);
        }
    }
    text.push('\n');
    text
}

/// Shortens a cell for a table.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut clipped: String = text.chars().take(max.saturating_sub(1)).collect();
    clipped.push('…');
    clipped
}

/// Prints `failure` as the binary does (stderr, and the JSON error document
/// with `--json`); with `pass` (`--every`), as a failed pass the next
/// interval retries. Answers the exit code.
pub fn print_failure(command: &str, json: bool, failure: &crate::error::Failure, pass: Option<u64>) -> i32 {
    match pass {
        None => {
            eprintln!("sandbox-reclaim: error: {failure}");
            if json {
                let fields = json!({ "exitCode": failure.exit_code(), "error": failure.to_json() });
                print_json(&envelope(command, fields));
            }
        }
        Some(pass) => {
            eprintln!("sandbox-reclaim: error: pass {pass} failed; retrying at the next interval: {failure}");
            if json {
                print_json(&envelope(command, json!({ "pass": pass, "error": failure.to_json() })));
            }
        }
    }
    failure.exit_code()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align() {
        let mut table = Table::new(&["A", "LONGER"]);
        table.row(vec!["wide cell".into(), "x".into()]);
        assert_eq!(table.render(), "A          LONGER\nwide cell  x\n");
    }

    #[test]
    fn plain_lines_quote() {
        assert_eq!(
            plain_line("leak", &[("id", "a".into()), ("error", "no such \"x\"".into())]),
            "leak id=a error=\"no such \\\"x\\\"\"\n"
        );
    }
}
