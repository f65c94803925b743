//! The reclaim machines compiled to branch tables, for host interpreters.
//!
//! # Why
//!
//! The Node and Python bindings run the reclaim against host objects (JS
//! promises, Python coroutines). Driving [`crate::machine`] step by step from
//! there costs one native call per step, and measured, those calls alone
//! made a reclaim cost 2.4× the plain-JS reference. But the machine is pure
//! and its answers fall into a handful of classes (key or no key, instance or
//! none, same provider or not, destroy succeeded or failed), so it can be run
//! ahead of time *for every class at once*. [`compile`] does exactly that,
//! feeding the real machine symbolic placeholders, and records what it did as
//! a [`Program`]: a few instructions whose operands name the values
//! (`runId`, `sandboxKey`, ...) instead of holding them.
//!
//! A binding fetches the program once at load (as JSON, [`program_json`]) and
//! walks it per reclaim with no native call at all. Every decision, string
//! and ordering still comes from the machine: the program is its recording,
//! and the parity vectors run through both.
//!
//! # Walking a program
//!
//! Registers: the record's `runId` and `sandboxKey`, the provider's `name`,
//! the instance (after [`Instruction::GetInstance`]), the destroy error
//! (after a failed [`Instruction::Destroy`]). Start at instruction 0 and
//! execute in order; a branch whose test is true jumps to its `target`. A
//! failing `get`/`delete` aborts the walk with that very error.

use serde::Serialize;

use crate::machine::{
    DestroyResult, InstanceView, LeakDraft, LogLevel, MetaValue, Reclaim, Reclaimer, Step, StepMachine,
};
use crate::model::ReclaimOutcome;

/// Which public function a program implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Api {
    /// `reclaimSandbox(record, options)`: resolves with the outcome.
    ReclaimSandbox,
    /// `sandboxReclaimer(options)(record)`: logs the outcome, resolves with
    /// nothing, fails with `SandboxReclaimFailedError` on `destroy-failed`.
    SandboxReclaimer,
}

/// A value the host substitutes when it executes an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Operand {
    /// The run record's `runId`.
    RunId,
    /// The run record's `sandboxKey`.
    SandboxKey,
    /// The provider's `name`.
    ProviderName,
    /// The loaded instance's `provider`.
    InstanceProvider,
    /// The loaded instance's `providerSandboxId`.
    ProviderSandboxId,
    /// The very error object the provider's destroy threw or rejected with.
    DestroyError,
    /// That error's message (`error.message` for error objects, else its
    /// string form): what a leak entry records.
    DestroyErrorMessage,
}

/// The operands of a leak entry recorded by
/// [`Instruction::DeleteInstanceRecordingLeak`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeakOperands {
    pub key: Operand,
    pub provider: Operand,
    pub provider_sandbox_id: Operand,
    pub run_id: Operand,
    pub error_message: Operand,
}

/// One instruction of a [`Program`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Instruction {
    /// Jump to `target` if the record has no `sandboxKey` (absent/`undefined`/`None`).
    IfNoSandboxKey { target: usize },
    /// `instances.get(sandboxKey)`; the answer is the instance register.
    GetInstance,
    /// Jump to `target` if the instance is `null`/`None`.
    IfInstanceMissing { target: usize },
    /// Jump to `target` if the instance's `provider` differs from the
    /// provider's `name` (exact, case-sensitive string comparison).
    IfProviderDiffers { target: usize },
    /// `provider.destroy({ id: providerSandboxId })` (Python: `destroy(id)`).
    /// A throw or rejection is caught and kept as the destroy error.
    Destroy,
    /// Jump to `target` if the last `Destroy` failed.
    IfDestroyFailed { target: usize },
    /// `instances.delete(sandboxKey)`.
    DeleteInstance,
    /// `instances.deleteRecordingLeak(sandboxKey, leak)` (Python:
    /// `delete_recording_leak`), with `leak.failedAt` the current epoch ms.
    DeleteInstanceRecordingLeak { leak: LeakOperands },
    /// `logger[level](message, meta)` when there is a logger. Meta keys in order.
    Log { level: LogLevel, message: &'static str, meta: Vec<(&'static str, Operand)> },
    /// Done: `reclaimSandbox` resolves with `outcome`, the reclaimer with nothing.
    Finish { outcome: ReclaimOutcome },
    /// Done: fail with `SandboxReclaimFailedError(runId, sandboxKey)`.
    FailReclaim,
}

/// A compiled reclaim: instructions, entry at index 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Program {
    pub api: Api,
    /// Whether the program was compiled for a store with a leak ledger.
    pub ledger: bool,
    pub instructions: Vec<Instruction>,
}

impl Serialize for LogLevel {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Placeholders fed to the machine in place of real values. NUL-prefixed, so
/// no real value a test or user could pass is mistaken for one.
const PLACEHOLDERS: [(&str, Operand); 6] = [
    ("\0runId", Operand::RunId),
    ("\0sandboxKey", Operand::SandboxKey),
    ("\0providerName", Operand::ProviderName),
    ("\0instanceProvider", Operand::InstanceProvider),
    ("\0providerSandboxId", Operand::ProviderSandboxId),
    ("\0destroyErrorMessage", Operand::DestroyErrorMessage),
];

fn placeholder(operand: Operand) -> &'static str {
    PLACEHOLDERS.iter().find(|(_, known)| *known == operand).map(|(text, _)| *text).expect("every operand has one")
}

