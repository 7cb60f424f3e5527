-- A run's scope is every effect that is not abandoned and has no final
-- state. Those whose state is not final are found through
-- effect_state_open; those with none were found by reading every effect
-- (1.15 s of a 100k-effect night on a ledger of 1.1M). The ledger now
-- lists them instead: effect_new holds every effect written, by the
-- triggers below, with the id of the transaction that wrote it, and a run
-- reads it from scope_mark.horizon on, the oldest transaction that the last
-- run's snapshot could not see (every older one had committed or aborted by
-- then, so none is missed); effect_pending holds the effects a run left
-- without a state (out of its scope), which every later run reads again
-- until one gives them a state. scope_mark also names the cluster whose
-- transaction ids it counts: a ledger restored elsewhere, a mark ahead of
-- every transaction, or a trigger turned off, is not trusted, and the run
-- reads every effect
-- (ledgerdb/postgres/match.go). A ledger without a mark is read whole
-- once, as before.
CREATE TABLE effect_new (
  xid xid8 NOT NULL,
  key text NOT NULL
);
CREATE INDEX effect_new_xid ON effect_new (xid);

CREATE TABLE effect_pending (key text PRIMARY KEY);

CREATE TABLE scope_mark (
  one     boolean PRIMARY KEY DEFAULT true CHECK (one),
  system  bigint NOT NULL,
  horizon xid8 NOT NULL
);

-- The triggers fire for whichever role writes an effect, the application's
-- or reconcile's compensations, and write as the owner. An update lists the
-- keys it made and the effects it takes out of abandoned: the ways an
-- effect without a state enters the scope.
CREATE FUNCTION effect_list_new() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO effect_new (xid, key) SELECT pg_current_xact_id(), key FROM new_effect;
  ELSE
    INSERT INTO effect_new (xid, key) SELECT pg_current_xact_id(), n.key FROM new_effect n LEFT JOIN old_effect o ON o.key = n.key
      WHERE o.key IS NULL OR (o.status = 'abandoned' AND n.status <> 'abandoned');
  END IF;
  RETURN NULL;
END $$;
-- Its tables are those of the schema it is made in: a session's temporary
-- table of the same name must not take the list's rows (pg_temp last).
DO $$ BEGIN
  EXECUTE format('ALTER FUNCTION effect_list_new() SET search_path = %I, pg_temp', current_schema());
END $$;
CREATE TRIGGER effect_new_insert AFTER INSERT ON effect REFERENCING NEW TABLE AS new_effect
  FOR EACH STATEMENT EXECUTE FUNCTION effect_list_new();
CREATE TRIGGER effect_new_update AFTER UPDATE ON effect REFERENCING OLD TABLE AS old_effect NEW TABLE AS new_effect
  FOR EACH STATEMENT EXECUTE FUNCTION effect_list_new();
-- Also where rows are applied by logical replication.
ALTER TABLE effect ENABLE ALWAYS TRIGGER effect_new_insert, ENABLE ALWAYS TRIGGER effect_new_update;
