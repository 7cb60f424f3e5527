-- name: EscalationGet :one
SELECT key, subject, class, reason, run_id, status, generation, opened_at, paged_at, resolved_at, resolved_by, note,
  acknowledged_at, acknowledged_by
FROM escalation WHERE key = sqlc.arg(key);

-- name: EscalationOpenUpsert :one
-- Opens an escalation, or opens a resolved one again under the next
-- generation. No row when it is open already.
INSERT INTO escalation (key, subject, class, reason, run_id, status, generation, opened_at)
VALUES (sqlc.arg(key), sqlc.arg(subject), sqlc.arg(class), sqlc.arg(reason), sqlc.arg(run_id), 'open', 1, sqlc.arg(opened_at))
ON CONFLICT (key) DO UPDATE
SET status = 'open', generation = escalation.generation + 1, reason = EXCLUDED.reason, run_id = EXCLUDED.run_id,
    opened_at = EXCLUDED.opened_at, paged_at = NULL, resolved_at = NULL, resolved_by = NULL, note = NULL,
    acknowledged_at = NULL, acknowledged_by = NULL
WHERE escalation.status = 'resolved'
RETURNING key, subject, class, reason, run_id, status, generation, opened_at, paged_at, resolved_at, resolved_by, note,
  acknowledged_at, acknowledged_by;

-- name: EscalationAcknowledgeUpdate :one
-- Acknowledges an open escalation. No row when it is not open.
UPDATE escalation SET status = 'acknowledged', acknowledged_at = sqlc.arg(acknowledged_at)::timestamptz,
  acknowledged_by = sqlc.arg(acknowledged_by)::text
WHERE key = sqlc.arg(key) AND status = 'open'
RETURNING key, subject, class, reason, run_id, status, generation, opened_at, paged_at, resolved_at, resolved_by, note,
  acknowledged_at, acknowledged_by;

-- name: EscalationMarkPagedUpdate :exec
UPDATE escalation SET paged_at = sqlc.arg(paged_at)::timestamptz
WHERE key = sqlc.arg(key) AND generation = sqlc.arg(generation) AND paged_at IS NULL;

-- name: EscalationList :many
-- Lists escalations about subject and its children (all when subject is
-- empty), only those not resolved when open_only, only those resolved
-- after resolved_since when it is set.
SELECT key, subject, class, reason, run_id, status, generation, opened_at, paged_at, resolved_at, resolved_by, note,
  acknowledged_at, acknowledged_by
FROM escalation
WHERE (sqlc.arg(subject)::text = '' OR subject = sqlc.arg(subject) OR subject LIKE sqlc.arg(child_pattern))
  AND (NOT sqlc.arg(open_only)::boolean OR status <> 'resolved')
  AND (sqlc.narg(resolved_since)::timestamptz IS NULL OR (status = 'resolved' AND resolved_at > sqlc.narg(resolved_since)))
ORDER BY opened_at, key;

-- name: EscalationResolveBySubject :many
-- Resolves every escalation about subject and its children that is not
-- resolved yet.
UPDATE escalation SET status = 'resolved', resolved_at = sqlc.arg(resolved_at)::timestamptz,
  resolved_by = sqlc.arg(resolved_by)::text, note = sqlc.arg(note)::text
WHERE (subject = sqlc.arg(subject) OR subject LIKE sqlc.arg(child_pattern)) AND status <> 'resolved'
RETURNING key, subject, class, reason, run_id, status, generation, opened_at, paged_at, resolved_at, resolved_by, note,
  acknowledged_at, acknowledged_by;

-- name: ResolutionInsert :exec
INSERT INTO resolution (effect_key, resolved_as, note, resolved_by, resolved_at)
VALUES (sqlc.arg(effect_key), sqlc.arg(resolved_as), sqlc.arg(note), sqlc.arg(resolved_by), sqlc.arg(resolved_at));
