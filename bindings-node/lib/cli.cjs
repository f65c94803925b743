'use strict';
// `npx sandbox-reclaim ...`: the command of the Rust crate `cli/`, run from
// the npm package (bin/sandbox-reclaim.cjs calls `main`).
//
// Without `--providers`, the native `runCli` runs the whole command exactly
// as the binary does (off the JS thread; same output, exit codes, signals).
// With `--providers ./providers.mjs`, the pass runs here on the JS driver, so
// JS providers can take part: the command crate plans it (flags and config,
// `hostPlan`), opens the store and checks --docker/--local (`hostOpen`),
// decides every step of the pass loop (`HostLoop`: a pass, a sleep, the exit
// code, what a signal does) and prints every report and failure. This file
// only loads the module, builds the providers, runs `reconcile`, sleeps and
// listens for SIGINT/SIGTERM.

const { existsSync, statSync } = require('node:fs');
const { resolve } = require('node:path');
const { pathToFileURL } = require('node:url');

/** The Docker provider only destroys and lists: its image is never pulled. */
const UNUSED_IMAGE = 'sandbox-reclaim/unused:latest';

/** A failure to print through the command crate: `{ kind, flag | what, message }`. */
class Failure extends Error {
  constructor(kind, subject, message) {
    super(message);
    this.failure = kind === 'usage' ? { kind, flag: subject, message } : kind === 'unavailable' ? { kind, what: subject, message } : { kind, message };
  }
}

const usage = (message) => new Failure('usage', '--providers', message);

/** Loads `spec` (a module path, from the cwd): its default export, checked. */
async function loadProviders(spec) {
  const file = resolve(spec);
  const named = spec === file ? file : `${spec} (${file})`;
  if (!existsSync(file)) throw usage(`${named}: no such file`);
  if (!statSync(file).isFile()) throw usage(`${named}: not a file`);
  let module;
  try {
    module = await import(pathToFileURL(file).href);
  } catch (error) {
    throw usage(`${named}: cannot be imported: ${error && error.message ? error.message.split('\n')[0] : String(error)}`);
  }
  const exported = module.default;
  if (!Array.isArray(exported)) {
    const got = exported === undefined ? 'no default export' : `a default export of type ${exported === null ? 'null' : typeof exported}`;
    throw usage(`${named}: the default export must be an array of providers ({ name, destroy, list?, owner? }); the module has ${got}`);
  }
  const names = new Set();
  exported.forEach((provider, index) => {
    const at = `${named}: provider [${index}]`;
    if (provider === null || typeof provider !== 'object') throw usage(`${at} is not an object`);
    const { name } = provider;
    if (typeof name !== 'string' || name === '') throw usage(`${at} has no name (a non-empty string)`);
    const which = `${at} (${JSON.stringify(name)})`;
    if (typeof provider.destroy !== 'function') throw usage(`${which} has no destroy function`);
    if (provider.list !== undefined && provider.list !== null && typeof provider.list !== 'function') throw usage(`${which}: list must be a function`);
    if (provider.owner !== undefined && provider.owner !== null && typeof provider.owner !== 'string') throw usage(`${which}: owner must be a string`);
    if (names.has(name)) throw usage(`${which}: two providers are named ${JSON.stringify(name)}`);
    names.add(name);
  });
  return { providers: exported, named };
}

/** How a pass's rejection reads to the command crate: an option it refused, the store, or the pass. */
function rejectionKind(error, errors) {
  if (error instanceof TypeError) return 'option';
  return error instanceof errors.SandboxStoreError ? 'store' : 'other';
}

