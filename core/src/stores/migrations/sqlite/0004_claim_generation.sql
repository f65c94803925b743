-- Version 4: a generation on every leak claim, the fence of its writes.
-- Placeholders: {leaks}, {registry} (a plain name). Statements end with `;` at a line end.
--
-- Every claim (claimLeaks, dueLeaks with a lease) bumps `claim` and hands
-- the new value out with the entry; resolve, defer and a retry failure then
-- write only `WHERE claim` is still that value. A holder whose lease ran out
-- and whose entry another retrier took can no longer release, resolve or
-- overwrite that holder's claim, whatever its clock says.
ALTER TABLE {leaks} ADD COLUMN claim INTEGER NOT NULL DEFAULT 0;
--
-- `resolved_at` (epoch milliseconds): when a leak entry of this sandbox was
-- last resolved (its destroy confirmed). A sweep spares what was resolved
-- within its grace, as it spares what the audit log says a pass destroyed:
-- a listing lags, and retryLeaks writes no audit row.
ALTER TABLE {registry} ADD COLUMN resolved_at INTEGER;
