-- The earlier refunds and disputes of an effect's charge that no effect of
-- ours made name it only as the effect of the payment they modify.
CREATE INDEX evidence_parent_effect_key ON evidence (parent_effect_key) WHERE parent_effect_key <> '';
