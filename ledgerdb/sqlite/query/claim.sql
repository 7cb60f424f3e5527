-- name: ClaimGet :one
SELECT key, owner, fence, state, lease_until, result, error, claimed_at, settled_at FROM claim WHERE key = ?;
