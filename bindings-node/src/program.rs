//! The compact form in which a native step hands the machine's next steps to
//! the JavaScript interpreter: `i32` words in a caller-owned `Int32Array`.
//!
//! Why integers: every JS object or string created across the napi boundary
//! costs more than the whole reclaim decision. Strings the machine emits are
//! almost always ones the interpreter passed in (run id, key, names, ids), so
//! they travel as *slot* numbers; fixed texts (messages, meta keys) travel as
//! indexes into [`TEXTS`], sent once. Anything else is stashed and fetched by
//! index, so the encoding stays lossless whatever the core emits.
//!
//! A program is zero or more `LOG` instructions followed by exactly one host
//! step or terminal instruction:
//!
//! ```text
//! LOG          level  textRef(message)  n  (textRef(key) valueRef)*n
//! GET          stringRef(key)
//! DESTROY      stringRef(providerSandboxId)
//! DELETE       stringRef(key)
//! DELETE_LEAK  stringRef(key)  key provider providerSandboxId runId errorMessage   (all stringRefs)
//! FINISH       outcomeIndex
//! FAIL         stringRef(runId)  stringRef(sandboxKey) | NONE
//! ```
//!
//! A ref `>= 0` is a slot (string refs) or a [`TEXTS`] index (text refs);
//! [`REF_NONE`] is absent, [`REF_DESTROY_ERROR`] is the error the provider's
//! destroy threw, and `ref <= STASH_BASE` is stash entry `STASH_BASE - ref`.

use std::borrow::Cow;

use napi::{Error, Result, Status};
use sandbox_reclaim::machine::{LeakDraft, LogLine, MetaValue, SandboxReclaimFailed};
use sandbox_reclaim::messages::{self, meta_keys};
use sandbox_reclaim::ReclaimOutcome;

/// Opcodes, numbered from 1 so that a zeroed buffer is never a valid program.
pub const OP_LOG: i32 = 1;
pub const OP_GET: i32 = 2;
pub const OP_DESTROY: i32 = 3;
pub const OP_DELETE: i32 = 4;
pub const OP_DELETE_LEAK: i32 = 5;
pub const OP_FINISH: i32 = 6;
pub const OP_FAIL: i32 = 7;

/// An absent string (a record without `sandboxKey`).
pub const REF_NONE: i32 = -1;
/// The very value the provider's `destroy` threw; only JavaScript holds it.
pub const REF_DESTROY_ERROR: i32 = -2;
/// Stash entry `i` is encoded as `STASH_BASE - i`.
pub const STASH_BASE: i32 = -3;

/// Fixed texts the machine emits, sent to JavaScript once.
pub const TEXTS: [&str; 14] = [
    messages::PROVIDER_MISMATCH,
    messages::DESTROY_FAILED_DELETING_ANYWAY,
    messages::RECLAIMER_DESTROY_FAILED,
    "reclaim: no-sandbox-key",
    "reclaim: not-found",
    "reclaim: provider-mismatch",
    "reclaim: destroyed",
    "reclaim: destroy-failed",
    meta_keys::RUN_ID,
    meta_keys::SANDBOX_KEY,
    meta_keys::RECORD_PROVIDER,
    meta_keys::RECLAIMER_PROVIDER,
    meta_keys::PROVIDER_SANDBOX_ID,
    meta_keys::ERROR,
];

/// Slots: the strings a session knows, by the number they travel as.
pub const SLOT_RUN_ID: usize = 0;
pub const SLOT_SANDBOX_KEY: usize = 1;
pub const SLOT_PROVIDER_NAME: usize = 2;
pub const SLOT_INSTANCE_PROVIDER: usize = 3;
pub const SLOT_PROVIDER_SANDBOX_ID: usize = 4;
pub const SLOT_ERROR_MESSAGE: usize = 5;
/// How many slots a session has.
pub const SLOT_COUNT: usize = 6;

/// The strings a session knows, by slot, and which of them JavaScript holds
/// too. Only those travel as slot numbers: a string a native store produced
/// (its record's provider and id) is sent as itself.
#[derive(Debug, Default)]
pub struct Slots {
    /// Borrowed for the static symbol strings, so the JS-host path allocates nothing here.
    values: [Option<Cow<'static, str>>; SLOT_COUNT],
    /// Bit `i` set: JavaScript holds slot `i` as well.
    shared: u8,
}

impl Slots {
    /// Sets slot `index` to a string JavaScript passed in (and so holds).
    pub fn share(&mut self, index: usize, value: Option<Cow<'static, str>>) {
        self.values[index] = value;
        self.shared |= 1 << index;
    }

    /// Sets slot `index` to a string only the native side knows.
    pub fn keep(&mut self, index: usize, value: String) {
        self.values[index] = Some(Cow::Owned(value));
        self.shared &= !(1 << index);
    }

    /// The string in slot `index`, if set.
    pub fn value(&self, index: usize) -> Option<&str> {
        self.values[index].as_deref()
    }

    /// The number of the shared slot holding `text`, if any.
    fn find(&self, text: &str) -> Option<usize> {
        (0..SLOT_COUNT).find(|&index| self.shared & (1 << index) != 0 && self.values[index].as_deref() == Some(text))
    }
}

/// Writes one program into the caller's buffer.
pub struct ProgramWriter<'a> {
    out: &'a mut [i32],
    len: usize,
    stash: &'a mut Vec<String>,
}

impl<'a> ProgramWriter<'a> {
    /// Starts an empty program in `out`; `stash` receives strings no slot holds.
    pub fn new(out: &'a mut [i32], stash: &'a mut Vec<String>) -> Self {
        stash.clear();
        Self { out, len: 0, stash }
    }

