-- A refund or compensation row that evidence confirmed was given the
-- payment intent of the charge it returns as its external id (before this
-- version matcher.ConfirmingID did so for every transaction that carried
-- one). Every refund of that charge carries the intent, so a refund made
-- by hand could link to the row and make it look refunded twice. Such rows
-- take the id of the refund that names them by key (found by the index on
-- the records' effect keys).
UPDATE effect SET external_id = (
  SELECT min(e.tx_id) FROM evidence e
  WHERE e.effect_key = effect.key AND e.effect_key <> '' AND e.kind = 'refund' AND e.provider = effect.provider
    AND e.payment_intent = effect.external_id AND NOT e.failed)
WHERE step IN ('refund', 'compensate') AND EXISTS (
  SELECT 1 FROM evidence e
  WHERE e.effect_key = effect.key AND e.effect_key <> '' AND e.kind = 'refund' AND e.provider = effect.provider
    AND e.payment_intent = effect.external_id AND NOT e.failed);
