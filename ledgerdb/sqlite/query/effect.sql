-- name: EffectGet :one
-- EffectGet reads the effect under key.
SELECT key, run_id, step, provider, status, external_id, request, response, created_at, confirmed_at, parent_key, depth
FROM effect WHERE key = sqlc.arg(key);

-- name: EffectInsertAttempt :one
-- EffectInsertAttempt inserts an attempted effect; it returns no row when
-- the key exists.
INSERT INTO effect (key, run_id, step, provider, status, request, created_at, parent_key, depth)
VALUES (sqlc.arg(key), sqlc.arg(run_id), sqlc.arg(step), sqlc.arg(provider), 'attempted', sqlc.arg(request),
    sqlc.arg(created_at), sqlc.narg(parent_key), sqlc.arg(depth))
ON CONFLICT (key) DO NOTHING
RETURNING key, run_id, step, provider, status, external_id, request, response, created_at, confirmed_at, parent_key, depth;

-- name: EffectConfirm :one
-- EffectConfirm confirms an attempted effect; it returns no row when the
-- effect is not attempted.
UPDATE effect SET status = 'confirmed', external_id = sqlc.arg(external_id), response = sqlc.narg(response),
    confirmed_at = sqlc.arg(confirmed_at)
WHERE key = sqlc.arg(key) AND status = 'attempted'
RETURNING key, run_id, step, provider, status, external_id, request, response, created_at, confirmed_at, parent_key, depth;

-- name: EffectConfirmOnSettle :exec
-- EffectConfirmOnSettle is EffectConfirm's write, made with a claim's
-- settle, which reads nothing back.
UPDATE effect SET status = 'confirmed', external_id = sqlc.arg(external_id), response = sqlc.narg(response),
    confirmed_at = sqlc.arg(confirmed_at)
WHERE key = sqlc.arg(key) AND status = 'attempted';

-- name: EffectAbandon :one
-- EffectAbandon abandons an attempted effect; it returns no row when the
-- effect is not attempted.
UPDATE effect SET status = 'abandoned' WHERE key = sqlc.arg(key) AND status = 'attempted'
RETURNING key, run_id, step, provider, status, external_id, request, response, created_at, confirmed_at, parent_key, depth;

-- name: EffectAbandonByResolution :one
-- EffectAbandonByResolution abandons an effect as a person decided.
UPDATE effect SET status = 'abandoned' WHERE key = sqlc.arg(key)
RETURNING key, run_id, step, provider, status, external_id, request, response, created_at, confirmed_at, parent_key, depth;

-- name: EffectConfirmByResolution :one
-- EffectConfirmByResolution confirms an effect as a person decided.
UPDATE effect SET status = 'confirmed', external_id = sqlc.arg(external_id), confirmed_at = sqlc.arg(confirmed_at)
WHERE key = sqlc.arg(key)
RETURNING key, run_id, step, provider, status, external_id, request, response, created_at, confirmed_at, parent_key, depth;

-- name: EffectStateGetMany :many
-- EffectStateGetMany reads the states of keys, one JSON array of them.
SELECT key, class, final, run_id, classified_at, since FROM effect_state
WHERE key IN (SELECT value FROM json_each(sqlc.arg(keys)));

-- name: EffectStateUpsertResolved :exec
-- EffectStateUpsertResolved makes an effect's state final in class, as of
-- at, by a person's decision (no run).
INSERT INTO effect_state (key, class, final, run_id, classified_at, since) VALUES (sqlc.arg(key), sqlc.arg(class), 1, '', sqlc.arg(at), sqlc.arg(at))
ON CONFLICT (key) DO UPDATE SET class = excluded.class, final = 1, classified_at = excluded.classified_at, since = excluded.since;
