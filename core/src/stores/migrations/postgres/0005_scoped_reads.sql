-- Version 5: a sweep's store reads follow what it listed, not the store's history.
-- Placeholders: {instances}, {leaks}, {audit}, {registry}, {register_fn},
-- {leak_fn}, {hash_fn} (schema-qualified, quoted) and {leak_trigger} (quoted). Statements
-- end with `;` at a line end (a trigger function is written on one line for that).
--
-- A sweep takes a deletion mark, lists, then asks only about the listed ids
-- (referencedAmong, registeredAmong), each answered on an index; the lookup
-- by id takes its candidates from a queue, one indexed page at a time.
--
-- `deleted_xid`: the transaction id (`pg_current_xact_id()`) that last
-- deleted a record naming this sandbox, or pointed one elsewhere. A sweep's
-- mark is the xmin of its snapshot: every transaction still running then
-- has an xid >= xmin, and every one starting later a greater one, so a
-- deletion not committed when the mark was read has `deleted_xid >= mark`
-- and counts (one committed just before may count too: a sandbox spared
-- once, never one destroyed). No clock is read (PostgreSQL 13 or later:
-- `pg_current_xact_id`, `pg_snapshot_xmin`). 0: deleted before version 5.
ALTER TABLE {registry} ADD COLUMN deleted_xid BIGINT;
-- `lookup_at`: the lookup queue. NULL: not queued (a record or leak entry
-- names it, or it is known gone). Negative: `-last_seen`, never checked
-- since its record went (the most recently deleted first); positive: when a
-- lookup last checked it (epoch milliseconds, the pass's clock).
ALTER TABLE {registry} ADD COLUMN lookup_at BIGINT;
--
-- Every scoped read finds a listed id on an index: the registry and the
-- ledger by their sandbox hash, records and audit rows by the same hash as
-- an expression (a btree entry cannot hold long text; the queries compute
-- it per asked id). Prune's batches take one provider's oldest audit rows.
-- The hash as a function an index may hold: `convert_to` is only STABLE
-- (it looks its conversion up), but to UTF8 it depends on nothing but the
-- database's encoding, fixed for the database's life, so the result is
-- immutable; it is the ledger's and the registry's `sandbox_hash`.
CREATE FUNCTION {hash_fn}(provider TEXT, provider_sandbox_id TEXT) RETURNS BYTEA LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $hash$ SELECT sha256(convert_to(length(provider)::text || ':' || provider || provider_sandbox_id, 'UTF8')) $hash$;
-- Not CREATE INDEX CONCURRENTLY: it cannot run inside a transaction, and
-- every migration runs in one transaction holding the advisory lock, so
-- hosts starting together never see half a schema. Writes to these tables
-- wait while the indexes build (seconds per million rows).
CREATE INDEX ON {instances} ({hash_fn}(provider, provider_sandbox_id));
CREATE INDEX ON {audit} ({hash_fn}(provider, provider_sandbox_id), at);
CREATE INDEX ON {audit} (provider, at);
CREATE INDEX ON {registry} (provider, lookup_at) WHERE lookup_at IS NOT NULL;
-- Sandboxes whose record went before version 5 and whose destroy nobody
-- confirmed join the queue as never checked (one pass over both tables: a
-- hash anti-join on the text beats a million index probes).
UPDATE {registry} AS r SET deleted_xid = 0, lookup_at = -r.last_seen WHERE (r.resolved_at IS NULL OR r.resolved_at < r.last_seen) AND NOT EXISTS (SELECT 1 FROM {instances} AS i WHERE i.provider = r.provider AND i.provider_sandbox_id = r.provider_sandbox_id) AND NOT EXISTS (SELECT 1 FROM {leaks} AS l WHERE l.sandbox_hash = r.sandbox_hash);
-- The registry's trigger of version 3, now also keeping the mark and the
-- queue: a record naming a sandbox takes it off the queue; one that stops
-- naming it (deleted, or pointed elsewhere) marks it deleted and, when no
-- other record and no leak entry names it, queues it. A re-pointed record's
-- old sandbox keeps its last_seen (its record's last write naming it).
-- Two hosts deleting the only two records of one sandbox at once each still
-- see the other's record, so neither queues it (a lookup misses it; listings
-- still find it); a record written while another is deleted can leave its
-- sandbox queued, which the candidates' read skips.
CREATE OR REPLACE FUNCTION {register_fn}() RETURNS trigger LANGUAGE plpgsql AS $register$ DECLARE h BYTEA; seen BIGINT; BEGIN IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND (OLD.provider, OLD.provider_sandbox_id) IS DISTINCT FROM (NEW.provider, NEW.provider_sandbox_id)) THEN h := {hash_fn}(OLD.provider, OLD.provider_sandbox_id); seen := CASE WHEN TG_OP = 'DELETE' THEN GREATEST(OLD.updated_at, (extract(epoch FROM clock_timestamp()) * 1000)::bigint) ELSE OLD.updated_at END; INSERT INTO {registry} AS r (sandbox_hash, provider, provider_sandbox_id, sandbox_key, first_seen, last_seen, deleted_xid, lookup_at) VALUES (h, OLD.provider, OLD.provider_sandbox_id, OLD.sandbox_key, OLD.updated_at, seen, pg_current_xact_id()::text::bigint, CASE WHEN NOT EXISTS (SELECT 1 FROM {instances} AS i WHERE {hash_fn}(i.provider, i.provider_sandbox_id) = h AND i.provider = OLD.provider AND i.provider_sandbox_id = OLD.provider_sandbox_id) AND NOT EXISTS (SELECT 1 FROM {leaks} AS l WHERE l.sandbox_hash = h) THEN -seen END) ON CONFLICT (sandbox_hash) DO UPDATE SET last_seen = GREATEST(r.last_seen, excluded.last_seen), deleted_xid = excluded.deleted_xid, lookup_at = CASE WHEN excluded.lookup_at IS NOT NULL THEN -GREATEST(r.last_seen, excluded.last_seen) END; END IF; IF TG_OP <> 'DELETE' THEN INSERT INTO {registry} AS r (sandbox_hash, provider, provider_sandbox_id, sandbox_key, first_seen, last_seen) VALUES ({hash_fn}(NEW.provider, NEW.provider_sandbox_id), NEW.provider, NEW.provider_sandbox_id, NEW.sandbox_key, NEW.updated_at, NEW.updated_at) ON CONFLICT (sandbox_hash) DO UPDATE SET last_seen = GREATEST(r.last_seen, excluded.last_seen), sandbox_key = excluded.sandbox_key, lookup_at = NULL; END IF; RETURN NULL; END $register$;
-- A leak entry covers its sandbox (the ledger retries it, and its resolve
-- confirms the destroy): off the queue.
CREATE FUNCTION {leak_fn}() RETURNS trigger LANGUAGE plpgsql AS $unqueue$ BEGIN UPDATE {registry} SET lookup_at = NULL WHERE sandbox_hash = NEW.sandbox_hash AND lookup_at IS NOT NULL; RETURN NULL; END $unqueue$;
CREATE TRIGGER {leak_trigger} AFTER INSERT ON {leaks} FOR EACH ROW EXECUTE FUNCTION {leak_fn}();
-- A pass asks for a provider's due leaks: found by due time, not by reading
-- the whole ledger (ordered by id among the due ones only).
CREATE INDEX ON {leaks} (provider, next_attempt_at);
