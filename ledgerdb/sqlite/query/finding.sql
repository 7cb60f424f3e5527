-- name: FindingListByRun :many
-- FindingListByRun reads a run's findings in the order they were recorded.
SELECT run_id, seq, class, effect_key, provider, currency, expected_minor, observed_minor, transactions, actions, reason
FROM finding WHERE run_id = sqlc.arg(run_id) ORDER BY seq;

-- name: FindingListByEffect :many
-- FindingListByEffect reads every finding about an effect with when its run
-- started, oldest run first.
SELECT sqlc.embed(f), r.started_at
FROM finding f JOIN run r ON r.id = f.run_id
WHERE f.effect_key = sqlc.arg(effect_key)
ORDER BY r.started_at, f.run_id;
