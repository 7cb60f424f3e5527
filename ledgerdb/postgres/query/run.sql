-- name: RunGet :one
SELECT id, status, args, result, started_at, finished_at FROM run WHERE id = sqlc.arg(id);

-- name: RunStartInsert :one
INSERT INTO run (id, status, args, started_at) VALUES (sqlc.arg(id), 'running', sqlc.narg(args)::text::jsonb, sqlc.arg(started_at))
RETURNING id, status, args, result, started_at, finished_at;

-- name: RunList :many
-- Lists the latest runs without their results, only those with status
-- when it is not empty, at most max_runs of them when it is set.
SELECT id, status, args, started_at, finished_at FROM run
WHERE sqlc.arg(status)::text = '' OR status = sqlc.arg(status)
ORDER BY started_at DESC, id DESC LIMIT sqlc.narg(max_runs)::bigint;
