-- A run's result and its findings' transactions and actions are written
-- once and read back whole, never queried inside: json only checks the
-- text, where jsonb converts it into its binary form. Measured on a
-- night's 15 MB result (1M effects): 366 ms into jsonb compressed by pglz,
-- 151 ms into json, 60 ms into json compressed by lz4; on 68,466 findings:
-- 878 ms with jsonb and the foreign key to run, 644 ms with json, 540 ms
-- with json and no foreign key. The job inserts a run's findings only
-- after the run's own row has committed, and no role but the owner may
-- delete a run or a finding (see the grants), as for evidence (migration
-- 010). The result is compressed by lz4 where the server can
-- (PostgreSQL 14 and later, built with lz4).
ALTER TABLE run ALTER COLUMN result TYPE json USING result::json;
ALTER TABLE finding ALTER COLUMN transactions TYPE json USING transactions::json,
  ALTER COLUMN actions TYPE json USING actions::json,
  DROP CONSTRAINT finding_run_id_fkey;
DO $$
BEGIN
  IF current_setting('server_version_num')::int >= 140000 THEN
    EXECUTE 'ALTER TABLE run ALTER COLUMN result SET COMPRESSION lz4';
  END IF;
EXCEPTION WHEN feature_not_supported THEN
  NULL;
END $$;
