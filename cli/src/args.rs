//! The command line (clap derive). Values clap can check (numbers, durations,
//! addresses) are refused by clap itself with exit code 2 and the flag named.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use sandbox_reclaim::options::provider::VendorSpec;
use sandbox_reclaim::providers::{HostedVendor, VENDORS};
use sandbox_reclaim::report::messages;

use crate::heading::Heading;
use crate::pass_flags::{OrphansFlags, ReconcileFlags};
use crate::time::parse_positive_duration;

/// Finds and destroys the sandboxes AI agent runs leave behind: leaks in the
/// ledger, orphans no record references, idle records.
// `Parser` by hand: the command is the derived one with its flags arranged
// under their headings (`Heading::arrange`).
#[derive(Debug, Args)]
#[command(version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

impl clap::CommandFactory for Cli {
    fn command() -> clap::Command {
        Heading::arrange_root(<Self as Args>::augment_args(clap::Command::new("sandbox-reclaim")))
    }

    fn command_for_update() -> clap::Command {
        Heading::arrange_root(<Self as Args>::augment_args_for_update(clap::Command::new("sandbox-reclaim")))
    }
}

impl Parser for Cli {}

/// The hosted vendors the flags turned on (`--e2b`, `--sprites`, ...), in
/// the table's order. The flags are made from the core's vendor table
/// (each vendor's module, listed in `core/src/providers/hosted/vendors.rs`), so a new vendor needs no line here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostedFlags(pub Vec<HostedVendor>);

impl HostedFlags {
    pub fn of(vendors: &[HostedVendor]) -> Self {
        Self(vendors.to_vec())
    }

    pub fn contains(&self, vendor: HostedVendor) -> bool {
        self.0.contains(&vendor)
    }
}

/// A vendor flag's help: its variables, its API and its config section.
fn hosted_help(spec: &VendorSpec) -> String {
    let scope: Vec<&str> = spec.scope_options.iter().filter_map(|option| option.variable).collect();
    let credentials = spec.credential_doc();
    messages::command::hosted_flag_help(spec.label, &credentials, &scope, spec.api_url_doc, spec.key)
}

impl clap::FromArgMatches for HostedFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(Self(HostedVendor::all().filter(|vendor| matches.get_flag(vendor.spec().key)).collect()))
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Args for HostedFlags {
    fn augment_args(command: clap::Command) -> clap::Command {
        VENDORS.iter().fold(command, |command, spec| {
            let flag = clap::Arg::new(spec.key).long(spec.key).global(true).action(clap::ArgAction::SetTrue);
            command.arg(flag.help(hosted_help(spec)).help_heading(Heading::Providers))
        })
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Self::augment_args(command)
    }
}

