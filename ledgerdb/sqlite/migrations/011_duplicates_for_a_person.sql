-- A duplicated effect whose finding handed something to a person (a refund
-- made twice, which the job does not undo; a charge refunded in part) was
-- taken for final, and no later run read it again: from this version only
-- a duplicate whose every action is a compensation that was made is final
-- (matcher.IsFinal). The states taken for final that way are opened again,
-- from the finding their run made, so that the next run reports them until
-- a person resolves them. The findings are read once, not for each state.
UPDATE effect_state SET final = 0
WHERE class = 'duplicated' AND final AND (run_id, key) IN (
  SELECT f.run_id, f.effect_key FROM finding f, json_each(f.actions) a
  WHERE f.class = 'duplicated' AND json_extract(a.value, '$.kind') <> 'compensate');
