// A user's own fleet store for tests: every method delegates to a native
// store and every call is recorded, so a test can say which optional
// methods (`prune`, `registeredSandboxes`, the scoped reads) a pass asks for,
// and when.

/** The fleet store's required methods. */
const REQUIRED = ['get', 'upsert', 'delete', 'deleteRecordingLeak', 'listStale', 'expireIdle', 'sandboxReferences', 'recordLeak', 'dueLeaks', 'deferLeak', 'claimSweep', 'releaseSweep', 'appendAudit', 'resolveLeak'];

/** The scoped reads: a store has all five (a sweep asks about what it listed) or none. */
export const SCOPED = ['sweepMark', 'referencedAmong', 'registeredAmong', 'lookupCandidates', 'lookupChecked'];

/** `{ store, calls }`: `store` offers the required methods plus `optional`, each over `native`'s. */
export function userStore(native, optional = []) {
  const calls = [];
  const store = {};
  for (const method of [...REQUIRED, ...optional]) {
    store[method] = (...args) => {
      calls.push({ method, args });
      return native[method](...args);
    };
  }
  return { store, calls };
}
