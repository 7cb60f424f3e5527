-- name: ClaimGet :one
-- ClaimGet reads the claim on key.
SELECT key, owner, fence, state, lease_until, result, error, claimed_at, settled_at FROM claim WHERE key = sqlc.arg(key);

-- name: ClaimGetMany :many
-- ClaimGetMany reads the claims on keys, one JSON array of them: one
-- parameter however many keys there are.
SELECT key, owner, fence, state, lease_until, result, error, claimed_at, settled_at FROM claim
WHERE key IN (SELECT value FROM json_each(sqlc.arg(keys)));

-- name: ClaimListByEffect :many
-- ClaimListByEffect reads the claims on an effect's actions: the key itself
-- and every key derived from it (key:...), in key order. ':' sorts just
-- before ';' in SQLite's binary collation, so the derived keys are one range.
SELECT key, owner, fence, state, lease_until, result, error, claimed_at, settled_at FROM claim
WHERE (key = sqlc.arg(effect_key) OR (key > sqlc.arg(effect_key) || ':' AND key < sqlc.arg(effect_key) || ';'))
ORDER BY key;

-- name: ClaimAcquireUpsert :one
-- ClaimAcquireUpsert inserts the first claim on key, or takes over a failed
-- claim or an expired lease with fence + 1; it returns no row when the
-- claim is live or done.
INSERT INTO claim (key, owner, fence, state, lease_until, claimed_at)
VALUES (sqlc.arg(key), sqlc.arg(owner), 1, 'held', sqlc.narg(lease_until), sqlc.arg(claimed_at))
ON CONFLICT (key) DO UPDATE
SET owner = excluded.owner, fence = claim.fence + 1, state = 'held',
    lease_until = excluded.lease_until, claimed_at = excluded.claimed_at,
    result = NULL, error = NULL, settled_at = NULL
WHERE claim.state = 'failed'
   OR (claim.state = 'held' AND claim.lease_until IS NOT NULL AND claim.lease_until <= excluded.claimed_at)
RETURNING key, owner, fence, state, lease_until, result, error, claimed_at, settled_at;

-- name: ClaimRenewHeld :one
-- ClaimRenewHeld extends the lease of a claim held under fence; it returns
-- no row when the claim is not held under it.
UPDATE claim SET lease_until = sqlc.narg(lease_until)
WHERE key = sqlc.arg(key) AND fence = sqlc.arg(fence) AND state = 'held'
RETURNING key, owner, fence, state, lease_until, result, error, claimed_at, settled_at;

-- name: ClaimSettleHeld :one
-- ClaimSettleHeld completes or fails a claim held under fence; it returns
-- no row when the claim is not held under it.
UPDATE claim SET state = sqlc.arg(state), result = sqlc.narg(result), error = sqlc.narg(error),
    settled_at = sqlc.arg(settled_at), lease_until = NULL
WHERE key = sqlc.arg(key) AND fence = sqlc.arg(fence) AND state = 'held'
RETURNING key, owner, fence, state, lease_until, result, error, claimed_at, settled_at;

-- name: OrphanInsert :one
-- OrphanInsert records the effect of an owner that had lost its claim, and
-- returns its id.
INSERT INTO orphan (key, stale_fence, stale_owner, stale_result, current_fence, current_owner, current_state, current_result, recorded_at)
VALUES (sqlc.arg(key), sqlc.arg(stale_fence), sqlc.arg(stale_owner), sqlc.narg(stale_result), sqlc.arg(current_fence),
    sqlc.arg(current_owner), sqlc.arg(current_state), sqlc.narg(current_result), sqlc.arg(recorded_at))
RETURNING id;

-- name: OrphanList :many
-- OrphanList reads every orphan, oldest first.
SELECT id, key, stale_fence, stale_owner, stale_result, current_fence, current_owner, current_state, current_result, recorded_at
FROM orphan ORDER BY id;
