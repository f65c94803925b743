//! The `sandbox-reclaim` operator command, as a library so its tests can
//! reach the metrics list. `main.rs` only parses arguments and exits.

pub mod args;
pub mod commands;
pub mod config;
pub mod error;
pub mod heading;
pub mod host;
pub mod hosted;
pub mod metrics;
pub mod output;
pub mod pass_flags;
pub mod pass_options;
pub mod progress;
pub mod providers;
pub mod providers_module;
pub mod redact;
pub mod store;
pub mod time;

use args::{Cli, Command, LogFormat};
use error::Failure;
use output::Mode;

/// What every command runs with.
pub struct Context {
    pub settings: config::Settings,
    pub mode: Mode,
    /// The command's name in JSON documents.
    pub command: &'static str,
    /// `--metrics-addr` was given as a flag (not only in the config file).
    pub metrics_flag: bool,
}

impl Context {
    pub async fn open_store(&self) -> Result<store::Store, Failure> {
        let settings = &self.settings;
        let store = store::Store::open(&settings.store, settings.default_store, settings.connect_timeout).await?;
        tracing::debug!(store = %store.describe(), "store open");
        Ok(store)
    }
}

/// Runs the command and answers its exit code; failures are printed (and,
/// with `--json`, also answered as a JSON document on stdout).
pub async fn run(cli: Cli) -> i32 {
    let command = cli.command.name();
    let json = cli.global.json;
    match execute(cli).await {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("sandbox-reclaim: error: {failure}");
            tracing::debug!(%failure, "exiting");
            if json {
                let fields = serde_json::json!({ "exitCode": failure.exit_code(), "error": failure.to_json() });
                output::print_json(&output::envelope(command, fields));
            }
            failure.exit_code()
        }
    }
}

async fn execute(cli: Cli) -> Result<i32, Failure> {
    let file = match &cli.global.config {
        Some(path) => config::load(path)?,
        None => config::ConfigFile::default(),
    };
    let settings = config::resolve(&cli.global, file)?;
    let service = matches!(&cli.command, Command::Reconcile(args) if args.every.is_some());
    init_logging(settings.log_format, service);
    let context = Context {
        mode: Mode::detect(settings.json),
        command: cli.command.name(),
        metrics_flag: cli.global.metrics_addr.is_some(),
        settings,
    };
    if cli.global.providers.is_some() {
        return Err(Failure::usage(
            "--providers",
            sandbox_reclaim::report::messages::command::PROVIDERS_NOT_IN_THE_BINARY,
        ));
    }
    if context.metrics_flag && !service {
        return Err(Failure::usage(
            "--metrics-addr",
            sandbox_reclaim::report::messages::command::METRICS_ONLY_WITH_EVERY,
        ));
    }
    match &cli.command {
        Command::Reconcile(args) => commands::reconcile::run(&context, args).await,
        Command::Leaks(args::LeaksCommand::List) => commands::leaks::list(&context).await,
        Command::Leaks(args::LeaksCommand::Retry(args)) => commands::leaks::retry(&context, args).await,
        Command::Orphans(args) => commands::orphans::run(&context, args).await,
        Command::Audit(args) => commands::audit::run(&context, args).await,
        Command::Status => commands::status::run(&context).await,
        Command::Migrate => commands::migrate::run(&context).await,
    }
}

/// Logs on stderr through `tracing`: `RUST_LOG` filters (default `warn`,
/// `info` when running as a service); `--log-format json` for JSON lines.
fn init_logging(format: LogFormat, service: bool) {
    use tracing_subscriber::EnvFilter;
    let default = if service { "info" } else { "warn" };
    let mut filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    // sqlx warns of a connect parameter it does not know with its value
    // (`?sslpassword=...`, `?passfile=...`): a credential never reaches the log.
    if let Ok(directive) = "sqlx_postgres::options=error".parse() {
        filter = filter.add_directive(directive);
    }
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().with_current_span(false).try_init(),
        LogFormat::Text => builder.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init(),
    };
}
