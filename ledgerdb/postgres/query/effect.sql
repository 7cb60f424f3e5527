-- name: EffectGet :one
SELECT *
FROM effect WHERE key = sqlc.arg(key);

-- name: EffectGetForUpdate :one
SELECT *
FROM effect WHERE key = sqlc.arg(key) FOR UPDATE;

-- name: EffectRecordInsert :one
-- Inserts an attempted effect. No row when the key exists.
INSERT INTO effect (key, run_id, step, provider, status, request, created_at, parent_key, depth)
VALUES (sqlc.arg(key), sqlc.arg(run_id), sqlc.arg(step), sqlc.arg(provider), 'attempted', sqlc.arg(request)::text::jsonb,
  sqlc.arg(created_at), sqlc.narg(parent_key), sqlc.arg(depth))
ON CONFLICT (key) DO NOTHING
RETURNING *;

-- name: EffectConfirmUpdate :one
-- Confirms an attempted effect. No row when it is not attempted.
UPDATE effect SET status = 'confirmed', external_id = sqlc.arg(external_id)::text, response = sqlc.narg(response)::text::jsonb,
  confirmed_at = sqlc.arg(confirmed_at)::timestamptz
WHERE key = sqlc.arg(key) AND status = 'attempted'
RETURNING *;

-- name: EffectConfirmIfAttempted :exec
-- Confirms an attempted effect, and leaves any other as it is.
UPDATE effect SET status = 'confirmed', external_id = sqlc.arg(external_id)::text, response = sqlc.narg(response)::text::jsonb,
  confirmed_at = sqlc.arg(confirmed_at)::timestamptz
WHERE key = sqlc.arg(key) AND status = 'attempted';

-- name: EffectAbandonUpdate :one
-- Abandons an attempted effect. No row when it is not attempted.
UPDATE effect SET status = 'abandoned' WHERE key = sqlc.arg(key) AND status = 'attempted'
RETURNING *;

-- name: EffectResolveAbandon :one
UPDATE effect SET status = 'abandoned' WHERE key = sqlc.arg(key)
RETURNING *;

-- name: EffectResolveConfirm :one
UPDATE effect SET status = 'confirmed', external_id = sqlc.arg(external_id)::text, confirmed_at = sqlc.arg(confirmed_at)::timestamptz
WHERE key = sqlc.arg(key)
RETURNING *;

-- name: EffectStateGetMany :many
-- The keys are joined, each one probe of the index: as key = ANY(keys),
-- the planner read every state for a second night's 11k compensation
-- keys, at a cost that grew with the ledger (0.15 s at 1.1M effects), not
-- with the keys (0.02 s warm, 0.16 s cold).
SELECT key, class, final, run_id, classified_at, since FROM effect_state WHERE key IN (SELECT unnest(sqlc.arg(keys)::text[]));

-- name: EffectStateResolveUpsert :exec
-- Gives a resolved effect its final state, classified and in its class
-- since at.
INSERT INTO effect_state (key, class, final, run_id, classified_at, since)
VALUES (sqlc.arg(key), sqlc.arg(class), true, '', sqlc.arg(at), sqlc.arg(at))
ON CONFLICT (key) DO UPDATE SET class = EXCLUDED.class, final = true, classified_at = EXCLUDED.classified_at, since = EXCLUDED.since;
