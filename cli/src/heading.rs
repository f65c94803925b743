//! The headings `--help` prints the flags under, and the arrangement that
//! makes clap print them in one order for every subcommand. Its own module:
//! the flag tables (`args`, `pass_flags`) both name headings.

/// The headings `--help` prints the flags under, in the order it prints
/// them (every subcommand the same: a heading none of its flags has is
/// left out). A flag made from a table takes its heading where it is made
/// (the vendors' here, the pass's in `pass_flags`); a declared one names
/// it (`help_heading = Heading::Store`). Within a heading, flags keep the
/// order they are declared or made in: a subcommand's own, then the shared
/// ones (`args::GlobalArgs`), the tables' rows in the tables' order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heading {
    /// What is reclaimed: the managed providers, each hosted vendor of the
    /// core's table, whose sandboxes are ours.
    Providers,
    /// How a pass (or `leaks retry`) runs: the core's pass options.
    Pass,
    /// Which audit rows `audit` prints.
    Rows,
    /// Where the records, the ledger and the audit log are.
    Store,
    /// The config file, the output, the service, help and version.
    General,
}

impl Heading {
    /// Every heading, in the order `--help` prints them.
    pub const ALL: [Self; 5] = [Self::Providers, Self::Pass, Self::Rows, Self::Store, Self::General];

    /// The heading as printed (without its colon).
    pub const fn title(self) -> &'static str {
        match self {
            Self::Providers => "Providers",
            Self::Pass => "Pass",
            Self::Rows => "Rows",
            Self::Store => "Store",
            Self::General => "General",
        }
    }

    /// The heading `arg` is under, if it is one of ours.
    pub fn of(arg: &clap::Arg) -> Option<Self> {
        Self::ALL.into_iter().find(|heading| arg.get_help_heading() == Some(heading.title()))
    }

    /// The command with help and version under [`Heading::General`]
    /// (clap's own would print first, under its "Options"), then arranged.
    pub(crate) fn arrange_root(command: clap::Command) -> clap::Command {
        let help = clap::Arg::new("help").short('h').long("help").action(clap::ArgAction::Help).help("Print help");
        let version =
            clap::Arg::new("version").short('V').long("version").action(clap::ArgAction::Version).help("Print version");
        let command = command.disable_help_flag(true).disable_version_flag(true);
        Self::arrange(command.args([help, version].map(|arg| arg.global(true).help_heading(Self::General))), &[])
    }

    /// `command` and its subcommands, each with its flags sorted by heading
    /// in [`Heading::ALL`]'s order (clap prints the headings in the order
    /// their first flag comes) and numbered in that order (clap prints a
    /// heading's flags by that number). A subcommand is given the shared
    /// (`global`) flags of the commands above it first, as clap would when
    /// it builds the command (it appends them after the subcommand's own;
    /// it leaves a flag a subcommand has alone), so that they sort with its own.
    fn arrange(command: clap::Command, shared: &[clap::Arg]) -> clap::Command {
        let has = |id: &clap::Id| command.get_arguments().any(|arg| arg.get_id() == id);
        let inherited: Vec<clap::Arg> = shared.iter().filter(|arg| !has(arg.get_id())).cloned().collect();
        let command = command.args(inherited);
        let shared: Vec<clap::Arg> = command.get_arguments().filter(|arg| arg.is_global_set()).cloned().collect();
        let rank = |arg: &clap::Arg| Self::ALL.iter().position(|heading| Self::of(arg) == Some(*heading));
        let mut args: Vec<clap::Arg> = command.get_arguments().cloned().collect();
        // Stable: within a heading, as declared (a subcommand's own first).
        // A flag with no heading of ours would come last (a test finds none).
        args.sort_by_key(|arg| rank(arg).unwrap_or(Self::ALL.len()));
        let mut sorted = args.into_iter().enumerate().map(|(order, arg)| arg.display_order(order));
        // The same flags, in their new order (clap has no call that reorders).
        let command = command.mut_args(|_| sorted.next().expect("one flag for each"));
        command.mut_subcommands(|subcommand| Self::arrange(subcommand, &shared))
    }
}

impl clap::builder::IntoResettable<clap::builder::Str> for Heading {
    fn into_resettable(self) -> clap::builder::Resettable<clap::builder::Str> {
        clap::builder::Resettable::Value(self.title().into())
    }
}
