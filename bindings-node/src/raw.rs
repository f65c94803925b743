//! The hot-path entry points, registered as raw napi callbacks.
//!
//! Why not `#[napi]`: napi-rs 3 wraps every call that takes arguments in
//! native-borrow bookkeeping that allocates (measured here at ~150 ns a call,
//! more than the reclaim step itself). These four take and return small
//! integers (and one optional string), so decoding them by hand is short.
//! Everything else stays on `#[napi]`.

use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use napi::bindgen_prelude::{JsObjectValue, Object};
use napi::{sys, Env, Error, Result, Status};
use napi_derive::napi;

use crate::session;

/// Most arguments a hot entry point takes.
const MAX_ARGS: usize = 5;

type Entry = unsafe fn(sys::napi_env, &[sys::napi_value]) -> Result<i32>;

/// The hot entry points as an object of plain functions, created once at load.
#[napi]
pub fn hot_paths(env: &Env) -> Result<Object<'_>> {
    let mut entries = Object::new(env)?;
    let table: [(&str, sys::napi_callback); 7] = [
        ("start", Some(start)),
        ("startWithNativeStore", Some(start_with_native_store)),
        ("stashed", Some(stashed)),
        ("instanceLoaded", Some(instance_loaded)),
        ("destroyFinished", Some(destroy_finished)),
        ("nativeDestroyFinished", Some(native_destroy_finished)),
        ("abort", Some(abort)),
    ];
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
        entries.set_named_property(name, unsafe {
            napi::bindgen_prelude::Unknown::from_raw_unchecked(env.raw(), function)
        })?;
    }
    Ok(entries)
}

fn check(status: sys::napi_status, what: &str) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(Error::new(Status::from(status), format!("{what} failed")))
    }
}

/// Decodes the arguments, runs `entry`, and returns its integer or throws.
unsafe fn call(env: sys::napi_env, info: sys::napi_callback_info, arity: usize, entry: Entry) -> sys::napi_value {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut argc = MAX_ARGS;
        let mut argv = [ptr::null_mut(); MAX_ARGS];
        // SAFETY: argv has room for MAX_ARGS values.
        let status =
            unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut()) };
        check(status, "napi_get_cb_info")?;
        if argc < arity {
            return Err(Error::new(Status::InvalidArg, format!("expected {arity} arguments, got {argc}")));
        }
        // SAFETY: the values belong to this call's env.
        unsafe { entry(env, &argv[..arity]) }
    }));
    let result =
        outcome.unwrap_or_else(|_| Err(Error::new(Status::GenericFailure, "sandbox-reclaim: native step panicked")));
    match result {
        Ok(value) => {
            let mut number = ptr::null_mut();
            // SAFETY: a valid env; on failure `number` stays null, which napi reads as undefined.
            unsafe { sys::napi_create_int32(env, value, &mut number) };
            number
        }
        Err(error) => {
            let message = CString::new(error.reason.replace('\0', "\\0")).unwrap_or_default();
            let code = CString::new(error.status.as_ref()).unwrap_or_default();
            // SAFETY: valid C strings; the pending exception propagates when we return.
            unsafe { sys::napi_throw_error(env, code.as_ptr(), message.as_ptr()) };
            ptr::null_mut()
        }
    }
}

unsafe fn int(env: sys::napi_env, value: sys::napi_value) -> Result<i32> {
    let mut number = 0;
    // SAFETY: a value of this env.
    check(unsafe { sys::napi_get_value_int32(env, value, &mut number) }, "reading an integer argument")?;
    Ok(number)
}

/// `undefined` → `None`, a string → `Some`.
unsafe fn optional_string(env: sys::napi_env, value: sys::napi_value) -> Result<Option<String>> {
    let mut kind = 0;
    // SAFETY: a value of this env.
    check(unsafe { sys::napi_typeof(env, value, &mut kind) }, "napi_typeof")?;
    if kind == sys::ValueType::napi_undefined {
        return Ok(None);
    }
    let mut length = 0;
    // SAFETY: asking for the length only (null buffer).
    check(unsafe { sys::napi_get_value_string_utf8(env, value, ptr::null_mut(), 0, &mut length) }, "reading a string")?;
    let mut bytes = vec![0u8; length + 1];
    // SAFETY: `bytes` holds length + 1 bytes, room for the terminating NUL.
    check(
        unsafe { sys::napi_get_value_string_utf8(env, value, bytes.as_mut_ptr().cast(), bytes.len(), &mut length) },
        "reading a string",
    )?;
    bytes.truncate(length);
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| Error::new(Status::InvalidArg, "a string argument was not valid UTF-8"))
}

