//! Why the command stopped, and the exit code each reason maps to.

use std::fmt;

use sandbox_reclaim::options::OptionId;

/// The flags that choose a binary pass's providers: `--docker`, `--local`
/// and one per hosted vendor of the core's table.
pub(crate) fn provider_flags() -> String {
    let hosted = sandbox_reclaim::providers::VENDORS.iter().map(|spec| format!("/--{}", spec.key));
    std::iter::once("--docker/--local".to_owned()).chain(hosted).collect()
}

/// Everything went to plan and nothing is left leaking.
pub const EXIT_OK: i32 = 0;
/// The pass ran, but something may still be billing (a failed or deferred
/// destroy, a provider whose orphan sweep could not run).
pub const EXIT_LEAKING: i32 = 1;

/// The exit code of a pass whose report (the core's verdict) says `leaking`.
pub fn exit_for(leaking: bool) -> i32 {
    if leaking {
        EXIT_LEAKING
    } else {
        EXIT_OK
    }
}
/// A usage or configuration error; the message names the flag (or config key).
pub const EXIT_USAGE: i32 = 2;
/// The store or a provider could not be reached or opened.
pub const EXIT_UNAVAILABLE: i32 = 3;

/// A second SIGINT/SIGTERM: the command exits at once.
pub const EXIT_AGAIN: i32 = 130;

/// What a second SIGINT/SIGTERM prints before the command exits at once.
pub fn signal_again_message(signal: &str) -> String {
    format!("sandbox-reclaim: {signal} again: exiting now (unfinished work stays in the ledger)")
}

/// A reason to stop early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A flag, environment variable or config key was refused. `flag` is
    /// what the operator typed (`--store`, `--config FILE: reconcile.every`).
    Usage { flag: String, message: String },
    /// The store or a provider is unavailable.
    Unavailable { what: String, message: String },
    /// The pass could not finish (a store write failed mid-pass, a bug).
    Failed { message: String },
}

impl Failure {
    pub fn usage(flag: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Usage { flag: flag.into(), message: message.into() }
    }

    pub fn unavailable(what: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Unavailable { what: what.into(), message: message.into() }
    }

    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed { message: message.into() }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Usage { .. } => EXIT_USAGE,
            Self::Unavailable { .. } => EXIT_UNAVAILABLE,
            Self::Failed { .. } => EXIT_LEAKING,
        }
    }

    /// `usage`, `unavailable` or `failed`: the JSON error document's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Usage { .. } => "usage",
            Self::Unavailable { .. } => "unavailable",
            Self::Failed { .. } => "failed",
        }
    }

    /// The JSON error document's `error` object.
    pub fn to_json(&self) -> serde_json::Value {
        let mut error = serde_json::json!({ "kind": self.kind(), "message": self.to_string() });
        match self {
            Self::Usage { flag, .. } => error["flag"] = flag.clone().into(),
            Self::Unavailable { what, .. } => error["what"] = what.clone().into(),
            Self::Failed { .. } => {}
        }
        error
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Usage { flag, message } => write!(formatter, "{flag}: {message}"),
            Self::Unavailable { what, message } => write!(formatter, "{what} unavailable: {message}"),
            Self::Failed { message } => formatter.write_str(message),
        }
    }
}

impl std::error::Error for Failure {}

/// A core error (a pass that could not finish) as a [`Failure`].
pub fn from_reclaim(error: sandbox_reclaim::ReclaimError) -> Failure {
    use sandbox_reclaim::ReclaimError;
    match error {
        ReclaimError::InvalidOption(refusal) => {
            Failure::usage(flag_of(refusal.option, &provider_flags()), refusal.message)
        }
        // A store library's message may quote its connection string.
        ReclaimError::Store(error) => Failure::unavailable("store", crate::redact::redact_text(&error.to_string())),
        other => Failure::failed(other.to_string()),
    }
}

/// The flags behind the options the command decides itself, keyed by the
/// option's id; every other pass option is a flag named by its spec
/// (`pass_flags::flag_of`).
const OPTION_FLAGS: [(OptionId, &str); 3] =
    [(OptionId::DryRun, "--dry-run"), (OptionId::Owner, "--owner"), (OptionId::Host, "--host")];

/// The flag that sets `option`; `providers` for anything else: what the
/// provider flags decide (`--docker/...` in the binary, `--providers` for a
/// providers module).
pub fn flag_of(option: Option<OptionId>, providers: &str) -> String {
    let own = OPTION_FLAGS.iter().find(|(id, _)| Some(*id) == option).map(|(_, flag)| (*flag).to_owned());
    own.or_else(|| option.and_then(crate::pass_flags::flag_of)).unwrap_or_else(|| providers.to_owned())
}
