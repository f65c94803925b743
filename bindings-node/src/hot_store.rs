//! The native in-memory store's reclaim path, as raw napi callbacks.
//!
//! Why not `#[napi]`: a napi-rs 3 method call with a string argument costs
//! about 1 µs here (argument and `this` bookkeeping, measured with
//! `node bench/node/bench.mjs`), which alone is most of a whole reclaim in the
//! reference. The walker needs only two operations on a native store, so they
//! are decoded by hand: `lookup(storeId, key)` and `remove(storeId, key)`.
//! Stores travel as their number in this thread's [`registry`].

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use napi::bindgen_prelude::{JsObjectValue, Object};
use napi::{sys, Env, Error, Result, Status};
use napi_derive::napi;
use sandbox_reclaim::InMemorySandboxInstanceStore;

use crate::memory_store::registry;

/// Separates the provider from the sandbox id in `lookup`'s answer: records
/// never contain NUL (the core refuses it), so the split is unambiguous.
pub const LOOKUP_SEPARATOR: char = '\0';

/// `{ lookup, remove }`, created once at load.
#[napi]
pub fn native_store_paths(env: &Env) -> Result<Object<'_>> {
    let mut paths = Object::new(env)?;
    let table: [(&str, sys::napi_callback); 2] = [("lookup", Some(lookup)), ("remove", Some(remove))];
    for (name, callback) in table {
        let mut function = ptr::null_mut();
        // SAFETY: a valid env and a static name; napi writes the new function into `function`.
        let status = unsafe {
            sys::napi_create_function(
                env.raw(),
                name.as_ptr().cast(),
                name.len() as isize,
                callback,
                ptr::null_mut(),
                &mut function,
            )
        };
        check(status, "napi_create_function")?;
        // SAFETY: `function` was just created in this env.
        paths.set_named_property(name, unsafe {
            napi::bindgen_prelude::Unknown::from_raw_unchecked(env.raw(), function)
        })?;
    }
    Ok(paths)
}

fn check(status: sys::napi_status, what: &str) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(Error::new(Status::from(status), format!("{what} failed")))
    }
}

/// What a store operation hands back to JavaScript.
enum Answer {
    Undefined,
    Null,
    Text(String),
}

type Operation = fn(u32, &str) -> Result<Answer>;

/// Decodes `(storeId, key)`, runs `operation`, and returns its answer or throws.
unsafe fn call(env: sys::napi_env, info: sys::napi_callback_info, operation: Operation) -> sys::napi_value {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut argc = 2;
        let mut argv = [ptr::null_mut(); 2];
        // SAFETY: argv has room for two values.
        let status =
            unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut()) };
        check(status, "napi_get_cb_info")?;
        if argc < 2 {
            return Err(Error::new(Status::InvalidArg, "expected a store number and a key"));
        }
        let mut id = 0;
        // SAFETY: a value of this env.
        check(unsafe { sys::napi_get_value_uint32(env, argv[0], &mut id) }, "reading the store number")?;
        // SAFETY: a value of this env.
        unsafe { with_string(env, argv[1], |key| operation(id, key)) }
    }));
    let answer =
        outcome.unwrap_or_else(|_| Err(Error::new(Status::GenericFailure, "sandbox-reclaim: native store panicked")));
    let mut value = ptr::null_mut();
    // SAFETY: a valid env; on failure `value` stays null, which napi reads as undefined.
    unsafe {
        match answer {
            Ok(Answer::Undefined) => {
                sys::napi_get_undefined(env, &mut value);
            }
            Ok(Answer::Null) => {
                sys::napi_get_null(env, &mut value);
            }
            // ASCII (the usual provider and id) is valid Latin-1 too, which
            // V8 copies without running its UTF-8 decoder.
            Ok(Answer::Text(text)) if text.is_ascii() => {
                sys::napi_create_string_latin1(env, text.as_ptr().cast(), text.len() as isize, &mut value);
            }
            Ok(Answer::Text(text)) => {
                sys::napi_create_string_utf8(env, text.as_ptr().cast(), text.len() as isize, &mut value);
            }
            Err(error) => {
                let message = std::ffi::CString::new(error.reason.replace('\0', "\\0")).unwrap_or_default();
                let code = std::ffi::CString::new(error.status.as_ref()).unwrap_or_default();
                sys::napi_throw_error(env, code.as_ptr(), message.as_ptr());
            }
        }
    }
    value
}

/// Reads a string argument and runs `use_key` on it. Most keys fit a stack
/// buffer (no allocation); longer ones ask for the length first.
unsafe fn with_string<T>(
    env: sys::napi_env,
    value: sys::napi_value,
    use_key: impl FnOnce(&str) -> Result<T>,
) -> Result<T> {
    let not_utf8 = |_| Error::new(Status::InvalidArg, "the key was not valid UTF-8");
    let mut small = [0u8; 128];
    let mut length = 0;
    // SAFETY: `small` holds 128 bytes; napi writes at most 127 and a NUL.
    check(
        unsafe { sys::napi_get_value_string_utf8(env, value, small.as_mut_ptr().cast(), small.len(), &mut length) },
        "reading the key (a string)",
    )?;
    if length < small.len() - 1 {
        return use_key(std::str::from_utf8(&small[..length]).map_err(not_utf8)?);
    }
    // SAFETY: asking for the length only (null buffer).
    check(unsafe { sys::napi_get_value_string_utf8(env, value, ptr::null_mut(), 0, &mut length) }, "reading the key")?;
    let mut bytes = vec![0u8; length + 1];
    // SAFETY: `bytes` holds length + 1 bytes, room for the terminating NUL.
    check(
        unsafe { sys::napi_get_value_string_utf8(env, value, bytes.as_mut_ptr().cast(), bytes.len(), &mut length) },
        "reading the key",
    )?;
    use_key(std::str::from_utf8(&bytes[..length]).map_err(not_utf8)?)
}

/// Runs `f` on the native store numbered `id`, or fails if it is gone.
fn with_store<T>(id: u32, f: impl FnOnce(&InMemorySandboxInstanceStore) -> Result<T>) -> Result<T> {
    registry::with(id, |store| match store {
        Some(store) => f(store),
        None => Err(Error::new(Status::InvalidArg, format!("no native store numbered {id}"))),
    })
}

/// `lookup(storeId, key)`: `null`, or `provider + "\0" + providerSandboxId`,
/// the only fields of the record a reclaim reads.
unsafe extern "C" fn lookup(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    fn operation(id: u32, key: &str) -> Result<Answer> {
        with_store(id, |store| {
            Ok(store.with_record(key, |found| match found {
                None => Answer::Null,
                Some(record) => {
                    let mut text = String::with_capacity(record.provider.len() + 1 + record.provider_sandbox_id.len());
                    text.push_str(&record.provider);
                    text.push(LOOKUP_SEPARATOR);
                    text.push_str(&record.provider_sandbox_id);
                    Answer::Text(text)
                }
            }))
        })
    }
    // SAFETY: called by napi with this call's env and info.
    unsafe { call(env, info, operation) }
}

/// `remove(storeId, key)`: deletes the record; a missing key is a no-op.
unsafe extern "C" fn remove(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    fn operation(id: u32, key: &str) -> Result<Answer> {
        with_store(id, |store| {
            store.remove(key);
            Ok(Answer::Undefined)
        })
    }
    // SAFETY: called by napi with this call's env and info.
    unsafe { call(env, info, operation) }
}
