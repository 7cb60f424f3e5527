-- name: FindingListByRun :many
SELECT run_id, seq, class, effect_key, provider, currency, expected_minor, observed_minor, transactions, actions, reason
FROM finding WHERE run_id = sqlc.arg(run_id) ORDER BY seq;

-- name: FindingListByEffect :many
-- The findings about an effect with the start of their run, oldest run
-- first.
SELECT sqlc.embed(f), r.started_at
FROM finding f JOIN run r ON r.id = f.run_id
WHERE f.effect_key = sqlc.arg(effect_key) ORDER BY r.started_at, f.run_id;
