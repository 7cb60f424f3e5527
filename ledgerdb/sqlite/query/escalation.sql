-- name: EscalationGet :one
-- EscalationGet reads the escalation under key.
SELECT key, subject, class, reason, run_id, status, generation, opened_at, paged_at, resolved_at, resolved_by, note,
    acknowledged_at, acknowledged_by
FROM escalation WHERE key = sqlc.arg(key);

-- name: EscalationOpenUpsert :one
-- EscalationOpenUpsert opens an escalation, or opens a resolved one again
-- under the next generation; it returns no row when it is open already.
INSERT INTO escalation (key, subject, class, reason, run_id, status, generation, opened_at)
VALUES (sqlc.arg(key), sqlc.arg(subject), sqlc.arg(class), sqlc.arg(reason), sqlc.arg(run_id), 'open', 1, sqlc.arg(opened_at))
ON CONFLICT (key) DO UPDATE
SET status = 'open', generation = escalation.generation + 1, reason = excluded.reason, run_id = excluded.run_id,
    opened_at = excluded.opened_at, paged_at = NULL, resolved_at = NULL, resolved_by = NULL, note = NULL,
    acknowledged_at = NULL, acknowledged_by = NULL
WHERE escalation.status = 'resolved'
RETURNING key, subject, class, reason, run_id, status, generation, opened_at, paged_at, resolved_at, resolved_by, note,
    acknowledged_at, acknowledged_by;

-- name: EscalationAcknowledgeOpen :one
-- EscalationAcknowledgeOpen marks an open escalation acknowledged; it
-- returns no row when it is not open.
UPDATE escalation SET status = 'acknowledged', acknowledged_at = sqlc.arg(acknowledged_at), acknowledged_by = sqlc.arg(acknowledged_by)
WHERE key = sqlc.arg(key) AND status = 'open'
RETURNING key, subject, class, reason, run_id, status, generation, opened_at, paged_at, resolved_at, resolved_by, note,
    acknowledged_at, acknowledged_by;

-- name: EscalationMarkPaged :exec
-- EscalationMarkPaged records the page of a generation, once.
UPDATE escalation SET paged_at = sqlc.arg(paged_at) WHERE key = sqlc.arg(key) AND generation = sqlc.arg(generation) AND paged_at IS NULL;

-- name: EscalationList :many
-- EscalationList reads the escalations about subject and the keys derived
-- from it (all when subject is empty; see ClaimListByEffect for the
-- range), only those not resolved when open is true, and only those
-- resolved after resolved_since when it is not NULL; oldest first.
SELECT key, subject, class, reason, run_id, status, generation, opened_at, paged_at, resolved_at, resolved_by, note,
    acknowledged_at, acknowledged_by
FROM escalation
WHERE (sqlc.arg(subject) = '' OR (subject = sqlc.arg(subject) OR (subject > sqlc.arg(subject) || ':' AND subject < sqlc.arg(subject) || ';')))
  AND (NOT sqlc.arg(open) OR status <> 'resolved')
  AND (sqlc.narg(resolved_since) IS NULL OR (status = 'resolved' AND resolved_at > sqlc.narg(resolved_since)))
ORDER BY opened_at, key;

-- name: EscalationResolveBySubject :many
-- EscalationResolveBySubject resolves every escalation not resolved about
-- subject and the keys derived from it (see ClaimListByEffect), and
-- returns them.
UPDATE escalation SET status = 'resolved', resolved_at = sqlc.arg(resolved_at), resolved_by = sqlc.arg(resolved_by), note = sqlc.arg(note)
WHERE (subject = sqlc.arg(subject) OR (subject > sqlc.arg(subject) || ':' AND subject < sqlc.arg(subject) || ';')) AND status <> 'resolved'
RETURNING key, subject, class, reason, run_id, status, generation, opened_at, paged_at, resolved_at, resolved_by, note,
    acknowledged_at, acknowledged_by;

-- name: ResolutionInsert :exec
-- ResolutionInsert records a person's decision on an effect.
INSERT INTO resolution (effect_key, resolved_as, note, resolved_by, resolved_at)
VALUES (sqlc.arg(effect_key), sqlc.arg(resolved_as), sqlc.arg(note), sqlc.arg(resolved_by), sqlc.arg(resolved_at));
