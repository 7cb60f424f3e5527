-- name: SourceFind :one
-- The first source with this hash, or this ETag; empty ones match nothing.
SELECT id, hash, uri, etag, bytes, format, row_count, evidence_count, rejected_count, ignored_count, run_id, ingested_at, sorted
FROM source
WHERE (hash = sqlc.arg(hash)::text AND sqlc.arg(hash) <> '') OR (etag = sqlc.arg(etag)::text AND sqlc.arg(etag) <> '')
ORDER BY id LIMIT 1;

-- name: SourceGet :one
SELECT id, hash, uri, etag, bytes, format, row_count, evidence_count, rejected_count, ignored_count, run_id, ingested_at, sorted
FROM source WHERE id = sqlc.arg(id);

-- name: SourceList :many
SELECT id, hash, uri, etag, bytes, format, row_count, evidence_count, rejected_count, ignored_count, run_id, ingested_at, sorted
FROM source ORDER BY id;

-- name: RejectedListBySource :many
-- The first max_rows rejected rows of a source, in order; all when
-- max_rows is 0.
SELECT line, reason, raw FROM rejected_row WHERE source_id = sqlc.arg(source_id) ORDER BY seq
LIMIT nullif(sqlc.arg(max_rows)::bigint, 0);

-- name: EvidenceListBySource :many
SELECT sqlc.embed(ev), src.uri, coalesce(src.hash, '') AS source_hash, coalesce(d.description, '') AS description, d.metadata, coalesce(d.raw, '') AS raw
FROM evidence ev JOIN source src ON src.id = ev.source_id
LEFT JOIN evidence_detail d ON d.source_id = ev.source_id AND d.seq = ev.seq
WHERE ev.source_id = sqlc.arg(source_id)
ORDER BY ev.source_id, ev.seq;

-- name: EvidenceListLinked :many
-- The evidence outside exclude_sources that names one of keys as its
-- effect or its parent's, or one of ids as its transaction, payment
-- intent or parent transaction. A record naming a key is found through
-- the effect's external id, or one it had, as its transaction or payment
-- intent, or among the loose records, or by key in a source not sorted
-- yet (migration 022); a record naming a parent among the loose records
-- (migration 023), or in a source not sorted yet. A record may come more
-- than once, one after the other. Each comparison names the "C"
-- collation, the lookup indexes' (migration 013).
SELECT sqlc.embed(ev), src.uri, coalesce(src.hash, '') AS source_hash, coalesce(d.description, '') AS description, d.metadata, coalesce(d.raw, '') AS raw
FROM evidence ev JOIN source src ON src.id = ev.source_id
LEFT JOIN evidence_detail d ON d.source_id = ev.source_id AND d.seq = ev.seq
WHERE NOT ev.source_id = ANY(sqlc.arg(exclude_sources)::bigint[]) AND (
  (ev.tx_id <> '' AND ev.tx_id COLLATE "C" = ANY(sqlc.arg(ids)::text[]))
  OR (ev.payment_intent <> '' AND ev.payment_intent COLLATE "C" = ANY(sqlc.arg(ids)::text[]))
  OR (ev.effect_key = ANY(sqlc.arg(keys)::text[]) AND (ev.tx_id COLLATE "C" = ANY(ARRAY(SELECT e.external_id FROM effect e
      WHERE e.key = ANY(sqlc.arg(keys)::text[]) AND e.external_id <> '' UNION ALL SELECT r.external_id FROM effect_renamed r
      WHERE r.key COLLATE "C" = ANY(sqlc.arg(keys)::text[])))
    OR ev.payment_intent COLLATE "C" = ANY(ARRAY(SELECT e.external_id FROM effect e
      WHERE e.key = ANY(sqlc.arg(keys)::text[]) AND e.external_id <> '' UNION ALL SELECT r.external_id FROM effect_renamed r
      WHERE r.key COLLATE "C" = ANY(sqlc.arg(keys)::text[]))))))
UNION ALL
SELECT ev.*, src.uri, coalesce(src.hash, '') AS source_hash, coalesce(d.description, '') AS description, d.metadata, coalesce(d.raw, '') AS raw
FROM evidence ev JOIN source src ON src.id = ev.source_id
LEFT JOIN evidence_detail d ON d.source_id = ev.source_id AND d.seq = ev.seq
WHERE EXISTS (SELECT 1 FROM source s WHERE NOT s.sorted AND NOT s.id = ANY(sqlc.arg(exclude_sources)::bigint[])) -- mostly none: then this part is not run at all
  AND ev.source_id = ANY(ARRAY(SELECT s.id FROM source s WHERE NOT s.sorted AND NOT s.id = ANY(sqlc.arg(exclude_sources)::bigint[])))
  AND (ev.effect_key = ANY(sqlc.arg(keys)::text[]) OR ev.parent_effect_key = ANY(sqlc.arg(keys)::text[]) OR ev.parent_tx_id = ANY(sqlc.arg(ids)::text[]))
UNION ALL
SELECT l.*, src.uri, coalesce(src.hash, '') AS source_hash, coalesce(d.description, '') AS description, d.metadata, coalesce(d.raw, '') AS raw
FROM evidence_loose l JOIN source src ON src.id = l.source_id
LEFT JOIN evidence_detail d ON d.source_id = l.source_id AND d.seq = l.seq
WHERE NOT l.source_id = ANY(sqlc.arg(exclude_sources)::bigint[]) AND (l.effect_key COLLATE "C" = ANY(sqlc.arg(keys)::text[])
  OR (l.parent_effect_key <> '' AND l.parent_effect_key COLLATE "C" = ANY(sqlc.arg(keys)::text[]))
  OR (l.parent_tx_id <> '' AND l.parent_tx_id COLLATE "C" = ANY(sqlc.arg(ids)::text[])))
ORDER BY 1, 2;
