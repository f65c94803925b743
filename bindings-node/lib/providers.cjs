'use strict';
// The managed providers: the core's DockerProvider and LocalProvider behind
// thin facades. Each is a reclaim provider (`name`, `destroy({id})`) that can
// also create, list and exec into its own sandboxes. Argument types are
// checked here (TypeError naming the field); values by the core.

const native = require('./native.cjs');
const { plainOptions } = require('./plain.cjs');
const { nativeCall, nativeCallSync, checkObject, checkString, checkOptionalString, checkStringArray } = require('./errors.cjs');

function checkLabels(labels) {
  if (labels === undefined || labels === null) return undefined;
  checkObject(labels, 'labels');
  for (const [name, value] of Object.entries(labels)) {
    if (typeof value !== 'string') throw new TypeError(`labels.${name} must be a string`);
  }
  return labels;
}

/** Marks a construction over a native provider the command crate built. */
const FROM_NATIVE = Symbol('fromNative');

/** What Docker and local providers share: the methods, over one native provider. */
class ManagedProvider {
  #native;
  #name;
  #owner;

  constructor(nativeProvider) {
    this.#native = nativeProvider;
    this.#name = nativeProvider.name;
    this.#owner = nativeProvider.owner;
  }

  /** The name instance records carry in `provider`. */
  get name() {
    return this.#name;
  }

  /** The owner namespace its sandboxes carry: the orphan sweep destroys only those. */
  get owner() {
    return this.#owner;
  }