/// Flags every subcommand takes (before or after the subcommand's name),
/// by heading.
#[derive(Debug, Clone, Default, Args)]
pub struct GlobalArgs {
    /// Reclaim Docker/podman containers; URL like unix:///run/podman/podman.sock
    /// or tcp://host:2375 [default: DOCKER_HOST, else the local socket]
    #[arg(long, global = true, num_args = 0..=1, value_name = "URL", help_heading = Heading::Providers)]
    pub docker: Option<Option<String>>,
    /// Reclaim LocalProvider sandboxes kept under this directory
    #[arg(long, global = true, value_name = "BASE_DIR", help_heading = Heading::Providers)]
    pub local: Option<PathBuf>,
    /// `--e2b`, `--sprites`, ...: one flag per row of the core's vendor table.
    #[command(flatten)]
    pub hosted: HostedFlags,
    /// List every sandbox of the hosted providers, not only those under our
    /// owner label: an unlabelled one the store's registry names (a record
    /// named it within --registry-retention) is swept too [config:
    /// sweep-unlabelled in each hosted vendor's section]
    #[arg(long, global = true, help_heading = Heading::Providers)]
    pub sweep_unlabelled: bool,
    /// Owner namespace whose sandboxes are ours to sweep [default: sandbox-reclaim]
    #[arg(long, global = true, value_name = "NAME", help_heading = Heading::Providers)]
    pub owner: Option<String>,
    /// Host-language providers: a JS module (`npx sandbox-reclaim`) or
    /// `package.module:attribute` (the pip console script); not available in
    /// the native binary
    #[arg(long, global = true, value_name = "MODULE", help_heading = Heading::Providers)]
    pub providers: Option<String>,
    /// Name this host in the audit log and the sweep leases [default: the host name]
    #[arg(long, global = true, value_name = "NAME", help_heading = Heading::Pass)]
    pub host: Option<String>,
    /// The store: `sqlite:PATH` or `postgres://user@host:port/db`
    /// [default: a SQLite file in the platform's data directory]
    #[arg(long, global = true, env = "SANDBOX_RECLAIM_STORE", hide_env_values = true, value_name = "URL", help_heading = Heading::Store)]
    pub store: Option<String>,
    /// PostgreSQL schema holding the store's tables [default: public]
    #[arg(long, global = true, env = "SANDBOX_RECLAIM_PG_SCHEMA", hide_env_values = true, value_name = "NAME", help_heading = Heading::Store)]
    pub pg_schema: Option<String>,
    /// Give up opening the store after this long [default: 10s]
    #[arg(long, global = true, value_name = "DURATION", allow_hyphen_values = true, value_parser = parse_positive_duration, help_heading = Heading::Store)]
    pub connect_timeout: Option<Duration>,
    /// TOML config file (flags override it); see cli/examples/sandbox-reclaim.toml
    #[arg(long, global = true, env = "SANDBOX_RECLAIM_CONFIG", hide_env_values = true, value_name = "FILE", help_heading = Heading::General)]
    pub config: Option<PathBuf>,
    /// Print one JSON document (JSON lines with --every) instead of text
    #[arg(long, global = true, help_heading = Heading::General)]
    pub json: bool,
    /// Log line format on stderr (filter with RUST_LOG) [default: text]
    #[arg(long, global = true, value_enum, value_name = "FORMAT", help_heading = Heading::General)]
    pub log_format: Option<LogFormat>,
    /// Serve Prometheus metrics at http://ADDR/metrics (with --every only)
    #[arg(long, global = true, value_name = "ADDR", help_heading = Heading::General)]
    pub metrics_addr: Option<SocketAddr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One pass over everything that may still be billing: due leaks,
    /// orphans, idle records (or a pass every DURATION, as a service)
    Reconcile(ReconcileArgs),
    /// The leak ledger: sandboxes whose destroy failed
    #[command(subcommand)]
    Leaks(LeaksCommand),
    /// Only the orphan sweep: sandboxes no record or ledger entry references
    Orphans(OrphansArgs),
    /// The audit log: every destroy attempt fleet passes made
    Audit(AuditArgs),
    /// Records, leaks by provider and age, the last pass
    Status,
    /// Apply the store's migrations and print its schema version
    Migrate,
}

#[derive(Debug, Clone, Default, Args)]
pub struct ReconcileArgs {
    /// Plan only: read everything, change nothing, print what would be destroyed
    #[arg(long, help_heading = Heading::Pass)]
    pub dry_run: bool,
    /// Run a pass every DURATION until SIGINT/SIGTERM
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = parse_positive_duration, help_heading = Heading::General)]
    pub every: Option<Duration>,
    /// The pass's options: one flag per option of the core's reconcile pass (`pass_flags`).
    #[command(flatten)]
    pub pass: ReconcileFlags,
}

#[derive(Debug, Subcommand)]
pub enum LeaksCommand {
    /// Every pending leak, oldest first
    List,
    /// Destroy pending leaks now (ignoring their backoff), per provider
    Retry(RetryArgs),
}

#[derive(Debug, Clone, Args)]
pub struct RetryArgs {
    /// Most leaks retried per provider (the core's default; at least one here,
    /// where the core's API also takes 0 for a call that retries nothing)
    #[arg(long, value_name = "N", default_value_t = sandbox_reclaim::options::flows::retry_leaks::LIMIT.default, allow_hyphen_values = true, value_parser = clap::value_parser!(u32).range(1..), help_heading = Heading::Pass)]
    pub limit: u32,
    /// Cancel a destroy still running after this long [default: none]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = parse_positive_duration, help_heading = Heading::Pass)]
    pub destroy_timeout: Option<Duration>,
}

#[derive(Debug, Clone, Default, Args)]
pub struct OrphansArgs {
    /// Plan only: list the orphans that would be destroyed
    #[arg(long, help_heading = Heading::Pass)]
    pub dry_run: bool,
    /// The sweep's options (`pass_flags`).
    #[command(flatten)]
    pub pass: OrphansFlags,
}

#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    /// Rows from this time on: RFC 3339, epoch milliseconds, or a duration ago
    #[arg(long, value_name = "TIME", default_value = "24h", allow_hyphen_values = true, help_heading = Heading::Rows)]
    pub since: String,
    /// Most rows printed (oldest first)
    #[arg(long, value_name = "N", default_value_t = 1000, allow_hyphen_values = true, value_parser = clap::value_parser!(u32).range(1..), help_heading = Heading::Rows)]
    pub limit: u32,
}

