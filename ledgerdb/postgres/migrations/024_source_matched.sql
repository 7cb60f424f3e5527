-- source.run_id is the run that matched the source first and reported
-- what it holds; NULL while no run has: a source only ingested (reconcile
-- ingest), or whose run died before recording its findings, is new to the
-- next run given it, which reports its unexpected transactions and the
-- effects its new transactions name. Before this the column was never
-- written, and a run given a source in the manifest took it for matched:
-- every source already here is taken for matched, as it was.
UPDATE source SET run_id = '(before migration 024)' WHERE run_id IS NULL;