/// Maps a string the machine emitted back to the operand it came from. Any
/// other string would be a value the machine invented, which the program
/// could not express: compiling fails loudly (and the tests compile all).
fn operand_of(text: &str) -> Operand {
    PLACEHOLDERS
        .iter()
        .find(|(known, _)| *known == text)
        .map(|(_, operand)| *operand)
        .unwrap_or_else(|| panic!("the machine emitted a value that is not an input: {text:?}"))
}

/// Compiles the machine of `api` (for a store with or without a ledger).
pub fn compile(api: Api, ledger: bool) -> Program {
    let mut compiler = Compiler::default();
    let start = |key: Option<&str>| -> Box<dyn StepMachineClone> {
        let run_id = placeholder(Operand::RunId);
        let name = placeholder(Operand::ProviderName);
        let key = key.map(str::to_owned);
        match api {
            Api::ReclaimSandbox => Box::new(Reclaim::new(run_id, key, name, ledger)),
            Api::SandboxReclaimer => Box::new(Reclaimer::new(run_id, key, name, ledger)),
        }
    };
    let no_key = compiler.branch(|target| Instruction::IfNoSandboxKey { target });
    compiler.follow(start(Some(placeholder(Operand::SandboxKey))));
    compiler.land(no_key);
    compiler.follow(start(None));
    Program { api, ledger, instructions: compiler.instructions }
}

/// The program of `api` as JSON, the form bindings load.
pub fn program_json(api: Api, ledger: bool) -> String {
    serde_json::to_string(&compile(api, ledger)).expect("a program always serialises")
}

/// A machine the compiler can fork at a branch.
trait StepMachineClone: StepMachine {
    fn fork(&self) -> Box<dyn StepMachineClone>;
}

impl<M: StepMachine + Clone + 'static> StepMachineClone for M {
    fn fork(&self) -> Box<dyn StepMachineClone> {
        Box::new(self.clone())
    }
}

#[derive(Default)]
struct Compiler {
    instructions: Vec<Instruction>,
}

impl Compiler {
    /// Emits a branch whose target is patched by [`Compiler::land`].
    fn branch(&mut self, make: fn(usize) -> Instruction) -> (usize, fn(usize) -> Instruction) {
        self.instructions.push(make(usize::MAX));
        (self.instructions.len() - 1, make)
    }

    /// Points a branch at the next instruction to be emitted.
    fn land(&mut self, (at, make): (usize, fn(usize) -> Instruction)) {
        self.instructions[at] = make(self.instructions.len());
    }

    /// Records the machine's steps until it ends, forking at every answer
    /// that can go more than one way. Expects a misuse-free machine: a
    /// `Misuse` here is a bug in the compiler, caught by its tests.
    fn follow(&mut self, mut machine: Box<dyn StepMachineClone>) {
        const BUG: &str = "the compiler answers only what the machine asks";
        loop {
            match machine.poll().expect("the machine stalled") {
                Step::Log(line) => {
                    let meta = line
                        .meta
                        .iter()
                        .map(|(key, value)| match value {
                            MetaValue::Text(text) => (*key, operand_of(text)),
                            MetaValue::DestroyError => (*key, Operand::DestroyError),
                        })
                        .collect();
                    self.instructions.push(Instruction::Log { level: line.level, message: line.message, meta });
                }
                Step::GetInstance { key } => {
                    assert_eq!(operand_of(&key), Operand::SandboxKey);
                    self.instructions.push(Instruction::GetInstance);
                    let missing = self.branch(|target| Instruction::IfInstanceMissing { target });
                    let differs = self.branch(|target| Instruction::IfProviderDiffers { target });
                    let id = placeholder(Operand::ProviderSandboxId);
                    // Same provider: the instance's provider *is* the provider's name.
                    let mut same = machine.fork();
                    let provider = placeholder(Operand::ProviderName);
                    same.instance_loaded(Some(InstanceView { provider, provider_sandbox_id: id })).expect(BUG);
                    self.follow(same);
                    self.land(differs);
                    let mut other = machine.fork();
                    let provider = placeholder(Operand::InstanceProvider);
                    other.instance_loaded(Some(InstanceView { provider, provider_sandbox_id: id })).expect(BUG);
                    self.follow(other);
                    self.land(missing);
                    machine.instance_loaded(None).expect(BUG);
                }
                Step::Destroy { provider_sandbox_id } => {
                    assert_eq!(operand_of(&provider_sandbox_id), Operand::ProviderSandboxId);
                    self.instructions.push(Instruction::Destroy);
                    let failed = self.branch(|target| Instruction::IfDestroyFailed { target });
                    let mut succeeded = machine.fork();
                    succeeded.destroy_finished(DestroyResult::Succeeded).expect(BUG);
                    self.follow(succeeded);
                    self.land(failed);
                    let message = placeholder(Operand::DestroyErrorMessage).to_owned();
                    machine.destroy_finished(DestroyResult::Failed { message }).expect(BUG);
                }
                Step::DeleteInstance { key } => {
                    assert_eq!(operand_of(&key), Operand::SandboxKey);
                    self.instructions.push(Instruction::DeleteInstance);
                    machine.instance_deleted().expect(BUG);
                }
                Step::DeleteInstanceRecordingLeak { key, leak } => {
                    assert_eq!(operand_of(&key), Operand::SandboxKey);
                    self.instructions.push(Instruction::DeleteInstanceRecordingLeak { leak: leak_operands(&leak) });
                    machine.instance_deleted().expect(BUG);
                }
                Step::Finish(outcome) => {
                    self.instructions.push(Instruction::Finish { outcome });
                    return;
                }
                Step::Fail(failure) => {
                    assert_eq!(operand_of(&failure.run_id), Operand::RunId);
                    assert_eq!(failure.sandbox_key.as_deref().map(operand_of), Some(Operand::SandboxKey));
                    self.instructions.push(Instruction::FailReclaim);
                    return;
                }
            }
        }
    }
}

