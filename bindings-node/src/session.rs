//! The native half of the interpreter: live machines by handle, and one
//! function per answer the machine takes (exported through [`crate::raw`]).
//!
//! Each function feeds its answer, runs the machine to its next host step
//! (answering native-store steps on the spot) and writes that step as a
//! [`crate::program`] into the buffer registered by [`init`]. It
//! returns the session's handle while the machine waits for a host answer,
//! and `-1` once the program ends in `FINISH`/`FAIL` (the session is then
//! already freed).

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use napi::bindgen_prelude::Int32Array;
use napi::{Error, Result, Status};
use napi_derive::napi;
use sandbox_reclaim::ledger::NewLeak;
use sandbox_reclaim::machine::{DestroyResult, InstanceView, LogLevel, Misuse, Reclaim, Reclaimer, Step};
use sandbox_reclaim::{messages, ReclaimOutcome, SandboxInstanceStore};

use crate::memory_store::registry;
use crate::program::{self, ProgramWriter, Slots};
use crate::ready::now_or_never;

/// `reclaimSandbox`: the machine finishes with an outcome.
pub const KIND_RECLAIM: u32 = 0;
/// `sandboxReclaimer(options)(record)`: logs the outcome, fails on `destroy-failed`.
pub const KIND_RECLAIMER: u32 = 1;

/// Returned instead of a handle when the program ended the session.
const FINISHED: i32 = -1;

enum Machine {
    Reclaim(Reclaim),
    Reclaimer(Reclaimer),
}

impl Machine {
    fn poll(&mut self) -> Option<Step> {
        match self {
            Self::Reclaim(machine) => machine.poll(),
            Self::Reclaimer(machine) => machine.poll(),
        }
    }

    fn instance_loaded(&mut self, instance: Option<InstanceView<'_>>) -> std::result::Result<(), Misuse> {
        match self {
            Self::Reclaim(machine) => machine.instance_loaded(instance),
            Self::Reclaimer(machine) => machine.instance_loaded(instance),
        }
    }

    fn destroy_finished(&mut self, result: DestroyResult) -> std::result::Result<(), Misuse> {
        match self {
            Self::Reclaim(machine) => machine.destroy_finished(result),
            Self::Reclaimer(machine) => machine.destroy_finished(result),
        }
    }

    fn instance_deleted(&mut self) -> std::result::Result<(), Misuse> {
        match self {
            Self::Reclaim(machine) => machine.instance_deleted(),
            Self::Reclaimer(machine) => machine.instance_deleted(),
        }
    }
}

/// One reclaim in flight.
struct Session {
    machine: Machine,
    slots: Slots,
    /// A native store whose steps are answered inside the native call.
    store: Option<Arc<dyn SandboxInstanceStore>>,
}

/// Live sessions of this thread (each Node worker has its own), reused by index.
#[derive(Default)]
struct Sessions {
    /// Boxed: a session is a few hundred bytes, and moving it by value on
    /// every insert/remove measurably dominated a step.
    live: Vec<Option<Box<Session>>>,
    free: Vec<usize>,
    /// Strings of the last program that no slot held (see [`stashed`]).
    stash: Vec<String>,
}

thread_local! {
    static SESSIONS: RefCell<Sessions> = RefCell::default();
    /// The interpreter's step buffer, registered once by [`init`]. Holding it
    /// (a napi reference) keeps it alive; writing it costs no napi call.
    static STEP_BUFFER: RefCell<Option<Int32Array>> = const { RefCell::new(None) };
}

/// Symbol strings for the JS-host path, by symbol number (see [`start`]).
/// The machine only copies strings and compares them for equality, so running
/// it on symbols that are equal exactly when the strings are is the same run.
/// The NUL prefix keeps them apart from anything a record could name.
const SYMBOLS: [&str; program::SLOT_COUNT] = ["\0s0", "\0s1", "\0s2", "\0s3", "\0s4", "\0s5"];

fn symbol(number: i32) -> Result<Option<Cow<'static, str>>> {
    match number {
        program::REF_NONE => Ok(None),
        0..=5 => Ok(Some(Cow::Borrowed(SYMBOLS[number as usize]))),
        _ => Err(Error::new(Status::InvalidArg, format!("string symbol {number} out of range"))),
    }
}

fn required_symbol(number: i32) -> Result<Cow<'static, str>> {
    symbol(number)?.ok_or_else(|| Error::new(Status::InvalidArg, "a required string symbol is missing"))
}

