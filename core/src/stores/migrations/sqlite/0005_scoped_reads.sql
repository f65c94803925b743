-- Version 5: a sweep's store reads follow what it listed, not the store's history.
-- Placeholders: {instances}, {leaks}, {audit}, {registry}, {marks} (plain names).
-- Statements end with `;` at a line end (a trigger is written on one line for that).
--
-- A sweep takes a deletion mark, lists, then asks only about the listed ids
-- (referencedAmong, registeredAmong), each answered on an index; the lookup
-- by id takes its candidates from a queue, one indexed page at a time.
--
-- `{marks}`: one row, the count of record deletions so far (a record
-- deleted, or pointed at another sandbox). SQLite serialises writers, so the
-- triggers' increment is exact; the sweep's mark is the count, and it never
-- goes down (a prune deletes registry rows, never this count).
CREATE TABLE {marks} (id INTEGER PRIMARY KEY CHECK (id = 1), deletions INTEGER NOT NULL CHECK (deletions >= 0)) STRICT;
INSERT INTO {marks} (id, deletions) VALUES (1, 0);
-- `deleted_seq`: the count when a record naming this sandbox was last
-- deleted, or pointed at another sandbox: a row with `deleted_seq > mark` was
-- deleted after the mark, whatever the clocks say. 0: deleted before version
-- 5 (before any mark).
ALTER TABLE {registry} ADD COLUMN deleted_seq INTEGER;
-- `lookup_at`: the lookup queue. NULL: not queued (a record or leak entry
-- names it, or it is known gone). Negative: `-last_seen`, never checked
-- since its record went (the most recently deleted first); positive: when a
-- lookup last checked it (epoch milliseconds, the pass's clock).
ALTER TABLE {registry} ADD COLUMN lookup_at INTEGER;
CREATE INDEX {registry}_lookup_queue ON {registry} (provider, lookup_at, provider_sandbox_id) WHERE lookup_at IS NOT NULL;
-- Every scoped read finds a listed id on an index (the registry has its key,
-- the ledger its UNIQUE); prune's batches take one provider's oldest audit rows.
CREATE INDEX {instances}_by_sandbox ON {instances} (provider, provider_sandbox_id);
CREATE INDEX {audit}_by_sandbox ON {audit} (provider, provider_sandbox_id, at);
CREATE INDEX {audit}_by_provider_at ON {audit} (provider, at);
-- Sandboxes whose record went before version 5 and whose destroy nobody
-- confirmed join the queue as never checked.
UPDATE {registry} SET deleted_seq = 0, lookup_at = -last_seen WHERE (resolved_at IS NULL OR resolved_at < last_seen) AND NOT EXISTS (SELECT 1 FROM {instances} AS i WHERE i.provider = {registry}.provider AND i.provider_sandbox_id = {registry}.provider_sandbox_id) AND NOT EXISTS (SELECT 1 FROM {leaks} AS l WHERE l.provider = {registry}.provider AND l.provider_sandbox_id = {registry}.provider_sandbox_id);
-- The registry's triggers of version 3, now also keeping the mark and the
-- queue: a record naming a sandbox takes it off the queue; one that stops
-- naming it (deleted, or pointed elsewhere) marks it deleted and, when no
-- other record and no leak entry names it, queues it. A re-pointed record's
-- old sandbox keeps its last_seen (its record's last write naming it).
DROP TRIGGER {registry}_on_insert;
DROP TRIGGER {registry}_on_update;
DROP TRIGGER {registry}_on_delete;
CREATE TRIGGER {registry}_on_insert AFTER INSERT ON {instances} BEGIN INSERT INTO {registry} (provider, provider_sandbox_id, sandbox_key, first_seen, last_seen) VALUES (NEW.provider, NEW.provider_sandbox_id, NEW.sandbox_key, NEW.updated_at, NEW.updated_at) ON CONFLICT (provider, provider_sandbox_id) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen), sandbox_key = excluded.sandbox_key, lookup_at = NULL; END;
CREATE TRIGGER {registry}_on_update AFTER UPDATE ON {instances} BEGIN UPDATE {marks} SET deletions = deletions + 1 WHERE id = 1 AND (OLD.provider IS NOT NEW.provider OR OLD.provider_sandbox_id IS NOT NEW.provider_sandbox_id); INSERT INTO {registry} (provider, provider_sandbox_id, sandbox_key, first_seen, last_seen, deleted_seq, lookup_at) SELECT OLD.provider, OLD.provider_sandbox_id, OLD.sandbox_key, OLD.updated_at, OLD.updated_at, (SELECT deletions FROM {marks} WHERE id = 1), CASE WHEN NOT EXISTS (SELECT 1 FROM {instances} AS i WHERE i.provider = OLD.provider AND i.provider_sandbox_id = OLD.provider_sandbox_id) AND NOT EXISTS (SELECT 1 FROM {leaks} AS l WHERE l.provider = OLD.provider AND l.provider_sandbox_id = OLD.provider_sandbox_id) THEN -OLD.updated_at END WHERE OLD.provider IS NOT NEW.provider OR OLD.provider_sandbox_id IS NOT NEW.provider_sandbox_id ON CONFLICT (provider, provider_sandbox_id) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen), deleted_seq = excluded.deleted_seq, lookup_at = CASE WHEN excluded.lookup_at IS NOT NULL THEN -max(last_seen, excluded.last_seen) END; INSERT INTO {registry} (provider, provider_sandbox_id, sandbox_key, first_seen, last_seen) VALUES (NEW.provider, NEW.provider_sandbox_id, NEW.sandbox_key, NEW.updated_at, NEW.updated_at) ON CONFLICT (provider, provider_sandbox_id) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen), sandbox_key = excluded.sandbox_key, lookup_at = NULL; END;
CREATE TRIGGER {registry}_on_delete AFTER DELETE ON {instances} BEGIN UPDATE {marks} SET deletions = deletions + 1 WHERE id = 1; INSERT INTO {registry} (provider, provider_sandbox_id, sandbox_key, first_seen, last_seen, deleted_seq, lookup_at) VALUES (OLD.provider, OLD.provider_sandbox_id, OLD.sandbox_key, OLD.updated_at, max(OLD.updated_at, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)), (SELECT deletions FROM {marks} WHERE id = 1), CASE WHEN NOT EXISTS (SELECT 1 FROM {instances} AS i WHERE i.provider = OLD.provider AND i.provider_sandbox_id = OLD.provider_sandbox_id) AND NOT EXISTS (SELECT 1 FROM {leaks} AS l WHERE l.provider = OLD.provider AND l.provider_sandbox_id = OLD.provider_sandbox_id) THEN -max(OLD.updated_at, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)) END) ON CONFLICT (provider, provider_sandbox_id) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen), deleted_seq = excluded.deleted_seq, lookup_at = CASE WHEN excluded.lookup_at IS NOT NULL THEN -max(last_seen, excluded.last_seen) END; END;
-- A leak entry covers its sandbox (the ledger retries it, and its resolve
-- confirms the destroy): off the queue.
CREATE TRIGGER {registry}_on_leak AFTER INSERT ON {leaks} BEGIN UPDATE {registry} SET lookup_at = NULL WHERE provider = NEW.provider AND provider_sandbox_id = NEW.provider_sandbox_id AND lookup_at IS NOT NULL; END;
-- A pass asks for a provider's due leaks: found by due time, not by reading
-- the whole ledger (ordered by id among the due ones only).
CREATE INDEX {leaks}_due ON {leaks} (provider, next_attempt_at);
