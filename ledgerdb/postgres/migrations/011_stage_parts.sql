-- The records and effects of a staged run are placed by the number of
-- their partition, which the run computes itself (matcher.Router), no
-- longer by key ranges the ledger computed. Staged rows live only while
-- their run does: a distributed run in progress while this migrates fails.
TRUNCATE stage_partition, stage_effect, stage_record, stage_result;
-- An effect's kind is the matcher's to know (matcher.ExpectedKind).
ALTER TABLE stage_effect DROP COLUMN conflicts, DROP COLUMN kind, ADD COLUMN part int NOT NULL;
DROP INDEX stage_effect_key;
CREATE INDEX stage_effect_part ON stage_effect (run_id, part);
-- A staged record names where it was read (uri, and whether that is a
-- webhook dump) rather than its source's id.
ALTER TABLE stage_record DROP COLUMN pkey, DROP COLUMN linked, DROP COLUMN source_id, ADD COLUMN part int NOT NULL,
  ADD COLUMN uri text NOT NULL, ADD COLUMN webhook boolean NOT NULL;
CREATE INDEX stage_record_part ON stage_record (run_id, part);
ALTER TABLE stage_partition DROP COLUMN lo, DROP COLUMN hi;
