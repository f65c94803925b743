-- Version 2: what a fleet pass needs.
-- Placeholders: {instances}, {leaks}, {sweeps}, {audit} (schema-qualified,
-- quoted). Statements end with `;` at a line end. Indexes are left unnamed, so
-- PostgreSQL names them after their table and two stores in one schema never clash.
--
-- Why each leak is in the ledger, and when it is next due (epoch milliseconds;
-- entries recorded before version 2 failed a destroy and are due at once).
ALTER TABLE {leaks} ADD COLUMN reason TEXT NOT NULL DEFAULT 'destroy-failed';
ALTER TABLE {leaks} ADD COLUMN next_attempt_at BIGINT NOT NULL DEFAULT 0 CHECK (next_attempt_at >= 0);
-- Idle expiry lists the records least recently updated.
CREATE INDEX ON {instances} (updated_at);
-- One orphan sweeper per provider: who holds the sweep, and until when (epoch
-- milliseconds). Keyed by the provider's SHA-256, as a btree entry holds at most ~2.7 kB.
CREATE TABLE {sweeps} (
  provider_hash BYTEA PRIMARY KEY,
  provider TEXT NOT NULL,
  holder TEXT NOT NULL,
  until BIGINT NOT NULL,
  CHECK (provider_hash = sha256(convert_to(provider, 'UTF8')))
);
-- Every destroy attempt of a fleet pass, in order.
CREATE TABLE {audit} (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at BIGINT NOT NULL CHECK (at >= 0),
  host TEXT NOT NULL,
  provider TEXT NOT NULL,
  provider_sandbox_id TEXT NOT NULL,
  sandbox_key TEXT,
  reason TEXT NOT NULL,
  result TEXT NOT NULL,
  error TEXT
);
CREATE INDEX ON {audit} (at);