/// Runs `f` on the registered step buffer.
fn with_steps<T>(f: impl FnOnce(&mut [i32]) -> Result<T>) -> Result<T> {
    STEP_BUFFER.with_borrow_mut(|buffer| match buffer.as_mut() {
        // SAFETY: JavaScript touches the buffer only between native calls, and
        // this thread is inside one; the held reference keeps it alive.
        Some(buffer) => f(unsafe { buffer.as_mut() }),
        None => Err(Error::new(Status::GenericFailure, "sandbox-reclaim: init(steps) was not called")),
    })
}

/// Registers the `Int32Array` every later program is written into.
#[napi]
pub fn init(steps: Int32Array) {
    STEP_BUFFER.with_borrow_mut(|buffer| *buffer = Some(steps));
}

fn misuse(error: impl std::fmt::Display) -> Error {
    Error::new(Status::GenericFailure, error.to_string())
}

impl Sessions {
    fn insert(&mut self, session: Box<Session>) -> usize {
        match self.free.pop() {
            Some(index) => {
                self.live[index] = Some(session);
                index
            }
            None => {
                self.live.push(Some(session));
                self.live.len() - 1
            }
        }
    }

    fn remove(&mut self, handle: u32) -> Option<Box<Session>> {
        let session = self.live.get_mut(handle as usize)?.take()?;
        self.free.push(handle as usize);
        Some(session)
    }

    /// Runs `answer` on the session, then the machine up to its next host
    /// step. Any error frees the session: the interpreter will not call again.
    fn advance(
        &mut self,
        out: &mut [i32],
        handle: u32,
        answer: impl FnOnce(&mut Session) -> Result<()>,
    ) -> Result<i32> {
        let session = self
            .live
            .get_mut(handle as usize)
            .and_then(Option::as_mut)
            .ok_or_else(|| Error::new(Status::InvalidArg, format!("no reclaim in flight with handle {handle}")))?;
        let result = answer(session).and_then(|()| run(session, out, &mut self.stash));
        match result {
            Ok(true) => Ok(handle as i32),
            Ok(false) => {
                self.remove(handle);
                Ok(FINISHED)
            }
            Err(error) => {
                self.remove(handle);
                Err(error)
            }
        }
    }
}

/// Polls the machine until it needs a host answer (`Ok(true)`) or has ended
/// (`Ok(false)`), writing every step on the way into `out`.
///
/// A host delete is written and then answered at once: the machine takes only
/// one answer to a delete (success), and a failing delete abandons it (the
/// host's error propagates). So the program goes on with what follows a
/// successful delete, which the interpreter runs once the delete resolved,
/// without another native call.
fn run(session: &mut Session, out: &mut [i32], stash: &mut Vec<String>) -> Result<bool> {
    let mut program = ProgramWriter::new(out, stash);
    loop {
        let step = session.machine.poll().ok_or_else(|| misuse(Misuse::stalled()))?;
        match (step, session.store.clone()) {
            (Step::Log(line), _) => program.log(&session.slots, &line)?,
            (Step::GetInstance { key }, Some(store)) => {
                let record = now_or_never(store.get(&key)).map_err(misuse)?.map_err(misuse)?;
                if let Some(record) = &record {
                    session.slots.keep(program::SLOT_INSTANCE_PROVIDER, record.provider.clone());
                    session.slots.keep(program::SLOT_PROVIDER_SANDBOX_ID, record.provider_sandbox_id.clone());
                }
                let view = record.as_ref().map(|record| InstanceView {
                    provider: &record.provider,
                    provider_sandbox_id: &record.provider_sandbox_id,
                });
                session.machine.instance_loaded(view).map_err(misuse)?;
            }
            (Step::GetInstance { key }, None) => {
                program.step(program::OP_GET, &session.slots, &key)?;
                return Ok(true);
            }
            (Step::Destroy { provider_sandbox_id }, _) => {
                program.step(program::OP_DESTROY, &session.slots, &provider_sandbox_id)?;
                return Ok(true);
            }
            (Step::DeleteInstance { key }, Some(store)) => {
                now_or_never(store.delete(&key)).map_err(misuse)?.map_err(misuse)?;
                session.machine.instance_deleted().map_err(misuse)?;
            }
            (Step::DeleteInstance { key }, None) => {
                program.step(program::OP_DELETE, &session.slots, &key)?;
                session.machine.instance_deleted().map_err(misuse)?;
            }
            (Step::DeleteInstanceRecordingLeak { key, leak }, Some(store)) => {
                let ledger = store.leak_ledger().ok_or_else(|| misuse(Misuse::no_ledger()))?;
                let leak = NewLeak::from_draft(leak, now_millis());
                now_or_never(ledger.delete_recording_leak(&key, leak)).map_err(misuse)?.map_err(misuse)?;
                session.machine.instance_deleted().map_err(misuse)?;
            }
            (Step::DeleteInstanceRecordingLeak { key, leak }, None) => {
                program.delete_recording_leak(&session.slots, &key, &leak)?;
                session.machine.instance_deleted().map_err(misuse)?;
            }
            (Step::Finish(outcome), _) => {
                program.finish(outcome)?;
                return Ok(false);
            }
            (Step::Fail(failure), _) => {
                program.fail(&session.slots, &failure)?;
                return Ok(false);
            }
        }
    }
}

