-- A refund or compensation row that evidence confirmed was given the
-- payment intent of the charge it returns as its external id (before this
-- version matcher.ConfirmingID did so for every transaction that carried
-- one). Every refund of that charge carries the intent, so a refund made
-- by hand could link to the row and make it look refunded twice. Such rows
-- take the id of the refund that names them by key.
UPDATE effect SET external_id = r.tx_id
FROM (SELECT effect_key, provider, payment_intent, min(tx_id) AS tx_id
      FROM evidence
      WHERE kind = 'refund' AND effect_key <> '' AND payment_intent <> '' AND NOT failed
      GROUP BY effect_key, provider, payment_intent) AS r
WHERE effect.step IN ('refund', 'compensate') AND effect.key = r.effect_key AND effect.provider = r.provider
  AND effect.external_id = r.payment_intent;
