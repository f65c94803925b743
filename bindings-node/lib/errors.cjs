'use strict';
// How native failures become JavaScript errors. The addon reports them by
// `code` (bindings-node/src/provider.rs, sql_store.rs): napi's `InvalidArg` is
// input the core refused, naming the field (→ TypeError); our own
// `SANDBOX_NOT_OWNED` is the providers' ownership guard
// (→ SandboxNotOwnedError); `SANDBOX_STORE_*` are the SQL stores' failures
// (→ SandboxStoreError and its subclasses). Anything else stays an Error with
// the backend's message.

/** The code of the ownership guard's error. */
const NOT_OWNED_CODE = 'SANDBOX_NOT_OWNED';

/** The codes of store failures, as the addon sets them. */
const STORE_CODES = Object.freeze({
  /** A query failed: SandboxStoreError. */
  failed: 'SANDBOX_STORE_FAILED',
  /** The database could not be reached, opened or migrated: SandboxStoreOpenError. */
  openFailed: 'SANDBOX_STORE_OPEN_FAILED',
  /** The SQLite file holds another application's tables: SandboxStoreOpenError. */
  foreignDatabase: 'SANDBOX_STORE_FOREIGN_DATABASE',
  /** A table of ours exists in a shape we did not create: SandboxStoreOpenError. */
  incompatibleSchema: 'SANDBOX_STORE_INCOMPATIBLE_SCHEMA',
  /** A newer library migrated the database: SchemaTooNewError. */
  schemaTooNew: 'SANDBOX_STORE_SCHEMA_TOO_NEW',
});

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

/**
 * A durable store (SQLite, PostgreSQL) failed; the message is the backend's.
 * Refused input is a TypeError instead, thrown before anything is written.
 * `code` tells the failures apart (see STORE_CODES).
 */
class SandboxStoreError extends Error {
  /**
   * @param {string} message
   * @param {string} [code]
   */
  constructor(message, code = STORE_CODES.failed) {
    super(message);
    this.name = 'SandboxStoreError';
    this.code = code;
  }
}

/**
 * A store could not be opened: the database was unreachable, a migration
 * failed, or the file is not ours (another application's tables, or a table
 * of ours in a shape we did not create), in which case it was left unchanged.
 */
class SandboxStoreOpenError extends SandboxStoreError {
  /**
   * @param {string} message
   * @param {string} [code]
   */
  constructor(message, code = STORE_CODES.openFailed) {
    super(message, code);
    this.name = 'SandboxStoreOpenError';
  }
}

/**
 * The database was migrated by a newer version of this library: schema
 * version `found`, while this one knows up to `supported`.
 */
class SchemaTooNewError extends SandboxStoreOpenError {
  /**
   * @param {string} message
   * @param {number} found
   * @param {number} supported
   */
  constructor(message, found, supported) {
    super(message, STORE_CODES.schemaTooNew);
    this.name = 'SchemaTooNewError';
    this.found = found;
    this.supported = supported;
  }
}

const OPEN_CODES = new Set([STORE_CODES.openFailed, STORE_CODES.foreignDatabase, STORE_CODES.incompatibleSchema]);

/** The JS error for a native one. */
function fromNative(error) {
  if (!(error instanceof Error) || error instanceof TypeError) return error;
  const { code, message } = error;
  if (code === 'InvalidArg') return new TypeError(message);
  if (code === NOT_OWNED_CODE) return new SandboxNotOwnedError(message);
  if (code === STORE_CODES.failed) return new SandboxStoreError(message);
  if (code === STORE_CODES.schemaTooNew) return new SchemaTooNewError(message, error.found, error.supported);
  if (OPEN_CODES.has(code)) return new SandboxStoreOpenError(message, code);
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

/**
 * A string for the core. A lone UTF-16 surrogate cannot cross into Rust
 * unchanged (napi would make it U+FFFD, which can name another record), so
 * it is refused, never altered.
 */
function checkString(value, name) {
  if (typeof value !== 'string') throw new TypeError(`${name} must be a string`);
  if (!value.isWellFormed()) throw new TypeError(`${name} must not contain a lone UTF-16 surrogate (it cannot be carried exactly)`);
  return value;
}

function checkStringArray(value, name) {
  if (!Array.isArray(value)) throw new TypeError(`${name} must be an array of strings`);
  value.forEach((item, index) => checkString(item, `${name}[${index}]`));
  return value;
}

module.exports = {
  SandboxNotOwnedError,
  SandboxStoreError,
  SandboxStoreOpenError,
  SchemaTooNewError,
  NOT_OWNED_CODE,
  STORE_CODES,
  nativeCall,
  nativeCallSync,
  checkObject,
  checkString,
  checkOptionalString,
  checkStringArray,
};
