-- A record that names a parent (a refund's charge, by the charge's effect
-- key or transaction: 5% of a night's records) is loose too: copied into
-- evidence_loose when its source is sorted, and found there by its
-- parent, whatever its own key. The two indexes of evidence that held
-- every record's parent cost a first night of 1M records 1.1 s of a
-- processor to build (each a read of the whole table for 29k and 39k
-- entries), and each later night one probe for every effect in scope.
CREATE INDEX evidence_loose_parent_effect_key ON evidence_loose ((parent_effect_key COLLATE "C")) WHERE parent_effect_key <> '';
CREATE INDEX evidence_loose_parent_tx_id ON evidence_loose ((parent_tx_id COLLATE "C")) WHERE parent_tx_id <> '';

-- The sorted sources' records with a parent that are not loose already.
INSERT INTO evidence_loose SELECT v.* FROM evidence v
WHERE (v.parent_effect_key <> '' OR v.parent_tx_id <> '') AND v.source_id IN (SELECT id FROM source WHERE sorted)
  AND NOT EXISTS (SELECT 1 FROM evidence_loose l WHERE l.source_id = v.source_id AND l.seq = v.seq);

CREATE OR REPLACE FUNCTION sort_sources(ids bigint[]) RETURNS bigint LANGUAGE sql SECURITY DEFINER AS $$
  WITH s AS (UPDATE source SET sorted = true WHERE id = ANY(ids) AND NOT sorted RETURNING id),
  l AS (INSERT INTO evidence_loose SELECT v.* FROM evidence v
    WHERE v.source_id = ANY(ids) AND v.source_id IN (SELECT id FROM s)
      AND (v.parent_effect_key <> '' OR v.parent_tx_id <> '' OR v.effect_key <> ''
        AND NOT EXISTS (SELECT 1 FROM effect e WHERE e.key = v.effect_key AND e.external_id IN (v.tx_id, v.payment_intent)))
    RETURNING 1)
  SELECT count(*) FROM l
$$;
DO $$ BEGIN
  EXECUTE format('ALTER FUNCTION sort_sources(bigint[]) SET search_path = %I, pg_temp', current_schema());
END $$;

DROP INDEX IF EXISTS evidence_parent_effect_key, evidence_parent_tx_id;
DELETE FROM deferred_index WHERE name IN ('evidence_parent_effect_key', 'evidence_parent_tx_id');