fn leak_operands(leak: &LeakDraft) -> LeakOperands {
    LeakOperands {
        key: operand_of(&leak.key),
        provider: operand_of(&leak.provider),
        provider_sandbox_id: operand_of(&leak.provider_sandbox_id),
        run_id: operand_of(&leak.run_id),
        error_message: operand_of(&leak.error_message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [(Api, bool); 4] = [
        (Api::ReclaimSandbox, false),
        (Api::ReclaimSandbox, true),
        (Api::SandboxReclaimer, false),
        (Api::SandboxReclaimer, true),
    ];

    #[test]
    fn every_program_compiles_and_every_jump_lands_inside_it() {
        for (api, ledger) in ALL {
            let program = compile(api, ledger);
            let len = program.instructions.len();
            for instruction in &program.instructions {
                if let Instruction::IfNoSandboxKey { target }
                | Instruction::IfInstanceMissing { target }
                | Instruction::IfProviderDiffers { target }
                | Instruction::IfDestroyFailed { target } = instruction
                {
                    assert!(*target < len, "{api:?}: jump to {target} of {len}");
                }
            }
            assert!(matches!(program.instructions.last(), Some(Instruction::Finish { .. })));
        }
    }

    #[test]
    fn the_reclaim_program_reads_like_the_reference() {
        use Instruction::*;
        let program = compile(Api::ReclaimSandbox, false);
        let ops: Vec<&str> = program
            .instructions
            .iter()
            .map(|instruction| match instruction {
                IfNoSandboxKey { .. } => "ifNoKey",
                GetInstance => "get",
                IfInstanceMissing { .. } => "ifMissing",
                IfProviderDiffers { .. } => "ifDiffers",
                Destroy => "destroy",
                IfDestroyFailed { .. } => "ifFailed",
                DeleteInstance => "delete",
                DeleteInstanceRecordingLeak { .. } => "deleteRecordingLeak",
                Log { .. } => "log",
                Finish { outcome } => outcome.as_str(),
                FailReclaim => "fail",
            })
            .collect();
        assert_eq!(
            ops,
            [
                "ifNoKey",
                "get",
                "ifMissing",
                "ifDiffers",
                "destroy",
                "ifFailed",
                "delete",
                "destroyed",
                "log",
                "delete",
                "destroy-failed",
                "log",
                "provider-mismatch",
                "not-found",
                "no-sandbox-key"
            ]
        );
    }

    #[test]
    fn the_ledger_program_records_the_leak_with_the_instance_values() {
        let program = compile(Api::SandboxReclaimer, true);
        let leak = program.instructions.iter().find_map(|instruction| match instruction {
            Instruction::DeleteInstanceRecordingLeak { leak } => Some(*leak),
            _ => None,
        });
        let expected = LeakOperands {
            key: Operand::SandboxKey,
            // On this path the instance's provider equals the provider's name.
            provider: Operand::ProviderName,
            provider_sandbox_id: Operand::ProviderSandboxId,
            run_id: Operand::RunId,
            error_message: Operand::DestroyErrorMessage,
        };
        assert_eq!(leak, Some(expected));
        assert!(program.instructions.contains(&Instruction::FailReclaim));
    }

    #[test]
    fn programs_serialise_to_tagged_json() {
        let json: serde_json::Value = serde_json::from_str(&program_json(Api::ReclaimSandbox, false)).unwrap();
        assert_eq!(json["api"], "reclaimSandbox");
        assert_eq!(json["instructions"][0], serde_json::json!({"op": "ifNoSandboxKey", "target": 14}));
        let warn = &json["instructions"][8];
        assert_eq!(warn["level"], "warn");
        assert_eq!(warn["meta"][3], serde_json::json!(["error", "destroyError"]));
    }
}