  /** Destroys sandbox `id`; already gone is success; not ours is a SandboxNotOwnedError. */
  async destroy(input) {
    checkObject(input, 'input');
    checkString(input.id, 'input.id');
    await nativeCall(() => this.#native.destroy(input.id));
  }

  /**
   * Creates (or finds) the running sandbox for `key`.
   * @param {string} key
   * @param {Record<string, string>} [labels]
   */
  async create(key, labels) {
    checkString(key, 'key');
    checkLabels(labels);
    return nativeCall(() => this.#native.create(key, labels ?? undefined));
  }

  /**
   * The sandboxes under this provider's owner, ordered by id, as the orphan
   * sweep reads them: `{ id, createdAt, owner, key }`, a field it cannot
   * read `null` (so a sweep fails closed). A `{ signal }` argument is accepted
   * and not needed: a listing is one engine call or one directory scan.
   */
  async list() {
    return nativeCall(() => this.#native.list());
  }

  /**
   * Runs `argv` in sandbox `id` and waits for it.
   * @param {string} id
   * @param {string[]} argv
   */
  async exec(id, argv) {
    checkString(id, 'id');
    checkStringArray(argv, 'argv');
    return nativeCall(() => this.#native.exec(id, argv));
  }
}

/** Sandboxes as containers on a Docker Engine API (Docker or podman), marked with owner labels. */
class DockerProvider extends ManagedProvider {
  /**
   * @param {{ image: string, keepAlive?: string[], networkMode?: string, cpus?: number,
   *   memoryBytes?: number, owner?: string, name?: string, dockerHost?: string }} options
   */
  constructor(options, nativeProvider) {
    if (options === FROM_NATIVE) {
      super(nativeProvider);
      return;
    }
    checkObject(options, 'options');
    checkString(options.image, 'options.image');
    if (options.keepAlive !== undefined) checkStringArray(options.keepAlive, 'options.keepAlive');
    for (const field of ['networkMode', 'owner', 'name', 'dockerHost']) checkOptionalString(options, field, 'options');
    for (const field of ['cpus', 'memoryBytes']) {
      if (options[field] !== undefined && typeof options[field] !== 'number') throw new TypeError(`options.${field} must be a number`);
    }
    const { image, keepAlive, networkMode, cpus, memoryBytes, owner, name, dockerHost } = options;
    super(nativeCallSync(() => native.NativeProvider.docker({ image, keepAlive, networkMode, cpus, memoryBytes, owner, name, dockerHost })));
  }
}

/** Sandboxes as private directories plus supervised process trees (namespaces where possible). */
class LocalProvider extends ManagedProvider {
  #isolation;

  /**
   * @param {{ baseDir: string, owner?: string, keepAlive?: string[],
   *   isolation?: 'auto' | 'namespaces' | 'process-group', name?: string }} options
   */
  constructor(options, nativeProvider) {
    if (options === FROM_NATIVE) {
      super(nativeProvider);
      this.#isolation = nativeProvider.isolation();
      return;
    }
    if (typeof native.NativeProvider.local !== 'function') {
      // Namespaces and process groups: the addon has it on Unix only.
      throw new Error(`LocalProvider needs a Unix host; this addon was built for ${process.platform}`);
    }
    checkObject(options, 'options');
    checkString(options.baseDir, 'options.baseDir');
    for (const field of ['owner', 'name']) checkOptionalString(options, field, 'options');
    if (options.keepAlive !== undefined) checkStringArray(options.keepAlive, 'options.keepAlive');
    checkOptionalString(options, 'isolation', 'options');
    const { baseDir, owner, keepAlive, isolation, name } = options;
    const provider = nativeCallSync(() => native.NativeProvider.local({ baseDir, owner, keepAlive, isolation, name }));
    super(provider);
    this.#isolation = provider.isolation();
  }

  /** The isolation new sandboxes get: `'namespaces'` or `'process-group'`. */
  isolation() {
    return this.#isolation;
  }
}

/**
 * What the hosted providers share: `name`, `owner`, an honest `destroy`, a
 * paged `list` for the sweep and `checkAccess`, over one native provider.
 * The vendor's own SDK creates sandboxes.
 */
class HostedProvider {
  #native;
  #name;
  #owner;

  /**
   * @param {string} vendor a key of the core's vendor table (`e2b`, `sprites`, ...)
   * @param {object} options the options the core names for `vendor`, each read once, checked and defaulted by the core
   */
  constructor(vendor, options) {
    if (vendor === FROM_NATIVE) {
      this.#native = options;
    } else {
      checkObject(options, 'options');
      const values = plainOptions(options, native.hostedOptionNames(vendor));
      this.#native = nativeCallSync(() => native.NativeHostedProvider.hosted(vendor, values));
    }
    this.#name = this.#native.name;
    this.#owner = this.#native.owner;
  }

  /** The name instance records carry in `provider`. */
  get name() {
    return this.#name;
  }

  /** The owner namespace the listing is filtered by. */
  get owner() {
    return this.#owner;
  }

  /** The API base URL in use. */
  get apiUrl() {
    return this.#native.apiUrl;
  }

  /**
   * Destroys sandbox `id` for good; already gone is success. An
   * `input.signal` (the destroy's deadline) aborts the HTTP request.
   */
  async destroy(input) {
    checkObject(input, 'input');
    const { id, signal } = input;
    checkString(id, 'input.id');
    if (signal === undefined || signal === null) {
      await nativeCall(() => this.#native.destroy(id));
      return;
    }
    if (signal.aborted) throw signal.reason ?? new Error(`destroying sandbox ${JSON.stringify(id)} was aborted`);
    const abort = new native.NativeAbort();
    const onAbort = () => abort.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await nativeCall(() => this.#native.destroy(id, abort));
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Every sandbox under the owner: `{ id, createdAt, owner, key, deleting }`.
   * With `sweepUnlabelled`, every sandbox: one without our owner label has
   * owner `''` (reconcile takes it only when the store's registry names it).
   */
  async list() {
    return nativeCall(() => this.#native.list());
  }

  /**
   * `lookup({ ids })`: the sandboxes of `ids` that still exist, read by id
   * (the vendor's get), for `reconcile` to judge what the store's registry
   * names and the listing did not show. Absent (`undefined`) when the
   * vendor has no get or the listing takes every sandbox (`sweepUnlabelled`).
   */
  get lookup() {
    return this.#native.canLookup ? this.#lookup : undefined;
  }

  #lookup = async (input) => {
    checkObject(input, 'input');
    const { ids } = input;
    if (!Array.isArray(ids)) throw new TypeError('input.ids must be an array of sandbox ids');
    const checked = ids.map((id, index) => checkString(id, `input.ids[${index}]`));
    return nativeCall(() => this.#native.lookup(checked));
  };

  /** One small authenticated call: rejects, naming the variable to set, when the vendor refuses the credential. */
  async checkAccess() {
    await nativeCall(() => this.#native.checkAccess());
  }
}

/**
 * One class per hosted vendor, built from the core's vendor table
 * (`proto/src/options/provider.rs`): `E2bProvider`, `SpritesProvider`, ...
 * Each takes the options the core names for its vendor; index.d.ts declares
 * them from the same table.
 */
const hostedClasses = Object.fromEntries(
  native.hostedVendors().map(({ key, className }) => {
    // A computed name, so `new SpritesProvider().constructor.name` is its own.
    const named = { [className]: class extends HostedProvider {
      constructor(options = {}) {
        super(key, options);
      }
    } };
    return [className, named[className]];
  }),
);

/**
 * What to set on a sandbox at create so `reconcile` knows it as `owner`'s and
 * for `key`: name/value labels, or with `vendor` (a hosted vendor's key) in
 * the shape that vendor takes (the core decides; index.d.ts lists them).
 * @param {string | undefined} owner default `'sandbox-reclaim'`
 * @param {string} key the sandbox key
 * @param {string} [vendor] `'e2b'`, `'upstash-box'`, `'kubernetes'`, ...
 * @returns {Record<string, string> | string[] | {labels: Record<string, string>, annotations: Record<string, string>}}
 */
function ownerLabels(owner, key, vendor) {
  if (owner !== undefined) checkString(owner, 'owner');
  checkString(key, 'key');
  if (vendor === undefined) return nativeCallSync(() => native.ownerLabels(owner, key));
  checkString(vendor, 'vendor');
  return JSON.parse(nativeCallSync(() => native.vendorOwnerLabelsJson(owner, key, vendor)));
}

/** A facade over a native hosted provider the command crate built (the hosted command's `--e2b`, ...). */
function hostedFromNative(nativeProvider) {
  return new HostedProvider(FROM_NATIVE, nativeProvider);
}

/** A facade over a native Docker or local provider the command crate built (`--docker`, `--local`). */
function managedFromNative(nativeProvider) {
  return new (nativeProvider.isolation() ? LocalProvider : DockerProvider)(FROM_NATIVE, nativeProvider);
}

module.exports = {
  DockerProvider, LocalProvider, hostedClasses, ownerLabels, hostedFromNative, managedFromNative,
};
