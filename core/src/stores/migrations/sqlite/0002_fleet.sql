-- Version 2: what a fleet pass needs.
-- Placeholders: {instances}, {leaks}, {sweeps}, {audit} (plain names). Statements
-- end with `;` at a line end.
--
-- Why each leak is in the ledger, and when it is next due (epoch milliseconds;
-- entries recorded before version 2 failed a destroy and are due at once).
ALTER TABLE {leaks} ADD COLUMN reason TEXT NOT NULL DEFAULT 'destroy-failed';
ALTER TABLE {leaks} ADD COLUMN next_attempt_at INTEGER NOT NULL DEFAULT 0 CHECK (next_attempt_at >= 0);
-- Idle expiry lists the records least recently updated.
CREATE INDEX {instances}_by_updated_at ON {instances} (updated_at);
-- One orphan sweeper per provider: who holds the sweep, and until when (epoch milliseconds).
CREATE TABLE {sweeps} (
  provider TEXT NOT NULL PRIMARY KEY,
  holder TEXT NOT NULL,
  until INTEGER NOT NULL
) STRICT;
-- Every destroy attempt of a fleet pass, in order.
CREATE TABLE {audit} (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL CHECK (at >= 0),
  host TEXT NOT NULL,
  provider TEXT NOT NULL,
  provider_sandbox_id TEXT NOT NULL,
  sandbox_key TEXT,
  reason TEXT NOT NULL,
  result TEXT NOT NULL,
  error TEXT
) STRICT;
CREATE INDEX {audit}_by_at ON {audit} (at);