/** `--docker`, `--local`, `--e2b`, `--daytona`, `--vercel` as the binary builds them (in that order), then the module's providers. */
function buildProviders(plan, own, named, binding, native) {
  const owner = plan.owner ?? undefined;
  const providers = [];
  if (plan.docker) {
    providers.push(new binding.DockerProvider({ image: UNUSED_IMAGE, dockerHost: plan.docker.url ?? undefined, owner, name: plan.docker.name }));
  }
  if (plan.local) providers.push(new binding.LocalProvider({ baseDir: plan.local.baseDir, owner, name: plan.local.name }));
  const taken = new Map(providers.map((provider) => [provider.name, plan.docker && provider.name === plan.docker.name ? '--docker' : '--local']));
  // Built natively from the flags, config and environment: no credential crosses to JS.
  const hosted = plan.hosted.length === 0 ? [] : native.hostHostedProviders(JSON.stringify(plan));
  hosted.forEach((nativeProvider, index) => {
    providers.push(require('./providers.cjs').hostedFromNative(nativeProvider));
    taken.set(plan.hosted[index].name, plan.hosted[index].flag);
  });
  own.forEach((provider, index) => {
    if (taken.has(provider.name)) {
      throw usage(`${named}: provider [${index}] is named ${JSON.stringify(provider.name)}, as the ${taken.get(provider.name)} provider`);
    }
  });
  return [...providers, ...own];
}

/**
 * Tells `loop` of SIGINT/SIGTERM: the first aborts the running pass (in-flight
 * destroys finish up to their deadline, are written down, sweep leases are
 * released) and wakes a sleep; at a second the loop prints why and answers
 * the code to exit with at once.
 */
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
  state.remove = () => {
    for (const [name, listener] of listeners) process.off(name, listener);
  };
  return state;
}

/**
 * The pass plan's options for `reconcile`: the plan (the command crate's)
 * names them as reconcile does, so every option the core publishes is
 * copied as it stands, and a new one needs nothing here.
 */
function passOptions(plan, native, providers, instances, signal) {
  const options = { providers, instances, signal };
  for (const name of native.optionNames('reconcile')) {
    const value = plan[name];
    if (value !== null && value !== undefined) options[name] = value;
  }
  return options;
}

/** The pass(es) with the module's providers; answers the exit code. */
async function runHosted(plan, native) {
  const planJson = JSON.stringify(plan);
  const fail = (failure, pass) => native.hostFail(planJson, JSON.stringify(failure.failure), pass);
  let own;
  try {
    own = await loadProviders(plan.providers);
  } catch (error) {
    if (error instanceof Failure) return fail(error);
    throw error;
  }
  const binding = require('../index.cjs');
  const errors = require('./errors.cjs');
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
      providers = buildProviders(plan, own.providers, own.named, binding, native);
      if (providers.length === 0) throw usage(`${own.named} exports no provider, and none of --docker, --local, --e2b, --daytona, --vercel is given`);
    } catch (error) {
      return fail(error instanceof Failure ? error : new Failure('unavailable', 'provider', error.message));
    }
    // The command crate decides each step: a pass, a sleep (until a signal wakes it), the exit code.
    let step = JSON.parse(loop.start(Date.now()));
    while (step.step !== 'exit') {
      if (step.step === 'pass') {
        let next;
        try {
          const report = await binding.reconcile(passOptions(plan, native, providers, store, signals.controller.signal));
          next = loop.passed(JSON.stringify(report), Date.now());
        } catch (error) {
          next = loop.failed(rejectionKind(error, errors), error && error.message ? error.message : String(error), Date.now());
        }
        step = JSON.parse(next);
      } else {
        await new Promise((wake) => {
          const timer = setTimeout(wake, Math.max(0, step.untilMs - Date.now()));
          signals.wake = () => {
            clearTimeout(timer);
            wake();
          };
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

/**
 * Runs `sandbox-reclaim` with `args` (without the program name); resolves
 * to its exit code.
 */
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
 * The native command. It listens for SIGINT/SIGTERM itself (tokio), and
 * chains to the handler it finds: Node's default one resets the terminal and
 * re-raises the signal, which the command would take for a second signal
 * (exit 130 at once). Listening here first puts libuv's handler there
 * instead, which only tells JS, and JS leaves the signal to the command.
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
