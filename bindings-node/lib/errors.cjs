'use strict';
// How native failures become JavaScript errors. The addon reports them by
// `code` (bindings-node/src/provider.rs): napi's `InvalidArg` is input the
// core refused, naming the field (→ TypeError); our own `SANDBOX_NOT_OWNED` is
// the providers' ownership guard (→ SandboxNotOwnedError); anything else
// stays an Error with the backend's message.

/** The code of the ownership guard's error. */
const NOT_OWNED_CODE = 'SANDBOX_NOT_OWNED';

/**
 * A provider refused to touch a sandbox it does not own (a container without
 * its owner label, a directory with another owner). `code` is
 * `'SANDBOX_NOT_OWNED'`.
 */
class SandboxNotOwnedError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'SandboxNotOwnedError';
    this.code = NOT_OWNED_CODE;
  }
}

/** The JS error for a native one. */
function fromNative(error) {
  if (error instanceof Error && !(error instanceof TypeError)) {
    if (error.code === 'InvalidArg') return new TypeError(error.message);
    if (error.code === NOT_OWNED_CODE) return new SandboxNotOwnedError(error.message);
  }
  return error;
}

/** Runs a native call (sync or Promise-returning), translating its failure. */
async function nativeCall(call) {
  try {
    return await call();
  } catch (error) {
    throw fromNative(error);
  }
}

/** Runs a synchronous native call, translating its failure. */
function nativeCallSync(call) {
  try {
    return call();
  } catch (error) {
    throw fromNative(error);
  }
}

// ------------------------------------------------------- type checks

function checkObject(value, name) {
  if (value === null || typeof value !== 'object') throw new TypeError(`${name} must be an object`);
  return value;
}

function checkOptionalString(object, field, owner) {
  const value = object[field];
  if (value !== undefined && typeof value !== 'string') throw new TypeError(`${owner}.${field} must be a string`);
}

function checkString(value, name) {
  if (typeof value !== 'string') throw new TypeError(`${name} must be a string`);
  return value;
}

function checkOptionalWhole(object, field, owner) {
  const value = object[field];
  if (value !== undefined && !(Number.isInteger(value) && value >= 0)) {
    throw new TypeError(`${owner}.${field} must be a whole number >= 0`);
  }
}

function checkStringArray(value, name) {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw new TypeError(`${name} must be an array of strings`);
  }
  return value;
}

/** The ledger's message for a thrown value: its `message`, else `String(thrown)`. */
function messageOf(error) {
  if (error !== null && typeof error === 'object' && typeof error.message === 'string') return error.message;
  try {
    return String(error);
  } catch {
    return Object.prototype.toString.call(error);
  }
}

module.exports = {
  SandboxNotOwnedError,
  NOT_OWNED_CODE,
  nativeCall,
  nativeCallSync,
  checkObject,
  checkString,
  checkOptionalString,
  checkOptionalWhole,
  checkStringArray,
  messageOf,
};
