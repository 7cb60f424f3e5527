-- The manifest of ingested sources: content already ingested (same hash,
-- or same S3 ETag) is not ingested again. hash is NULL while a source is
-- being written; it is set in the same transaction, last.
CREATE TABLE source (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  hash        TEXT UNIQUE,
  uri         TEXT NOT NULL,
  etag        TEXT,
  bytes       INTEGER NOT NULL DEFAULT 0,
  format      TEXT NOT NULL DEFAULT '',
  row_count      INTEGER NOT NULL DEFAULT 0,
  evidence_count INTEGER NOT NULL DEFAULT 0,
  rejected_count INTEGER NOT NULL DEFAULT 0,
  ignored_count  INTEGER NOT NULL DEFAULT 0,
  run_id      TEXT,
  ingested_at TEXT NOT NULL
);
CREATE INDEX source_etag ON source (etag) WHERE etag IS NOT NULL;

-- One row per evidence record: a provider's account of one transaction.
CREATE TABLE evidence (
  source_id         INTEGER NOT NULL REFERENCES source (id) ON DELETE CASCADE,
  seq               INTEGER NOT NULL,
  line              INTEGER NOT NULL,
  provider          TEXT NOT NULL,
  tx_id             TEXT NOT NULL,
  kind              TEXT NOT NULL,
  raw_kind          TEXT NOT NULL,
  amount_minor      INTEGER NOT NULL,
  currency          TEXT NOT NULL,
  fee_minor         INTEGER NOT NULL,
  occurred_at       TEXT,
  pending           INTEGER NOT NULL,
  failed            INTEGER NOT NULL,
  effect_key        TEXT NOT NULL,
  parent_effect_key TEXT NOT NULL,
  payment_intent    TEXT NOT NULL,
  parent_tx_id      TEXT NOT NULL,
  description       TEXT NOT NULL,
  metadata          TEXT,
  raw               TEXT NOT NULL,
  PRIMARY KEY (source_id, seq)
);

-- Input rows that could not become evidence: kept, counted and reported.
CREATE TABLE rejected_row (
  source_id INTEGER NOT NULL REFERENCES source (id) ON DELETE CASCADE,
  seq       INTEGER NOT NULL,
  line      INTEGER NOT NULL,
  reason    TEXT NOT NULL,
  raw       TEXT NOT NULL,
  PRIMARY KEY (source_id, seq)
);
