'use strict';
// The errors a flow rejects with or logs, as host classes (napi-rs cannot
// subclass Error from Rust). Their messages are built by the core.

const native = require('./native.cjs');

const protocol = native.protocol();

/** Set while the driver builds an error whose message the core already sent. */
let messageFromCore;

/**
 * Thrown by `sandboxReclaimer` when the provider's destroy failed and the
 * instance record was deleted anyway. The message is built by the core.
 */
class SandboxReclaimFailedError extends Error {
  /** @param {string} runId @param {string | undefined} [sandboxKey] */
  constructor(runId, sandboxKey) {
    super(messageFromCore ?? native.reclaimFailedMessage(String(runId), sandboxKey === undefined ? undefined : String(sandboxKey)));
    this.name = protocol.reclaimFailedErrorName;
    this.runId = runId;
    this.sandboxKey = sandboxKey;
  }
}

/**
 * A provider's destroy did not settle within `destroyTimeoutMs`: the destroy
 * was aborted (its `signal` fired) and the reclaim took the destroy-failed
 * path. It is the `error` of that warn line.
 */
class SandboxDestroyTimeoutError extends Error {
  /** @param {string} providerSandboxId @param {number} timeoutMs */
  constructor(providerSandboxId, timeoutMs) {
    super(messageFromCore ?? native.destroyTimeoutMessage(String(providerSandboxId), Number(timeoutMs)));
    this.name = protocol.destroyTimeoutErrorName;
    this.providerSandboxId = providerSandboxId;
    this.timeoutMs = timeoutMs;
  }
}

/** Builds `Class(...args)` with the core's `message`, without asking the core again. */
function withCoreMessage(Class, message, ...args) {
  messageFromCore = message;
  try {
    return new Class(...args);
  } finally {
    messageFromCore = undefined;
  }
}

/**
 * The ledger's text for a thrown value: its string `message`, else
 * `String(value)`; a value that throws while being read (a hostile getter, a
 * revoked Proxy) gets the core's fallback, so the destroy-failed path holds.
 */
function messageOf(thrown) {
  try {
    if (thrown !== null && (typeof thrown === 'object' || typeof thrown === 'function')) {
      const message = thrown.message;
      if (typeof message === 'string') return message;
    }
    return String(thrown);
  } catch {
    try {
      return Object.prototype.toString.call(thrown);
    } catch {
      return protocol.unreadableErrorMessage;
    }
  }
}

module.exports = { SandboxReclaimFailedError, SandboxDestroyTimeoutError, withCoreMessage, messageOf };
