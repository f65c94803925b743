-- Version 3: the registry of every sandbox an instance record named.
-- Placeholders: {instances}, {registry} (plain names). Statements end with `;`
-- at a line end (a trigger is written on one line for that).
--
-- The orphan sweep takes a listed sandbox without an owner label for ours
-- only when the registry names it: TanStack's providers create sandboxes
-- unlabelled, and a destroy they swallowed leaves one running after its
-- record is gone. `last_seen` (epoch milliseconds) is when a record naming
-- it was last written, or deleted; a pass counts rows seen within its
-- registry retention (default 30 days).
CREATE TABLE {registry} (
  provider TEXT NOT NULL,
  provider_sandbox_id TEXT NOT NULL,
  sandbox_key TEXT NOT NULL,
  first_seen INTEGER NOT NULL,
  last_seen INTEGER NOT NULL,
  PRIMARY KEY (provider, provider_sandbox_id)
) STRICT;
CREATE INDEX {registry}_by_last_seen ON {registry} (provider, last_seen);
-- Records written before version 3 register as last seen at their update.
INSERT INTO {registry} (provider, provider_sandbox_id, sandbox_key, first_seen, last_seen) SELECT provider, provider_sandbox_id, sandbox_key, updated_at, updated_at FROM {instances} WHERE true ON CONFLICT (provider, provider_sandbox_id) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen);
-- Triggers, so that every write path (upsert, delete, a delete that records a
-- leak, idle expiry), in any process, registers without a statement of its own.
CREATE TRIGGER {registry}_on_insert AFTER INSERT ON {instances} BEGIN INSERT INTO {registry} (provider, provider_sandbox_id, sandbox_key, first_seen, last_seen) VALUES (NEW.provider, NEW.provider_sandbox_id, NEW.sandbox_key, NEW.updated_at, NEW.updated_at) ON CONFLICT (provider, provider_sandbox_id) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen), sandbox_key = excluded.sandbox_key; END;
CREATE TRIGGER {registry}_on_update AFTER UPDATE ON {instances} BEGIN INSERT INTO {registry} (provider, provider_sandbox_id, sandbox_key, first_seen, last_seen) VALUES (NEW.provider, NEW.provider_sandbox_id, NEW.sandbox_key, NEW.updated_at, NEW.updated_at) ON CONFLICT (provider, provider_sandbox_id) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen), sandbox_key = excluded.sandbox_key; END;
CREATE TRIGGER {registry}_on_delete AFTER DELETE ON {instances} BEGIN INSERT INTO {registry} (provider, provider_sandbox_id, sandbox_key, first_seen, last_seen) VALUES (OLD.provider, OLD.provider_sandbox_id, OLD.sandbox_key, OLD.updated_at, max(OLD.updated_at, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))) ON CONFLICT (provider, provider_sandbox_id) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen); END;
