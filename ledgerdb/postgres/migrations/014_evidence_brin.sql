-- evidence is written a source at a time, in the order of its seq, and
-- read by source (a run's records, a source's rows) or through its lookup
-- indexes; nothing looks a row up by (source_id, seq), and the writer
-- numbers a source's rows itself, in the one transaction that writes them
-- all. The primary key doubled the cost of an unindexed insert (1.38M
-- records copied into a copy of the table: 2.6 s without any index, 5.1 s
-- with the key alone; with the lookup indexes, on a busy machine, 10.9 and
-- 14.0 s with this index against 12.1 and 21.4 s with the key), for a
-- uniqueness nothing else could break. A
-- BRIN index over source_id keeps the reads by source to the pages of
-- that source, for a few pages of index, once the pages are summarized:
-- autovacuum does it as each range of pages fills (autosummarize), and a
-- run whose role owns the table before it reads by source.
ALTER TABLE evidence DROP CONSTRAINT evidence_pkey;
CREATE INDEX evidence_source ON evidence USING brin (source_id) WITH (autosummarize = on);
