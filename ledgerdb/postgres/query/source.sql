-- name: SourceFind :one
-- The first source with this hash, or this ETag; empty ones match nothing.
SELECT id, hash, uri, etag, bytes, format, row_count, evidence_count, rejected_count, ignored_count, run_id, ingested_at
FROM source
WHERE (hash = sqlc.arg(hash)::text AND sqlc.arg(hash) <> '') OR (etag = sqlc.arg(etag)::text AND sqlc.arg(etag) <> '')
ORDER BY id LIMIT 1;

-- name: SourceGet :one
SELECT id, hash, uri, etag, bytes, format, row_count, evidence_count, rejected_count, ignored_count, run_id, ingested_at
FROM source WHERE id = sqlc.arg(id);

-- name: SourceList :many
SELECT id, hash, uri, etag, bytes, format, row_count, evidence_count, rejected_count, ignored_count, run_id, ingested_at
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
-- intent or parent transaction. Each comparison names the "C" collation,
-- the lookup indexes' (migration 013).
SELECT sqlc.embed(ev), src.uri, coalesce(src.hash, '') AS source_hash, coalesce(d.description, '') AS description, d.metadata, coalesce(d.raw, '') AS raw
FROM evidence ev JOIN source src ON src.id = ev.source_id
LEFT JOIN evidence_detail d ON d.source_id = ev.source_id AND d.seq = ev.seq
WHERE NOT ev.source_id = ANY(sqlc.arg(exclude_sources)::bigint[]) AND (
  (ev.effect_key <> '' AND ev.effect_key COLLATE "C" = ANY(sqlc.arg(keys)::text[]))
  OR (ev.parent_effect_key <> '' AND ev.parent_effect_key COLLATE "C" = ANY(sqlc.arg(keys)::text[]))
  OR (ev.tx_id <> '' AND ev.tx_id COLLATE "C" = ANY(sqlc.arg(ids)::text[]))
  OR (ev.payment_intent <> '' AND ev.payment_intent COLLATE "C" = ANY(sqlc.arg(ids)::text[]))
  OR (ev.parent_tx_id <> '' AND ev.parent_tx_id COLLATE "C" = ANY(sqlc.arg(ids)::text[])))
ORDER BY ev.source_id, ev.seq;
