-- What a run's matching looks up besides keys and ids: whether any effect
-- was abandoned (only then, or once some effect is final, can new evidence
-- name a closed effect back into scope), and the earlier evidence that
-- names an effect in scope as its parent transaction.
CREATE INDEX effect_abandoned ON effect (key) WHERE status = 'abandoned';
CREATE INDEX evidence_parent_tx_id ON evidence (parent_tx_id) WHERE parent_tx_id <> '';
