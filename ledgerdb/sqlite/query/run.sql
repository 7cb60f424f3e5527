-- name: RunGet :one
-- RunGet reads the run with id.
SELECT id, status, args, result, started_at, finished_at FROM run WHERE id = sqlc.arg(id);

-- name: RunInsert :one
-- RunInsert records a run as running.
INSERT INTO run (id, status, args, started_at) VALUES (sqlc.arg(id), 'running', sqlc.narg(args), sqlc.arg(started_at))
RETURNING id, status, args, result, started_at, finished_at;

-- name: RunFinishRunning :one
-- RunFinishRunning records how a running run ended; it returns no row when
-- the run is not running. The result is not read back: a large run's is
-- hundreds of megabytes.
UPDATE run SET status = sqlc.arg(status), result = sqlc.narg(result), finished_at = sqlc.arg(finished_at)
WHERE id = sqlc.arg(id) AND status = 'running'
RETURNING id, status, args, started_at, finished_at;

-- name: RunList :many
-- RunList reads the latest runs, newest first, without their results: all
-- when status is empty, else those with status; at most limit (-1: all).
SELECT id, status, args, started_at, finished_at FROM run
WHERE sqlc.arg(status) = '' OR status = sqlc.arg(status)
ORDER BY started_at DESC, id DESC LIMIT sqlc.arg(limit);
