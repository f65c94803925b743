-- Version 1: instance records and the leak ledger.
-- Placeholders: {instances}, {leaks} (schema-qualified, quoted). Statements end
-- with `;` at a line end.
--
-- A btree entry holds at most ~2.7 kB, so long keys are indexed by their
-- SHA-256 (CHECKed to match) rather than by the text itself.
CREATE TABLE {instances} (
  key_hash BYTEA PRIMARY KEY,
  sandbox_key TEXT NOT NULL,
  provider TEXT NOT NULL,
  provider_sandbox_id TEXT NOT NULL,
  latest_snapshot_id TEXT,
  thread_id TEXT NOT NULL,
  latest_run_id TEXT,
  -- Epoch milliseconds; 9007199254740991 = 2^53-1, the largest every binding holds exactly.
  updated_at BIGINT NOT NULL CHECK (updated_at BETWEEN 0 AND 9007199254740991),
  CHECK (key_hash = sha256(convert_to(sandbox_key, 'UTF8')))
);
CREATE TABLE {leaks} (
  -- Insertion order: entries are listed and claimed oldest first.
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- Identity of the leaked sandbox: SHA-256 of length(provider) ':' provider providerSandboxId.
  sandbox_hash BYTEA NOT NULL UNIQUE,
  provider TEXT NOT NULL,
  provider_sandbox_id TEXT NOT NULL,
  sandbox_key TEXT NOT NULL,
  run_id TEXT NOT NULL,
  last_error TEXT NOT NULL,
  failed_at BIGINT NOT NULL CHECK (failed_at >= 0),
  attempts BIGINT NOT NULL CHECK (attempts >= 1),
  -- Epoch milliseconds (database clock) until which a retrier holds the entry; NULL = free.
  claimed_until BIGINT,
  CHECK (sandbox_hash = sha256(convert_to(length(provider)::text || ':' || provider || provider_sandbox_id, 'UTF8')))
);
