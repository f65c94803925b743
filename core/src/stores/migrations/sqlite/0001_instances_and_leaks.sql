-- Version 1: instance records and the leak ledger.
-- Placeholders: {instances}, {leaks}. Statements end with `;` at a line end.
CREATE TABLE {instances} (
  sandbox_key TEXT NOT NULL PRIMARY KEY,
  provider TEXT NOT NULL,
  provider_sandbox_id TEXT NOT NULL,
  latest_snapshot_id TEXT,
  thread_id TEXT NOT NULL,
  latest_run_id TEXT,
  -- Epoch milliseconds; 9007199254740991 = 2^53-1, the largest every binding holds exactly.
  updated_at INTEGER NOT NULL CHECK (updated_at BETWEEN 0 AND 9007199254740991)
) STRICT;
CREATE TABLE {leaks} (
  -- Insertion order: entries are listed and claimed oldest first.
  id INTEGER PRIMARY KEY,
  provider TEXT NOT NULL,
  provider_sandbox_id TEXT NOT NULL,
  sandbox_key TEXT NOT NULL,
  run_id TEXT NOT NULL,
  last_error TEXT NOT NULL,
  failed_at INTEGER NOT NULL CHECK (failed_at >= 0),
  attempts INTEGER NOT NULL CHECK (attempts >= 1),
  -- Epoch milliseconds until which a retrier holds the entry; NULL = free.
  claimed_until INTEGER,
  UNIQUE (provider, provider_sandbox_id)
) STRICT;
