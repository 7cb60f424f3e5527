-- The job's role, reconcile, may read the application's effect table, insert
-- only compensation rows and update only their outcome columns. Run this
-- after `reconcile migrate` as a superuser, or as a member of the roles that
-- own effect and the job's tables, with psql -v ON_ERROR_STOP=1 -f grants.sql;
-- running it again changes nothing.
BEGIN;

GRANT USAGE ON SCHEMA public TO reconcile;

-- The job's own tables. It deletes nothing of them but the keys of
-- effect_pending that have a state, and the rows of effect_new below the
-- scope's horizon, through the owner's effect_new_forget() (migration 019).
GRANT SELECT, INSERT, UPDATE ON claim, run, source, effect_state, escalation, scope_mark TO reconcile;
GRANT SELECT, INSERT ON orphan, evidence, evidence_detail, evidence_loose, rejected_row, finding, resolution TO reconcile;
GRANT SELECT, INSERT, DELETE ON effect_pending TO reconcile;
GRANT SELECT ON schema_migration, deferred_index, effect_new, effect_renamed TO reconcile;
GRANT USAGE ON SEQUENCE orphan_id_seq, source_id_seq, resolution_id_seq TO reconcile;

-- The application's ledger: read it, confirm its rows, add compensations.
GRANT SELECT, INSERT ON effect TO reconcile;
GRANT UPDATE (status, external_id, response, confirmed_at) ON effect TO reconcile;

-- Row-level security binds every role but the table's owner. effect_rows
-- keeps every row open to every role, as before; effect_reconcile_insert
-- then lets reconcile insert only a compensation: an attempted refund at
-- depth 1 under an application effect of the same run and provider, keyed
-- <parent key>:compensate:<transaction id>.
ALTER TABLE effect ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS effect_rows ON effect;
CREATE POLICY effect_rows ON effect USING (true) WITH CHECK (true);
DROP POLICY IF EXISTS effect_reconcile_insert ON effect;
CREATE POLICY effect_reconcile_insert ON effect AS RESTRICTIVE FOR INSERT TO reconcile
  WITH CHECK (step = 'compensate' AND depth = 1 AND parent_key IS NOT NULL
    AND starts_with(key, parent_key || ':compensate:')
    AND status = 'attempted' AND external_id IS NULL AND response IS NULL AND confirmed_at IS NULL
    AND EXISTS (SELECT 1 FROM effect p
                WHERE p.key = effect.parent_key AND p.depth = 0 AND p.run_id = effect.run_id AND p.provider = effect.provider));

-- Runs whose partitions are distributed (run --distribute, reconcile
-- worker): the staged partitions, which a run removes when it ends, and
-- River's tables, whose jobs hand them out.
GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON stage_effect, stage_record, stage_partition, stage_result TO reconcile;
GRANT SELECT, INSERT, UPDATE, DELETE ON river_job, river_leader, river_queue, river_notification TO reconcile;
GRANT SELECT ON river_migration TO reconcile;
GRANT USAGE ON SEQUENCE river_job_id_seq, river_notification_id_seq TO reconcile;

-- The job stages rows in temporary tables: it needs TEMPORARY on the
-- database, which PUBLIC has unless it was revoked.
COMMIT;
