-- What people read of a record and no matching does (its description,
-- metadata and raw row) leaves the evidence table for a table of its own,
-- keyed by the record's place in its source: these columns were two thirds
-- of every evidence row's bytes. A source ingested on its own keeps every
-- record's details; one that its run ingests and matches at once keeps
-- those of the records that the run's findings name
-- (ledgerdb/internal/driver/details.go). Every detail already stored is
-- kept.
CREATE TABLE evidence_detail (
  source_id   INTEGER NOT NULL REFERENCES source (id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL,
  description TEXT NOT NULL,
  metadata    TEXT,
  raw         TEXT NOT NULL,
  PRIMARY KEY (source_id, seq)
);
INSERT INTO evidence_detail SELECT source_id, seq, description, metadata, raw FROM evidence;
ALTER TABLE evidence DROP COLUMN description;
ALTER TABLE evidence DROP COLUMN metadata;
ALTER TABLE evidence DROP COLUMN raw;