unsafe extern "C" fn start(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe fn entry(env: sys::napi_env, args: &[sys::napi_value]) -> Result<i32> {
        // SAFETY: the values belong to this call.
        let [kind, key, provider, ledger] =
            unsafe { [int(env, args[0])?, int(env, args[1])?, int(env, args[2])?, int(env, args[3])?] };
        session::start(kind as u32, key, provider, ledger != 0)
    }
    // SAFETY: called by napi with this call's env and info.
    unsafe { call(env, info, 4, entry) }
}

unsafe extern "C" fn start_with_native_store(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe fn entry(env: sys::napi_env, args: &[sys::napi_value]) -> Result<i32> {
        let missing = || Error::new(Status::InvalidArg, "runId and the provider name must be strings");
        // SAFETY: the values belong to this call.
        let (kind, store, run_id, key, provider) = unsafe {
            (
                int(env, args[0])?,
                int(env, args[1])?,
                optional_string(env, args[2])?.ok_or_else(missing)?,
                optional_string(env, args[3])?,
                optional_string(env, args[4])?.ok_or_else(missing)?,
            )
        };
        session::start_with_native_store(kind as u32, store as u32, run_id, key, provider)
    }
    // SAFETY: called by napi with this call's env and info.
    unsafe { call(env, info, 5, entry) }
}

/// `stashed(index)`: stash entry `index` of the last program, as a string.
unsafe extern "C" fn stashed(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let mut argc = 1;
    let mut argv = [ptr::null_mut(); 1];
    let mut result = ptr::null_mut();
    // SAFETY: argv has room for one value; napi leaves `result` null (undefined) on failure.
    unsafe {
        sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut());
        let index = if argc == 1 { int(env, argv[0]).unwrap_or(-1) } else { -1 };
        session::with_stashed(index as u32, |text| {
            if let Some(text) = text {
                sys::napi_create_string_utf8(env, text.as_ptr().cast(), text.len() as isize, &mut result);
            }
        });
    }
    result
}

unsafe extern "C" fn instance_loaded(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe fn entry(env: sys::napi_env, args: &[sys::napi_value]) -> Result<i32> {
        // SAFETY: the values belong to this call.
        let [handle, provider, id] = unsafe { [int(env, args[0])?, int(env, args[1])?, int(env, args[2])?] };
        session::instance_loaded(handle as u32, provider, id)
    }
    // SAFETY: called by napi with this call's env and info.
    unsafe { call(env, info, 3, entry) }
}

unsafe extern "C" fn destroy_finished(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe fn entry(env: sys::napi_env, args: &[sys::napi_value]) -> Result<i32> {
        // SAFETY: the values belong to this call.
        let [handle, message] = unsafe { [int(env, args[0])?, int(env, args[1])?] };
        session::destroy_finished(handle as u32, message)
    }
    // SAFETY: called by napi with this call's env and info.
    unsafe { call(env, info, 2, entry) }
}

unsafe extern "C" fn native_destroy_finished(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe fn entry(env: sys::napi_env, args: &[sys::napi_value]) -> Result<i32> {
        // SAFETY: the values belong to this call.
        let (handle, message) = unsafe { (int(env, args[0])?, optional_string(env, args[1])?) };
        session::native_destroy_finished(handle as u32, message)
    }
    // SAFETY: called by napi with this call's env and info.
    unsafe { call(env, info, 2, entry) }
}

unsafe extern "C" fn abort(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe fn entry(env: sys::napi_env, args: &[sys::napi_value]) -> Result<i32> {
        // SAFETY: the value belongs to this call.
        session::abort(unsafe { int(env, args[0])? } as u32);
        Ok(0)
    }
    // SAFETY: called by napi with this call's env and info.
    unsafe { call(env, info, 1, entry) }
}
