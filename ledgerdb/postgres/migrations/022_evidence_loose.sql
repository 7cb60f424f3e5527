-- A later night finds an earlier record that names an effect by key
-- through the effect's external id, the record's transaction or payment
-- intent, whenever the two agree: 99% of a night's records. The index of
-- every record's effect_key cost a first night of 1M records 1.1 s of a
-- processor to build (20.7 s at 10M) and each later night its upkeep, for
-- the other 1%. Those, the loose records, are copied whole into
-- evidence_loose, indexed by key, once a run has sorted its sources
-- (source.sorted): in the run's own process, which holds each record
-- beside the effects in scope, or by sort_sources (below) for a source
-- that no run sorted (ingested alone, a run that died, a ledger upgraded),
-- which every run does first. A source not sorted yet is read by key
-- whole (match_sql.go). A record is loose when its key names no effect,
-- or an effect whose external id is neither its transaction nor its
-- payment intent; records of several sources at once may be copied more
-- than once, which a lookup's UNION undoes.
CREATE TABLE evidence_loose (LIKE evidence);
CREATE INDEX evidence_loose_effect_key ON evidence_loose ((effect_key COLLATE "C"));
ALTER TABLE source ADD COLUMN sorted boolean NOT NULL DEFAULT false;

-- An effect's key and external id as they were when they stopped being
-- its own (its external id changed, its key changed, it was deleted):
-- a record sorted as found through that external id is then found through
-- this pair. Written by the triggers below as the owner, for whichever
-- role changes the effect. TRUNCATE leaves no rows to note: every source
-- is sorted again instead.
CREATE TABLE effect_renamed (
  key         text NOT NULL,
  external_id text NOT NULL
);
CREATE INDEX effect_renamed_key ON effect_renamed ((key COLLATE "C"));

CREATE FUNCTION effect_note_renamed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM evidence_loose;
    UPDATE source SET sorted = false WHERE sorted;
  ELSE
    INSERT INTO effect_renamed (key, external_id) VALUES (OLD.key, OLD.external_id);
  END IF;
  RETURN NULL;
END $$;
DO $$ BEGIN
  EXECUTE format('ALTER FUNCTION effect_note_renamed() SET search_path = %I, pg_temp', current_schema());
END $$;
CREATE TRIGGER effect_renamed_update AFTER UPDATE OF key, external_id ON effect FOR EACH ROW
  WHEN (OLD.external_id <> '' AND (NEW.key <> OLD.key OR NEW.external_id IS DISTINCT FROM OLD.external_id))
  EXECUTE FUNCTION effect_note_renamed();
CREATE TRIGGER effect_renamed_delete AFTER DELETE ON effect FOR EACH ROW WHEN (OLD.external_id <> '')
  EXECUTE FUNCTION effect_note_renamed();
CREATE TRIGGER effect_renamed_truncate AFTER TRUNCATE ON effect FOR EACH STATEMENT EXECUTE FUNCTION effect_note_renamed();
ALTER TABLE effect ENABLE ALWAYS TRIGGER effect_renamed_update, ENABLE ALWAYS TRIGGER effect_renamed_delete,
  ENABLE ALWAYS TRIGGER effect_renamed_truncate;

-- sort_sources sorts the sources of ids that are not sorted yet, each
-- once however many runs ask at the same time (the second waits for the
-- first's row lock, then finds it sorted), and returns how many records
-- it copied. Any role may call it; it writes as the owner.
CREATE FUNCTION sort_sources(ids bigint[]) RETURNS bigint LANGUAGE sql SECURITY DEFINER AS $$
  WITH s AS (UPDATE source SET sorted = true WHERE id = ANY(ids) AND NOT sorted RETURNING id),
  l AS (INSERT INTO evidence_loose SELECT v.* FROM evidence v
    WHERE v.source_id = ANY(ids) AND v.source_id IN (SELECT id FROM s) AND v.effect_key <> ''
      AND NOT EXISTS (SELECT 1 FROM effect e WHERE e.key = v.effect_key AND e.external_id IN (v.tx_id, v.payment_intent))
    RETURNING 1)
  SELECT count(*) FROM l
$$;
DO $$ BEGIN
  EXECUTE format('ALTER FUNCTION sort_sources(bigint[]) SET search_path = %I, pg_temp', current_schema());
END $$;

DROP INDEX IF EXISTS evidence_effect_key;
DELETE FROM deferred_index WHERE name = 'evidence_effect_key';
