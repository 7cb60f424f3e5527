-- name: SourceFind :one
-- SourceFind reads the first manifest entry with hash, or with etag; an
-- empty argument matches nothing.
SELECT id, hash, uri, etag, bytes, format, row_count, evidence_count, rejected_count, ignored_count, run_id, ingested_at
FROM source
WHERE (hash = sqlc.arg(hash) AND sqlc.arg(hash) <> '') OR (etag = sqlc.arg(etag) AND sqlc.arg(etag) <> '')
ORDER BY id LIMIT 1;

-- name: SourceGet :one
-- SourceGet reads the manifest entry with id.
SELECT id, hash, uri, etag, bytes, format, row_count, evidence_count, rejected_count, ignored_count, run_id, ingested_at
FROM source WHERE id = sqlc.arg(id);

-- name: SourceList :many
-- SourceList reads the manifest, oldest first.
SELECT id, hash, uri, etag, bytes, format, row_count, evidence_count, rejected_count, ignored_count, run_id, ingested_at
FROM source ORDER BY id;

-- name: RejectedListBySource :many
-- RejectedListBySource reads the first limit rejected rows of a source
-- (all when limit is 0 or less), in order.
SELECT line, reason, raw FROM rejected_row WHERE source_id = sqlc.arg(source_id) ORDER BY seq
LIMIT CASE WHEN sqlc.arg(limit) > 0 THEN sqlc.arg(limit) ELSE -1 END;

-- name: EvidenceListBySource :many
-- EvidenceListBySource reads the evidence of a source in row order, with
-- its provenance.
SELECT sqlc.embed(ev), src.uri, src.hash, coalesce(d.description, '') AS description, d.metadata, coalesce(d.raw, '') AS raw
FROM evidence ev JOIN source src ON src.id = ev.source_id
LEFT JOIN evidence_detail d ON d.source_id = ev.source_id AND d.seq = ev.seq
WHERE ev.source_id = sqlc.arg(source_id)
ORDER BY ev.source_id, ev.seq;

-- name: EvidenceListLinked :many
-- EvidenceListLinked reads the evidence outside exclude_sources that names
-- one of keys (effect keys) or ids (provider ids), in source and row order,
-- with its provenance. The three lists are JSON arrays.
SELECT sqlc.embed(ev), src.uri, src.hash, coalesce(d.description, '') AS description, d.metadata, coalesce(d.raw, '') AS raw
FROM evidence ev JOIN source src ON src.id = ev.source_id
LEFT JOIN evidence_detail d ON d.source_id = ev.source_id AND d.seq = ev.seq
WHERE ev.source_id NOT IN (SELECT value FROM json_each(sqlc.arg(exclude_sources))) AND (
    (ev.effect_key <> '' AND ev.effect_key IN (SELECT value FROM json_each(sqlc.arg(keys))))
    OR (ev.parent_effect_key <> '' AND ev.parent_effect_key IN (SELECT value FROM json_each(sqlc.arg(keys))))
    OR (ev.tx_id <> '' AND ev.tx_id IN (SELECT value FROM json_each(sqlc.arg(ids))))
    OR (ev.payment_intent <> '' AND ev.payment_intent IN (SELECT value FROM json_each(sqlc.arg(ids))))
    OR (ev.parent_tx_id <> '' AND ev.parent_tx_id IN (SELECT value FROM json_each(sqlc.arg(ids)))))
ORDER BY ev.source_id, ev.seq;