    fn push(&mut self, word: i32) -> Result<()> {
        let slot = self
            .out
            .get_mut(self.len)
            .ok_or_else(|| Error::new(Status::InvalidArg, "the step buffer is too small for the machine's program"))?;
        *slot = word;
        self.len += 1;
        Ok(())
    }

    fn stash(&mut self, text: &str) -> i32 {
        self.stash.push(text.to_owned());
        STASH_BASE - (self.stash.len() as i32 - 1)
    }

    fn string_ref(&mut self, slots: &Slots, text: &str) -> i32 {
        match slots.find(text) {
            Some(index) => index as i32,
            None => self.stash(text),
        }
    }

    fn text_ref(&mut self, text: &str) -> i32 {
        match TEXTS.iter().position(|known| *known == text) {
            Some(index) => index as i32,
            None => self.stash(text),
        }
    }

    /// `LOG level message n (key value)*n`.
    pub fn log(&mut self, slots: &Slots, line: &LogLine) -> Result<()> {
        self.push(OP_LOG)?;
        self.push(line.level as i32)?;
        let message = self.text_ref(line.message);
        self.push(message)?;
        self.push(line.meta.len() as i32)?;
        for (key, value) in &line.meta {
            let key = self.text_ref(key);
            self.push(key)?;
            let value = match value {
                MetaValue::Text(text) => self.string_ref(slots, text),
                MetaValue::DestroyError => REF_DESTROY_ERROR,
            };
            self.push(value)?;
        }
        Ok(())
    }

    /// `GET`, `DESTROY` or `DELETE` with its one string operand.
    pub fn step(&mut self, op: i32, slots: &Slots, operand: &str) -> Result<()> {
        self.push(op)?;
        let operand = self.string_ref(slots, operand);
        self.push(operand)
    }

    /// `DELETE_LEAK key leak...`.
    pub fn delete_recording_leak(&mut self, slots: &Slots, key: &str, leak: &LeakDraft) -> Result<()> {
        self.push(OP_DELETE_LEAK)?;
        for text in [key, &leak.key, &leak.provider, &leak.provider_sandbox_id, &leak.run_id, &leak.error_message] {
            let operand = self.string_ref(slots, text);
            self.push(operand)?;
        }
        Ok(())
    }

    /// `FINISH outcome`.
    pub fn finish(&mut self, outcome: ReclaimOutcome) -> Result<()> {
        self.push(OP_FINISH)?;
        let index = ReclaimOutcome::ALL.iter().position(|known| *known == outcome).unwrap_or_default();
        self.push(index as i32)
    }

    /// `FAIL runId sandboxKey|NONE`.
    pub fn fail(&mut self, slots: &Slots, failure: &SandboxReclaimFailed) -> Result<()> {
        self.push(OP_FAIL)?;
        let run_id = self.string_ref(slots, &failure.run_id);
        self.push(run_id)?;
        let key = match &failure.sandbox_key {
            Some(key) => self.string_ref(slots, key),
            None => REF_NONE,
        };
        self.push(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox_reclaim::machine::LogLevel;

    fn slots() -> Slots {
        let mut slots = Slots::default();
        slots.share(SLOT_RUN_ID, Some("run".into()));
        slots.share(SLOT_SANDBOX_KEY, Some("key".into()));
        slots.share(SLOT_PROVIDER_NAME, Some("docker".into()));
        slots.keep(SLOT_PROVIDER_SANDBOX_ID, "ctr-native".into());
        slots
    }

    #[test]
    fn known_strings_travel_as_slots_and_unknown_ones_are_stashed() {
        let mut out = [0; 16];
        let mut stash = Vec::new();
        let mut writer = ProgramWriter::new(&mut out, &mut stash);
        writer.step(OP_GET, &slots(), "key").unwrap();
        writer.step(OP_DESTROY, &slots(), "elsewhere").unwrap();
        assert_eq!(&out[..4], &[OP_GET, 1, OP_DESTROY, STASH_BASE]);
        assert_eq!(stash, vec!["elsewhere".to_owned()]);
    }

    #[test]
    fn strings_only_the_native_side_holds_are_stashed() {
        let mut out = [0; 4];
        let mut stash = Vec::new();
        ProgramWriter::new(&mut out, &mut stash).step(OP_DESTROY, &slots(), "ctr-native").unwrap();
        assert_eq!(&out[..2], &[OP_DESTROY, STASH_BASE]);
        assert_eq!(stash, vec!["ctr-native".to_owned()]);
    }

    #[test]
    fn log_lines_encode_level_text_and_meta() {
        let line = LogLine {
            level: LogLevel::Warn,
            message: messages::DESTROY_FAILED_DELETING_ANYWAY,
            meta: vec![(meta_keys::RUN_ID, MetaValue::Text("run".into())), (meta_keys::ERROR, MetaValue::DestroyError)],
        };
        let mut out = [0; 16];
        let mut stash = Vec::new();
        ProgramWriter::new(&mut out, &mut stash).log(&slots(), &line).unwrap();
        assert_eq!(&out[..8], &[OP_LOG, LogLevel::Warn as i32, 1, 2, 8, 0, 13, REF_DESTROY_ERROR]);
    }

    #[test]
    fn a_full_buffer_is_an_error_not_a_truncated_program() {
        let mut out = [0; 1];
        let mut stash = Vec::new();
        assert!(ProgramWriter::new(&mut out, &mut stash).step(OP_GET, &slots(), "key").is_err());
    }

    #[test]
    fn outcome_lines_are_all_known_texts() {
        for outcome in ReclaimOutcome::ALL {
            assert!(TEXTS.contains(&messages::reclaimer_outcome_line(outcome)));
        }
    }
}
