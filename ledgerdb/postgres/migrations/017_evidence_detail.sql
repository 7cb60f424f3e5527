-- What people read of a record and no matching does (its description,
-- metadata and raw row) leaves the evidence table for a table of its own,
-- keyed by the record's place in its source. These columns were two thirds
-- of every evidence row's bytes, and PostgreSQL's cost of a COPY follows
-- its bytes: 1.38M records of a 1M night took 4.4 s as stored and 2.0 to
-- 2.3 s without them (psql, each alone); the five lookup indexes, whose
-- builds read the whole table, 2.2 s instead of 2.7 s. A source ingested
-- on its own keeps every record's details; one that its run ingests and
-- matches at once keeps those of the records that the run's findings name
-- (ledgerdb/internal/driver/details.go). Every detail already stored is
-- kept.
CREATE TABLE evidence_detail (
  source_id   bigint NOT NULL,
  seq         integer NOT NULL,
  description text NOT NULL,
  metadata    json,
  raw         text NOT NULL,
  PRIMARY KEY (source_id, seq)
);
INSERT INTO evidence_detail SELECT source_id, seq, description, metadata, raw FROM evidence;
ALTER TABLE evidence DROP COLUMN description, DROP COLUMN metadata, DROP COLUMN raw;
