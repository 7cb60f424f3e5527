-- name: ClaimGet :one
SELECT key, owner, fence, state, lease_until, result, error, claimed_at, settled_at
FROM claim WHERE key = sqlc.arg(key);

-- name: ClaimGetForUpdate :one
SELECT key, owner, fence, state, lease_until, result, error, claimed_at, settled_at
FROM claim WHERE key = sqlc.arg(key) FOR UPDATE;

-- name: ClaimGetMany :many
-- The keys are joined, each looked up by index (as EffectStateGetMany).
SELECT key, owner, fence, state, lease_until, result, error, claimed_at, settled_at
FROM claim WHERE key IN (SELECT unnest(sqlc.arg(keys)::text[]));

-- name: ClaimListByEffect :many
SELECT key, owner, fence, state, lease_until, result, error, claimed_at, settled_at
FROM claim WHERE key = sqlc.arg(effect_key) OR key LIKE sqlc.arg(child_pattern) ORDER BY key;

-- name: ClaimAcquireUpsert :one
-- Inserts the first claim on a key, or takes over a failed claim or an
-- expired lease with the next fence. No row when the claim is not to be
-- taken.
INSERT INTO claim (key, owner, fence, state, lease_until, claimed_at)
VALUES (sqlc.arg(key), sqlc.arg(owner), 1, 'held', sqlc.narg(lease_until), sqlc.arg(claimed_at))
ON CONFLICT (key) DO UPDATE
SET owner = EXCLUDED.owner, fence = claim.fence + 1, state = 'held',
    lease_until = EXCLUDED.lease_until, claimed_at = EXCLUDED.claimed_at,
    result = NULL, error = NULL, settled_at = NULL
WHERE claim.state = 'failed'
   OR (claim.state = 'held' AND claim.lease_until IS NOT NULL AND claim.lease_until <= EXCLUDED.claimed_at)
RETURNING key, owner, fence, state, lease_until, result, error, claimed_at, settled_at;

-- name: ClaimRenewUpdate :one
-- Extends the lease of the holder of fence. No row when it holds none.
UPDATE claim SET lease_until = sqlc.narg(lease_until)
WHERE key = sqlc.arg(key) AND fence = sqlc.arg(fence) AND state = 'held'
RETURNING key, owner, fence, state, lease_until, result, error, claimed_at, settled_at;

-- name: ClaimSettleUpdate :one
-- Completes or fails the claim held under fence. No row when it is not
-- held under fence.
UPDATE claim SET state = sqlc.arg(state), result = sqlc.narg(result)::text::jsonb, error = sqlc.narg(error),
  settled_at = sqlc.arg(settled_at)::timestamptz, lease_until = NULL
WHERE key = sqlc.arg(key) AND fence = sqlc.arg(fence) AND state = 'held'
RETURNING key, owner, fence, state, lease_until, result, error, claimed_at, settled_at;

-- name: OrphanInsert :one
INSERT INTO orphan (key, stale_fence, stale_owner, stale_result, current_fence, current_owner, current_state, current_result, recorded_at)
VALUES (sqlc.arg(key), sqlc.arg(stale_fence), sqlc.arg(stale_owner), sqlc.narg(stale_result)::text::jsonb,
  sqlc.arg(current_fence), sqlc.arg(current_owner), sqlc.arg(current_state), sqlc.narg(current_result)::text::jsonb,
  sqlc.arg(recorded_at))
RETURNING id;

-- name: OrphanList :many
SELECT id, key, stale_fence, stale_owner, stale_result, current_fence, current_owner, current_state, current_result, recorded_at
FROM orphan ORDER BY id;
