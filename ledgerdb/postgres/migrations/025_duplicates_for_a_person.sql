-- A duplicated effect whose finding handed something to a person (a refund
-- made twice, which the job does not undo; a charge refunded in part) was
-- taken for final, and no later run read it again: from this version only
-- a duplicate whose every action is a compensation that was made is final
-- (matcher.IsFinal). The states taken for final that way are opened again,
-- from the finding their run made, so that the next run reports them until
-- a person resolves them.
UPDATE effect_state s SET final = false
FROM finding f
WHERE s.class = 'duplicated' AND s.final AND f.run_id = s.run_id AND f.effect_key = s.key AND f.class = 'duplicated'
  AND EXISTS (SELECT 1 FROM json_array_elements(f.actions) a WHERE a->>'kind' <> 'compensate');