/// `--docker` takes an optional URL, so clap would read `--docker reconcile`
/// as the URL `reconcile`. A `--docker` followed by something that is no URL
/// (no `://`) is rewritten to `--docker=` (no URL) before clap parses.
pub fn bare_docker(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let args: Vec<std::ffi::OsString> = args.into_iter().collect();
    let mut rewritten = Vec::with_capacity(args.len());
    for (index, arg) in args.iter().enumerate() {
        let next_is_url = args.get(index + 1).and_then(|next| next.to_str()).is_some_and(|next| next.contains("://"));
        if arg == "--docker" && !next_is_url {
            rewritten.push(std::ffi::OsString::from("--docker="));
        } else {
            rewritten.push(arg.clone());
        }
    }
    rewritten
}

impl Command {
    /// The command's name in JSON documents (`leaks list`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Reconcile(_) => "reconcile",
            Self::Leaks(LeaksCommand::List) => "leaks list",
            Self::Leaks(LeaksCommand::Retry(_)) => "leaks retry",
            Self::Orphans(_) => "orphans",
            Self::Audit(_) => "audit",
            Self::Status => "status",
            Self::Migrate => "migrate",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(bare_docker(args.iter().map(std::ffi::OsString::from))).unwrap()
    }

    #[test]
    fn docker_takes_an_optional_url_anywhere() {
        assert_eq!(parse(&["x", "--docker", "status"]).global.docker, Some(Some(String::new())));
        assert_eq!(parse(&["x", "status", "--docker"]).global.docker, Some(Some(String::new())));
        assert_eq!(parse(&["x", "status", "--docker", "--json"]).global.docker, Some(Some(String::new())));
        assert_eq!(
            parse(&["x", "--docker", "unix:///s.sock", "status"]).global.docker,
            Some(Some("unix:///s.sock".into()))
        );
        assert_eq!(parse(&["x", "status", "--docker=tcp://h:1"]).global.docker, Some(Some("tcp://h:1".into())));
        assert_eq!(parse(&["x", "status"]).global.docker, None);
    }

    #[test]
    fn registry_retention_and_sweep_unlabelled() {
        let values = |cli: Cli| match cli.command {
            Command::Reconcile(args) => args.pass.0,
            Command::Orphans(args) => args.pass.0,
            _ => unreachable!(),
        };
        for (flag, key) in [("--registry-retention", "registryRetentionMs"), ("--audit-retention", "auditRetentionMs")]
        {
            let given = values(parse(&["x", "reconcile", &format!("{flag}=90d")]));
            assert_eq!(given.get(key), Some(&serde_json::json!(7_776_000_000_u64)));
            assert_eq!(values(parse(&["x", "orphans", flag, "0s"])).get(key), Some(&serde_json::json!(0)));
            assert_eq!(values(parse(&["x", "reconcile"])).get(key), None);
            for bad in ["soon", "-1d", ""] {
                let error = Cli::try_parse_from(["x", "reconcile", flag, bad]).unwrap_err();
                assert_eq!(error.exit_code(), 2);
                assert!(error.to_string().contains(flag), "{error}");
            }
            assert!(Cli::try_parse_from(["x", "status", &format!("{flag}=1d")]).is_err(), "a pass flag only");
        }
        // The core's pass options are flags; `orphans` takes only the sweep's.
        let given = values(parse(&["x", "reconcile", "--lease", "2m", "--limit", "10", "--max-idle", "1h"]));
        assert_eq!(given.get("leaseMs"), Some(&serde_json::json!(120_000)));
        assert_eq!(given.get("limit"), Some(&serde_json::json!(10)));
        assert!(Cli::try_parse_from(["x", "orphans", "--max-idle", "1h"]).is_err(), "orphans expire nothing");
        assert!(Cli::try_parse_from(["x", "reconcile", "--concurrency", "0"]).is_err(), "the core's minimum");

        assert!(parse(&["x", "--sweep-unlabelled", "reconcile"]).global.sweep_unlabelled);
        assert!(parse(&["x", "orphans", "--daytona", "--sweep-unlabelled"]).global.sweep_unlabelled);
        // One flag per vendor of the table, before or after the subcommand.
        let hosted = parse(&["x", "--blaxel", "orphans", "--sprites", "--e2b"]).global.hosted;
        assert_eq!(hosted, HostedFlags::of(&[HostedVendor::E2b, HostedVendor::Sprites, HostedVendor::Blaxel]));
        assert_eq!(parse(&["x", "status"]).global.hosted, HostedFlags::default());
        assert!(!parse(&["x", "reconcile"]).global.sweep_unlabelled);
        let error = Cli::try_parse_from(["x", "reconcile", "--sweep-unlabelled=yes"]).unwrap_err();
        assert_eq!(error.exit_code(), 2);
    }
}
