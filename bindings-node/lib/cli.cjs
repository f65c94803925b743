'use strict';
// `npx sandbox-reclaim ...`: the command of the Rust crate `cli/`, run from
// the npm package (bin/sandbox-reclaim.cjs calls `main`).
//
// Without `--providers`, the native `runCli` runs the whole command exactly
// as the binary does (off the JS thread; same output, exit codes, signals).
// With `--providers ./providers.mjs`, the pass runs here on the JS driver, so
// JS providers can take part: the command crate plans it (flags and config,
// `hostPlan`), opens the store and checks --docker/--local (`hostOpen`), and
// prints every report and failure (`hostEmit`, `hostFail`); this file only
// loads the module, builds the providers and runs `reconcile`, once or every
// interval, stopping on SIGINT/SIGTERM as the binary does.

const { existsSync, statSync } = require('node:fs');
const { resolve } = require('node:path');
const { pathToFileURL } = require('node:url');

/** The Docker provider only destroys and lists: its image is never pulled. */
const UNUSED_IMAGE = 'sandbox-reclaim/unused:latest';

/** The flag behind a pass option's name (a TypeError from `reconcile` names the option). */
const FLAGS = {
  concurrency: '--concurrency',
  destroyTimeoutMs: '--destroy-timeout',
  orphanGraceMs: '--orphan-grace',
  maxIdleMs: '--max-idle',
  budgetMs: '--budget',
  owner: '--owner',
  host: '--host',
  providers: '--providers',
};

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

/** What a pass's rejection means for the command: a usage error (the option's flag), the store, or the pass. */
function passFailure(error, errors) {
  if (error instanceof TypeError) {
    const option = /options\.(\w+)/.exec(error.message);
    const flag = option && FLAGS[option[1]];
    return new Failure('usage', flag || '--providers', error.message);
  }
  if (error instanceof errors.SandboxStoreError) return new Failure('unavailable', 'store', error.message);
  return new Failure('failed', undefined, error && error.message ? error.message : String(error));
}

/** `--docker` and `--local` as the binary builds them (Docker first), then the module's providers. */
function buildProviders(plan, own, named, binding) {
  const owner = plan.owner ?? undefined;
  const providers = [];
  if (plan.docker) {
    providers.push(new binding.DockerProvider({ image: UNUSED_IMAGE, dockerHost: plan.docker.url ?? undefined, owner, name: plan.docker.name }));
  }
  if (plan.local) providers.push(new binding.LocalProvider({ baseDir: plan.local.baseDir, owner, name: plan.local.name }));
  const taken = new Map(providers.map((provider) => [provider.name, plan.docker && provider.name === plan.docker.name ? '--docker' : '--local']));
  own.forEach((provider, index) => {
    if (taken.has(provider.name)) {
      throw usage(`${named}: provider [${index}] is named ${JSON.stringify(provider.name)}, as the ${taken.get(provider.name)} provider`);
    }
  });
  return [...providers, ...own];
}

/**
 * Stops the running pass on SIGINT/SIGTERM (in-flight destroys finish up to
 * their deadline, are written down, sweep leases are released); a second
 * signal exits at once with 130, as the binary does.
 */
function listenForSignals() {
  const state = { stopped: false, controller: new AbortController(), wake: () => {} };
  const onSignal = (name) => {
    if (state.stopped) {
      process.stderr.write(`sandbox-reclaim: ${name} again: exiting now (unfinished work stays in the ledger)\n`);
      process.exit(130);
    }
    state.stopped = true;
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

/** The pass plan's options for `reconcile`. */
function passOptions(plan, providers, instances, signal) {
  const given = {
    dryRun: plan.dryRun,
    retryLeaks: plan.retryLeaks,
    concurrency: plan.concurrency,
    destroyTimeoutMs: plan.destroyTimeoutMs,
    orphanGraceMs: plan.orphanGraceMs,
    maxIdleMs: plan.maxIdleMs,
    budgetMs: plan.budgetMs,
    owner: plan.owner,
    host: plan.host,
  };
  const options = { providers, instances, signal };
  for (const [name, value] of Object.entries(given)) if (value !== null && value !== undefined) options[name] = value;
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
  const signals = listenForSignals();
  try {
    let providers;
    try {
      providers = buildProviders(plan, own.providers, own.named, binding);
      if (providers.length === 0) throw usage(`${own.named} exports no provider, and neither --docker nor --local is given`);
    } catch (error) {
      return fail(error instanceof Failure ? error : new Failure('unavailable', 'provider', error.message));
    }
    const pass = () => binding.reconcile(passOptions(plan, providers, store, signals.controller.signal));

    if (plan.everyMs === null || plan.everyMs === undefined) {
      let report;
      try {
        report = await pass();
      } catch (error) {
        return fail(passFailure(error, errors));
      }
      return native.hostEmit(planJson, JSON.stringify(report));
    }

    // A pass every interval until a signal: a pass longer than the interval
    // is followed by the next one at once, skipping the missed ones.
    let number = 0;
    let next = Date.now();
    while (!signals.stopped) {
      number += 1;
      try {
        const report = await pass();
        native.hostEmit(planJson, JSON.stringify(report), number);
      } catch (error) {
        const failure = passFailure(error, errors);
        // Options are checked before anything runs: they will not get better.
        if (failure.failure.kind === 'usage') return fail(failure);
        fail(failure, number);
      }
      next += plan.everyMs;
      next = Math.max(next, Date.now());
      if (signals.stopped) break;
      await new Promise((wake) => {
        const timer = setTimeout(wake, next - Date.now());
        signals.wake = () => {
          clearTimeout(timer);
          wake();
        };
      });
    }
    return 0;
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
