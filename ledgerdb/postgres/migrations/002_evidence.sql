-- The manifest of ingested sources: content already ingested (same hash,
-- or same S3 ETag) is not ingested again. hash is NULL while a source is
-- being written; it is set in the same transaction, last.
CREATE TABLE source (
  id          bigserial PRIMARY KEY,
  hash        text UNIQUE,
  uri         text NOT NULL,
  etag        text,
  bytes       bigint NOT NULL DEFAULT 0,
  format      text NOT NULL DEFAULT '',
  row_count      integer NOT NULL DEFAULT 0,
  evidence_count integer NOT NULL DEFAULT 0,
  rejected_count integer NOT NULL DEFAULT 0,
  ignored_count  integer NOT NULL DEFAULT 0,
  run_id      text,
  ingested_at timestamptz NOT NULL
);
CREATE INDEX source_etag ON source (etag) WHERE etag IS NOT NULL;

-- One row per evidence record: a provider's account of one transaction.
CREATE TABLE evidence (
  source_id         bigint NOT NULL REFERENCES source (id) ON DELETE CASCADE,
  seq               integer NOT NULL,
  line              integer NOT NULL,
  provider          text NOT NULL,
  tx_id             text NOT NULL,
  kind              text NOT NULL,
  raw_kind          text NOT NULL,
  amount_minor      bigint NOT NULL,
  currency          text NOT NULL,
  fee_minor         bigint NOT NULL,
  occurred_at       timestamptz,
  pending           boolean NOT NULL,
  failed            boolean NOT NULL,
  effect_key        text NOT NULL,
  parent_effect_key text NOT NULL,
  payment_intent    text NOT NULL,
  parent_tx_id      text NOT NULL,
  description       text NOT NULL,
  metadata          jsonb,
  raw               text NOT NULL,
  PRIMARY KEY (source_id, seq)
);

-- Input rows that could not become evidence: kept, counted and reported.
CREATE TABLE rejected_row (
  source_id bigint NOT NULL REFERENCES source (id) ON DELETE CASCADE,
  seq       integer NOT NULL,
  line      integer NOT NULL,
  reason    text NOT NULL,
  raw       text NOT NULL,
  PRIMARY KEY (source_id, seq)
);
