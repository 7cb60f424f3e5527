-- A refund or compensation row that evidence confirmed was given the
-- payment intent of the charge it returns as its external id (before this
-- version matcher.ConfirmingID did so for every transaction that carried
-- one). Every refund of that charge carries the intent, so a refund made
-- by hand could link to the row and make it look refunded twice. Such rows
-- take the id of the refund that names them by key.
UPDATE effect f SET external_id = r.tx_id
FROM (SELECT effect_key, provider, payment_intent, min(tx_id) AS tx_id
      FROM evidence
      WHERE kind = 'refund' AND effect_key <> '' AND payment_intent <> '' AND NOT failed
      GROUP BY effect_key, provider, payment_intent) r
WHERE f.step IN ('refund', 'compensate') AND f.key = r.effect_key AND f.provider = r.provider
  AND f.external_id = r.payment_intent;