fn now_millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_millis() as u64)
}

fn open(kind: u32, slots: Slots, has_ledger: bool, store: Option<Arc<dyn SandboxInstanceStore>>) -> Result<i32> {
    let run_id = slots.value(program::SLOT_RUN_ID).unwrap_or_default().to_owned();
    let sandbox_key = slots.value(program::SLOT_SANDBOX_KEY).map(str::to_owned);
    let provider_name = slots.value(program::SLOT_PROVIDER_NAME).unwrap_or_default().to_owned();
    let machine = match kind {
        KIND_RECLAIM => Machine::Reclaim(Reclaim::new(run_id, sandbox_key, provider_name, has_ledger)),
        KIND_RECLAIMER => Machine::Reclaimer(Reclaimer::new(run_id, sandbox_key, provider_name, has_ledger)),
        _ => return Err(Error::new(Status::InvalidArg, format!("unknown reclaim kind {kind}"))),
    };
    let session = Box::new(Session { machine, slots, store });
    with_steps(|out| {
        SESSIONS.with_borrow_mut(|sessions| {
            let handle = sessions.insert(session);
            sessions.advance(out, handle as u32, |_| Ok(()))
        })
    })
}

/// Starts a reclaim against JavaScript host objects and returns its handle
/// (or `-1` if it already ended), with the first program in the step buffer.
///
/// Strings travel as *symbols*: the interpreter numbers each string by the
/// first slot holding an equal one (the run id is slot 0, so symbol 0), and
/// `-1` is absent. `kind` is [`KIND_RECLAIM`] or [`KIND_RECLAIMER`];
/// `has_ledger` says whether the store has `deleteRecordingLeak`.
pub fn start(kind: u32, key_symbol: i32, provider_name_symbol: i32, has_ledger: bool) -> Result<i32> {
    let mut slots = Slots::default();
    slots.share(program::SLOT_RUN_ID, symbol(0)?);
    slots.share(program::SLOT_SANDBOX_KEY, symbol(key_symbol)?);
    slots.share(program::SLOT_PROVIDER_NAME, Some(required_symbol(provider_name_symbol)?));
    open(kind, slots, has_ledger, None)
}

/// Starts a reclaim whose store is the native store numbered `store_id`
/// (see [`crate::memory_store::registry`]): its steps never reach JavaScript.
/// Takes real strings, since the store's records hold real strings.
pub fn start_with_native_store(
    kind: u32,
    store_id: u32,
    run_id: String,
    sandbox_key: Option<String>,
    provider_name: String,
) -> Result<i32> {
    let store = registry::get(store_id)
        .ok_or_else(|| Error::new(Status::InvalidArg, format!("no native store numbered {store_id}")))?;
    let has_ledger = store.leak_ledger().is_some();
    let mut slots = Slots::default();
    slots.share(program::SLOT_RUN_ID, Some(Cow::Owned(run_id)));
    slots.share(program::SLOT_SANDBOX_KEY, sandbox_key.map(Cow::Owned));
    slots.share(program::SLOT_PROVIDER_NAME, Some(Cow::Owned(provider_name)));
    open(kind, slots, has_ledger, Some(store))
}

fn advance(handle: u32, answer: impl FnOnce(&mut Session) -> Result<()>) -> Result<i32> {
    with_steps(|out| SESSIONS.with_borrow_mut(|sessions| sessions.advance(out, handle, answer)))
}

