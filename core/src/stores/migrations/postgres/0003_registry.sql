-- Version 3: the registry of every sandbox an instance record named.
-- Placeholders: {instances}, {registry}, {register_fn} (schema-qualified,
-- quoted) and {register_trigger} (quoted). Statements end with `;` at a line
-- end (the trigger function is written on one line for that).
--
-- The orphan sweep takes a listed sandbox without an owner label for ours
-- only when the registry names it: TanStack's providers create sandboxes
-- unlabelled, and a destroy they swallowed leaves one running after its
-- record is gone. `last_seen` (epoch milliseconds, the database clock on
-- delete) is when a record naming it was last written, or deleted; a pass
-- counts rows seen within its registry retention (default 30 days). Keyed
-- by the sandbox's SHA-256 as the ledger is.
CREATE TABLE {registry} (
  sandbox_hash BYTEA PRIMARY KEY,
  provider TEXT NOT NULL,
  provider_sandbox_id TEXT NOT NULL,
  sandbox_key TEXT NOT NULL,
  first_seen BIGINT NOT NULL,
  last_seen BIGINT NOT NULL
);
CREATE INDEX ON {registry} (provider, last_seen);
-- Records written before version 3 register as last seen at their update.
INSERT INTO {registry} AS r (sandbox_hash, provider, provider_sandbox_id, sandbox_key, first_seen, last_seen) SELECT sha256(convert_to(length(provider)::text || ':' || provider || provider_sandbox_id, 'UTF8')), provider, provider_sandbox_id, sandbox_key, updated_at, updated_at FROM {instances} ON CONFLICT (sandbox_hash) DO UPDATE SET last_seen = GREATEST(r.last_seen, excluded.last_seen);
-- A trigger, so that every write path (upsert, delete, a delete that records
-- a leak, idle expiry), on any host, registers without a statement of its own.
CREATE FUNCTION {register_fn}() RETURNS trigger LANGUAGE plpgsql AS $register$ DECLARE rec RECORD; seen BIGINT; BEGIN IF TG_OP = 'DELETE' THEN rec := OLD; seen := GREATEST(OLD.updated_at, (extract(epoch FROM clock_timestamp()) * 1000)::bigint); ELSE rec := NEW; seen := NEW.updated_at; END IF; INSERT INTO {registry} AS r (sandbox_hash, provider, provider_sandbox_id, sandbox_key, first_seen, last_seen) VALUES (sha256(convert_to(length(rec.provider)::text || ':' || rec.provider || rec.provider_sandbox_id, 'UTF8')), rec.provider, rec.provider_sandbox_id, rec.sandbox_key, rec.updated_at, seen) ON CONFLICT (sandbox_hash) DO UPDATE SET last_seen = GREATEST(r.last_seen, excluded.last_seen), sandbox_key = CASE WHEN TG_OP = 'DELETE' THEN r.sandbox_key ELSE excluded.sandbox_key END; RETURN NULL; END $register$;
CREATE TRIGGER {register_trigger} AFTER INSERT OR UPDATE OR DELETE ON {instances} FOR EACH ROW EXECUTE FUNCTION {register_fn}();
