-- A large ingest (a first night, a backfill: more new records than the
-- ledger holds) drops the evidence table's indexes and builds them again
-- once its rows are in, for sorting every row once costs a fraction of
-- keeping each index up row by row. Their definitions wait here in
-- between, so that a process that dies before building them leaves them
-- to the next run, or to migrate, to build.
CREATE TABLE deferred_index (
  name        TEXT PRIMARY KEY,
  definition  TEXT NOT NULL,
  deferred_at TEXT NOT NULL
);
