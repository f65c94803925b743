//! The progress bar of a pass on a terminal (indicatif, on stderr). It shows
//! up only once a pass has run for a moment (1 s, or
//! `SANDBOX_RECLAIM_PROGRESS_DELAY`), fed from the pass's progress events
//! (`kind`, `done`, `total`, plus the action's provider and result).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::time::parse_duration;

pub struct Progress {
    bar: Option<ProgressBar>,
    /// Set once the bar is drawn (after the delay).
    shown: Arc<AtomicBool>,
}

impl Progress {
    /// A bar if stderr is a terminal (and `enabled`), hidden until the delay passes.
    pub fn start(enabled: bool) -> Self {
        let shown = Arc::new(AtomicBool::new(false));
        if !enabled || !std::io::stderr().is_terminal() {
            return Self { bar: None, shown };
        }
        let delay = std::env::var("SANDBOX_RECLAIM_PROGRESS_DELAY")
            .ok()
            .and_then(|text| parse_duration(&text).ok())
            .unwrap_or(Duration::from_secs(1));
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} destroys  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        let (revealed, reveal) = (bar.clone(), shown.clone());
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if !revealed.is_finished() {
                reveal.store(true, Ordering::SeqCst);
                revealed.set_draw_target(ProgressDrawTarget::stderr());
                revealed.enable_steady_tick(Duration::from_millis(100));
            }
        });
        Self { bar: Some(bar), shown }
    }

    /// One progress event of the pass.
    pub fn event(&self, event: &serde_json::Value) {
        let Some(bar) = &self.bar else { return };
        if let Some(total) = event.get("total").and_then(serde_json::Value::as_u64) {
            bar.set_length(total);
        }
        if let Some(done) = event.get("done").and_then(serde_json::Value::as_u64) {
            bar.set_position(done);
        }
        let text = |key: &str| event.get(key).and_then(serde_json::Value::as_str).unwrap_or("").to_owned();
        bar.set_message(format!("{} {} {}", text("provider"), text("reason"), text("result")).trim().to_owned());
    }

    /// Leaves the bar's last state on screen (if it ever showed), and the
    /// cursor on the next line for what is printed after it.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.set_message("done");
            bar.finish();
            if self.shown.load(Ordering::SeqCst) {
                let mut stderr = std::io::stderr().lock();
                let _ = writeln!(stderr);
                let _ = stderr.flush();
            }
        }
    }
}
