'use strict';
// How a batch crosses from the core (bindings-node/src/packed.rs): one UTF-16
// string per native call, unpacked here into a plain array, rather than an
// array napi builds element by element. Each run keeps the strings it passed
// to the machine (`run.strings`), in the order the native side keeps them:
// the start's strings, an instance's provider and sandbox id, claimed sandbox
// ids. A text slot naming one of them crosses as its index; other text
// (logs, reports) crosses inline.
//
// A slot is a tag unit `kind * 8 + digits`, then `digits` base-65536 digits,
// most significant first: a number, a handle into `run.strings`, an inline
// string's length (its units follow), or nothing.

const native = require('./native.cjs');

const protocol = native.protocol();
const [NUMBER, HANDLE, INLINE] = protocol.packedKinds;

/** The batch `packed` carries, as a plain array; `strings`: the run's table. */
function unpack(packed, strings) {
  const batch = [];
  const end = packed.length;
  let at = 0;
  while (at < end) {
    const tag = packed.charCodeAt(at++);
    const kind = tag >> 3;
    let value = 0;
    for (let digits = tag & 7; digits > 0; digits--) value = value * 65536 + packed.charCodeAt(at++);
    if (kind === NUMBER) batch.push(value);
    else if (kind === HANDLE) batch.push(strings[value]);
    else if (kind === INLINE) {
      batch.push(packed.slice(at, at + value));
      at += value;
    } else batch.push(undefined);
  }
  return batch;
}

/**
 * The machine calls that answer a batch, for `run` (`{ run, strings }`).
 * `start(now)` calls a native start with the strings `sent`, in the order
 * the native start keeps them.
 */
const batches = {
  start(run, sent, start, now) {
    run.strings = sent;
    return unpack(start(now), sent);
  },
  ok: (run, id, now) => unpack(native.completeOk(run.run, id, now), run.strings),
  failed: (run, id, message, now) => unpack(native.completeFailed(run.run, id, message, now), run.strings),
  instance(run, id, provider, providerSandboxId, now) {
    run.strings.push(provider, providerSandboxId);
    return unpack(native.completeInstance(run.run, id, provider, providerSandboxId, now), run.strings);
  },
  noInstance: (run, id, now) => unpack(native.completeNoInstance(run.run, id, now), run.strings),
  json: (run, id, json, now) => unpack(native.completeJson(run.run, id, json, now), run.strings),
  completeLeaks(run, id, sandboxIds, now) {
    for (const sandboxId of sandboxIds) run.strings.push(sandboxId);
    return unpack(native.completeLeaks(run.run, id, sandboxIds, now), run.strings);
  },
  timeout: (run, now) => unpack(native.timeout(run.run, now), run.strings),
  stop: (run, now) => unpack(native.stop(run.run, now), run.strings),
};

module.exports = batches;
