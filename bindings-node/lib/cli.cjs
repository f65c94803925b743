'use strict';
// `npx sandbox-reclaim ...` (bin/sandbox-reclaim.cjs calls `main`). Without
// `--providers`, the native `runCli` runs the whole command as the binary
// does. With `--providers ./providers.mjs` the pass runs on the JS driver so
// JS providers take part; the command crate plans it (`hostPlan`), checks
// what the module exported and words every refusal (`hostCheckModule`),
// opens the store (`hostOpen`), builds the flags' providers, decides each
// step of the loop (`HostLoop`) and prints every line. This file only loads
// the module, runs `reconcile`, sleeps and listens for SIGINT/SIGTERM.

const { existsSync, statSync } = require('node:fs');
const { resolve } = require('node:path');
const { pathToFileURL } = require('node:url');

/**
 * Loads `spec` (a module path, from the cwd) and describes what it found,
 * reading each provider's properties once; the command crate checks it and
 * words every refusal (`hostCheckModule`).
 */
async function loadProviders(spec) {
  const file = resolve(spec);
  const named = spec === file ? file : `${spec} (${file})`;
  const found = { host: 'node', named, problem: null, providers: [] };
  if (!existsSync(file)) return { ...found, problem: { kind: 'no-such-file' } };
  if (!statSync(file).isFile()) return { ...found, problem: { kind: 'not-a-file' } };
  let exported;
  try {
    exported = (await import(pathToFileURL(file).href)).default;
  } catch (error) {
    return { ...found, problem: { kind: 'import-failed', error: error && error.message ? error.message.split('\n')[0] : String(error) } };
  }
  if (!Array.isArray(exported)) {
    const got = exported === undefined ? 'no default export' : `a default export of type ${exported === null ? 'null' : typeof exported}`;
    return { ...found, problem: { kind: 'not-an-array', got } };
  }
  found.exported = exported;
  found.providers = exported.map((provider) => {
    if (provider === null || typeof provider !== 'object') return { object: false, name: null, shown: '', destroy: false, list: false, owner: false };
    const { name, destroy, list, owner } = provider;
    const named = typeof name === 'string' && name !== '';
    return { object: true, name: named ? name : null, shown: named ? JSON.stringify(name) : typeof name, destroy: typeof destroy === 'function', list: list === undefined || list === null || typeof list === 'function', owner: owner === undefined || owner === null || typeof owner === 'string' };
  });
  return found;
}

/** SIGINT/SIGTERM go to `loop`: the first aborts the pass and wakes a sleep; at a second the loop answers the code to exit with. */
function listenForSignals(loop) {
  const state = { controller: new AbortController(), wake: () => {} };
  const onSignal = (name) => {
    const code = loop.signal(name);
    if (code !== null && code !== undefined) process.exit(code);
    state.controller.abort();
    state.wake();
  };
  const listeners = ['SIGINT', 'SIGTERM'].map((name) => [name, () => onSignal(name)]);
  for (const [name, listener] of listeners) process.on(name, listener);
  state.remove = () => listeners.forEach(([name, listener]) => process.off(name, listener));
  return state;
}

/** The pass(es) with the module's providers; answers the exit code. */
async function runHosted(plan, native) {
  const planJson = JSON.stringify(plan);
  const found = await loadProviders(plan.providers);
  const refused = native.hostCheckModule(planJson, JSON.stringify({ ...found, exported: undefined }));
  if (refused !== null && refused !== undefined) return refused;
  const [binding, errors] = [require('../index.cjs'), require('./errors.cjs')];
  let store;
  try {
    store = require('./stores.cjs').adoptNativeStore(plan.store.kind, await native.hostOpen(planJson));
  } catch (error) {
    if (error && error.code === 'SANDBOX_RECLAIM_EXIT') return error.exitCode;
    throw error;
  }
  const loop = new native.HostLoop(planJson);
  const signals = listenForSignals(loop);
  try {
    let providers;
    try {
      // --docker, --local, --e2b, --daytona, --vercel built natively as the binary builds them (no credential crosses to JS).
      const { managedFromNative, hostedFromNative } = require('./providers.cjs');
      providers = [...native.hostManagedProviders(planJson).map(managedFromNative), ...native.hostHostedProviders(planJson).map(hostedFromNative), ...found.exported];
    } catch (error) {
      return native.hostFail(planJson, JSON.stringify({ kind: 'unavailable', what: 'provider', message: error.message }));
    }
    const options = JSON.parse(native.respellOptions('reconcile', planJson));
    // The command crate decides each step: a pass, a sleep (until a signal wakes it), the exit code.
    let step = JSON.parse(loop.start(Date.now()));
    while (step.step !== 'exit') {
      if (step.step === 'pass') {
        let next;
        try {
          const report = await binding.reconcile({ ...options, providers, instances: store, signal: signals.controller.signal });
          next = loop.passed(JSON.stringify(report), Date.now());
        } catch (error) {
          const kind = error instanceof TypeError ? 'option' : error instanceof errors.SandboxStoreError ? 'store' : 'other';
          next = loop.failed(kind, error && error.message ? error.message : String(error), Date.now());
        }
        step = JSON.parse(next);
      } else {
        await new Promise((wake) => {
          const timer = setTimeout(wake, Math.max(0, step.untilMs - Date.now()));
          signals.wake = () => wake(clearTimeout(timer));
        });
        step = JSON.parse(loop.woke(Date.now()));
      }
    }
    return step.code;
  } finally {
    signals.remove();
    await store.close().catch(() => {});
  }
}

/** Runs `sandbox-reclaim` with `args` (without the program name); resolves to its exit code. */
async function main(args) {
  let native;
  try {
    native = require('./native.cjs');
  } catch (error) {
    process.stderr.write(`sandbox-reclaim: error: ${error.message}\n`);
    return 1;
  }
  const plan = JSON.parse(native.hostPlan(args));
  if (plan.exitCode !== undefined) {
    if (plan.message) process.stderr.write(`${plan.message}\n`);
    return plan.exitCode;
  }
  if (plan.providers === null) return runNative(plan.args, native);
  return runHosted(plan, native);
}

/**
 * The native command listens for SIGINT/SIGTERM itself and chains to the
 * handler it finds: Node's default one re-raises the signal, which the
 * command would take for a second signal (exit 130). Listening here first
 * leaves libuv's handler there instead, which only tells JS.
 */
async function runNative(args, native) {
  const ignore = () => {};
  const signals = process.platform === 'win32' ? [] : ['SIGINT', 'SIGTERM'];
  for (const name of signals) process.on(name, ignore);
  try {
    return await native.runCli(args);
  } finally {
    for (const name of signals) process.off(name, ignore);
  }
}

module.exports = { main };