/// Answers `GET`: the symbols of the record's `provider` and
/// `providerSandboxId`, or `-1` when the store had no record.
pub fn instance_loaded(handle: u32, provider_symbol: i32, provider_sandbox_id_symbol: i32) -> Result<i32> {
    advance(handle, |session| {
        if provider_symbol == program::REF_NONE {
            return session.machine.instance_loaded(None).map_err(misuse);
        }
        let provider = required_symbol(provider_symbol)?;
        let provider_sandbox_id = required_symbol(provider_sandbox_id_symbol)?;
        let view = InstanceView { provider: &provider, provider_sandbox_id: &provider_sandbox_id };
        session.machine.instance_loaded(Some(view)).map_err(misuse)?;
        session.slots.share(program::SLOT_INSTANCE_PROVIDER, Some(provider));
        session.slots.share(program::SLOT_PROVIDER_SANDBOX_ID, Some(provider_sandbox_id));
        Ok(())
    })
}

/// Answers `DESTROY` of a JS-host session: `-1` when it succeeded, else the
/// symbol of the failure's message.
pub fn destroy_finished(handle: u32, failure_message_symbol: i32) -> Result<i32> {
    let failure_message = symbol(failure_message_symbol)?.map(Cow::into_owned);
    advance(handle, |session| feed_destroy(session, failure_message))
}

/// Answers `DESTROY` of a native-store session, whose store keeps real
/// strings: `undefined` when it succeeded, else the failure's message.
pub fn native_destroy_finished(handle: u32, failure_message: Option<String>) -> Result<i32> {
    advance(handle, |session| feed_destroy(session, failure_message))
}

fn feed_destroy(session: &mut Session, failure_message: Option<String>) -> Result<()> {
    let result = match failure_message {
        None => DestroyResult::Succeeded,
        Some(message) => {
            session.slots.share(program::SLOT_ERROR_MESSAGE, Some(Cow::Owned(message.clone())));
            DestroyResult::Failed { message }
        }
    };
    session.machine.destroy_finished(result).map_err(misuse)
}

/// Drops a session whose host call failed (the error propagates in JS).
pub fn abort(handle: u32) {
    SESSIONS.with_borrow_mut(|sessions| {
        sessions.remove(handle);
    });
}

/// Runs `f` on stash entry `index` of the last program (see [`crate::program`]).
pub fn with_stashed<T>(index: u32, f: impl FnOnce(Option<&str>) -> T) -> T {
    SESSIONS.with_borrow(|sessions| f(sessions.stash.get(index as usize).map(String::as_str)))
}

/// How many reclaims are in flight on this thread (for leak tests).
#[napi]
pub fn sessions_in_flight() -> u32 {
    SESSIONS.with_borrow(|sessions| sessions.live.iter().filter(|session| session.is_some()).count() as u32)
}

/// `SandboxReclaimFailedError`'s message, built by the core.
#[napi]
pub fn reclaim_failed_message(run_id: String, sandbox_key: Option<String>) -> String {
    messages::reclaim_failed_message(&run_id, sandbox_key.as_deref())
}

/// The tables the interpreter decodes programs with, read once at load.
#[napi(object)]
pub struct Protocol {
    pub texts: Vec<String>,
    pub outcomes: Vec<String>,
    pub levels: Vec<String>,
    pub error_name: String,
}

/// See [`Protocol`].
#[napi]
pub fn protocol() -> Protocol {
    Protocol {
        texts: program::TEXTS.iter().map(|text| (*text).to_owned()).collect(),
        outcomes: ReclaimOutcome::ALL.iter().map(|outcome| outcome.as_str().to_owned()).collect(),
        levels: [LogLevel::Warn, LogLevel::Errors, LogLevel::Sandbox].iter().map(|l| l.as_str().to_owned()).collect(),
        error_name: messages::RECLAIM_FAILED_ERROR_NAME.to_owned(),
    }
}

/// The opcodes and special refs, in the order `[LOG, GET, DESTROY, DELETE,
/// DELETE_LEAK, FINISH, FAIL, REF_NONE, REF_DESTROY_ERROR, STASH_BASE,
/// KIND_RECLAIM, KIND_RECLAIMER]`.
#[napi]
pub fn opcodes() -> Vec<i32> {
    vec![
        program::OP_LOG,
        program::OP_GET,
        program::OP_DESTROY,
        program::OP_DELETE,
        program::OP_DELETE_LEAK,
        program::OP_FINISH,
        program::OP_FAIL,
        program::REF_NONE,
        program::REF_DESTROY_ERROR,
        program::STASH_BASE,
        KIND_RECLAIM as i32,
        KIND_RECLAIMER as i32,
    ]
}
