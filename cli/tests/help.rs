//! `--help` groups the flags under the headings of `heading::Heading`, in its
//! order, every subcommand the same: the providers (the managed ones, then
//! each hosted vendor in the core's table order), the pass, the store, the
//! rest; each flag once, in the order of the tables it is made from. Read
//! from the help the binary prints (what the npm bin and the pip console
//! script print too: they run the same command, and their tests compare).

mod common;

use clap::CommandFactory;
use sandbox_reclaim::providers::HostedVendor;
use sandbox_reclaim_cli::args::Cli;
use sandbox_reclaim_cli::heading::Heading;
use sandbox_reclaim_cli::pass_flags::{key, Pass};

/// Every command path, the root's included.
const PATHS: &[&[&str]] = &[
    &[],
    &["reconcile"],
    &["orphans"],
    &["leaks"],
    &["leaks", "list"],
    &["leaks", "retry"],
    &["audit"],
    &["status"],
    &["migrate"],
];

/// The help's sections of flags, in the order printed: each heading with
/// its flags' long names (`Commands:` and `Usage:` are no flags').
fn sections(help: &str) -> Vec<(String, Vec<String>)> {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    for line in help.lines() {
        if let Some(heading) = line.strip_suffix(':').filter(|_| !line.starts_with(' ')) {
            sections.push((heading.to_owned(), Vec::new()));
            continue;
        }
        // A flag's line is indented by at most 6 (`  -h, --help`, `      --json`);
        // a wrapped help line by the help's column.
        let indent = line.len() - line.trim_start().len();
        if indent > 6 || !line.trim_start().starts_with('-') {
            continue;
        }
        let long = line.split_whitespace().find(|word| word.starts_with("--")).expect("a long flag");
        let long = long.trim_end_matches(',').to_owned();
        sections.last_mut().expect("a flag under a heading").1.push(long);
    }
    sections.retain(|(heading, flags)| heading != "Commands" && !flags.is_empty());
    sections
}

fn flags(names: impl IntoIterator<Item = impl AsRef<str>>) -> Vec<String> {
    names.into_iter().map(|name| format!("--{}", name.as_ref().trim_start_matches("--"))).collect()
}

/// What `path --help` must print under each heading, in order, from the tables.
fn expected(path: &[&str]) -> Vec<(Heading, Vec<String>)> {
    let providers =
        flags(["docker", "local"].into_iter().chain(HostedVendor::all().map(|vendor| vendor.spec().key)).chain([
            "sweep-unlabelled",
            "owner",
            "providers",
        ]));
    let pass_specs = |pass: Pass| pass.specs().map(key).collect::<Vec<_>>();
    let mut pass = match path {
        ["reconcile"] => [flags(["dry-run"]), flags(pass_specs(Pass::Reconcile))].concat(),
        ["orphans"] => [flags(["dry-run"]), flags(pass_specs(Pass::Orphans))].concat(),
        ["leaks", "retry"] => flags(["limit", "destroy-timeout"]),
        _ => Vec::new(),
    };
    pass.push("--host".to_owned());
    let store = flags(["store", "pg-schema", "connect-timeout"]);
    let mut general = if path == ["reconcile"] { flags(["every"]) } else { Vec::new() };
    general.extend(flags(["config", "json", "log-format", "metrics-addr", "help", "version"]));
    let mut sections = vec![(Heading::Providers, providers), (Heading::Pass, pass)];
    if path == ["audit"] {
        sections.push((Heading::Rows, flags(["since", "limit"])));
    }
    sections.extend([(Heading::Store, store), (Heading::General, general)]);
    sections
}

#[test]
fn every_help_groups_its_flags_under_the_headings_in_the_tables_order() {
    for path in PATHS {
        let args: Vec<String> = path.iter().map(|word| (*word).to_owned()).chain(["--help".to_owned()]).collect();
        let run = common::run(&args);
        run.expect_code(0);
        let printed = sections(&run.stdout);

        // The headings: Heading::ALL's, in its order, each once.
        let headings: Vec<&str> = printed.iter().map(|(heading, _)| heading.as_str()).collect();
        let ours: Vec<&str> =
            Heading::ALL.iter().map(|heading| heading.title()).filter(|t| headings.contains(t)).collect();
        assert_eq!(headings, ours, "{path:?}: the headings, in Heading::ALL's order, each once:\n{}", run.stdout);
        for heading in [Heading::Providers, Heading::Pass, Heading::Store, Heading::General] {
            assert!(headings.contains(&heading.title()), "{path:?}: no {heading:?}:\n{}", run.stdout);
        }

        // Each heading's flags, in the tables' order.
        let want: Vec<(&str, Vec<String>)> =
            expected(path).into_iter().map(|(heading, flags)| (heading.title(), flags)).collect();
        let got: Vec<(&str, Vec<String>)> =
            printed.iter().map(|(heading, flags)| (heading.as_str(), flags.clone())).collect();
        assert_eq!(got, want, "{path:?}:\n{}", run.stdout);

        // No flag twice.
        let mut all: Vec<&String> = printed.iter().flat_map(|(_, flags)| flags).collect();
        let count = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), count, "{path:?}: a flag printed twice:\n{}", run.stdout);

        // Stable: the same again, and as `help <path>` prints it.
        assert_eq!(common::run(&args).stdout, run.stdout, "{path:?}");
        if !path.is_empty() {
            let help: Vec<String> = ["help"].iter().chain(path.iter()).map(|word| (*word).to_owned()).collect();
            assert_eq!(common::run(&help).stdout, run.stdout, "help {path:?}");
        }
    }
}

/// Every flag of every (sub)command clap builds is under one of our
/// headings, numbered in the headings' order: none falls back to clap's
/// "Options", none is hidden from the help.
#[test]
fn every_flag_has_a_heading_and_the_headings_order_numbers_them() {
    fn check(command: &clap::Command, path: &str) {
        let mut places = Vec::new();
        for arg in command.get_arguments() {
            let heading = Heading::of(arg).unwrap_or_else(|| panic!("{path} {}: no heading of ours", arg.get_id()));
            assert!(!arg.is_hide_set(), "{path} {}: hidden", arg.get_id());
            let rank = Heading::ALL.iter().position(|each| *each == heading).unwrap();
            places.push((rank, arg.get_display_order(), arg.get_id().to_string()));
        }
        for pair in places.windows(2) {
            assert!(pair[0].0 <= pair[1].0 && pair[0].1 < pair[1].1, "{path}: out of order: {pair:?}");
        }
        for sub in command.get_subcommands().filter(|sub| sub.get_name() != "help") {
            check(sub, &format!("{path} {}", sub.get_name()));
        }
    }
    let mut command = Cli::command();
    command.build();
    check(&command, "sandbox-reclaim");
}
