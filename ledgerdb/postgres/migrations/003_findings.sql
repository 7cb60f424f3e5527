-- Where each effect stands after the latest run that classified it. A final
-- row (confirmed) is not read again unless new evidence links to it, so the
-- nightly cost follows the new evidence and the open effects, not the
-- ledger's history.
CREATE TABLE effect_state (
  key           text PRIMARY KEY REFERENCES effect (key),
  class         text NOT NULL,
  final         boolean NOT NULL,
  run_id        text NOT NULL,
  classified_at timestamptz NOT NULL
);
CREATE INDEX effect_state_open ON effect_state (key) WHERE NOT final;

-- Every finding of every run: an effect's class (other than confirmed), or
-- an unexpected transaction, with the transactions and planned actions.
CREATE TABLE finding (
  run_id         text NOT NULL REFERENCES run (id),
  seq            integer NOT NULL,
  class          text NOT NULL,
  effect_key     text NOT NULL,
  provider       text NOT NULL,
  currency       text NOT NULL,
  expected_minor bigint NOT NULL,
  observed_minor bigint NOT NULL,
  transactions   jsonb NOT NULL,
  actions        jsonb NOT NULL,
  reason         text NOT NULL,
  PRIMARY KEY (run_id, seq)
);

CREATE INDEX evidence_effect_key ON evidence (effect_key) WHERE effect_key <> '';
CREATE INDEX evidence_tx_id ON evidence (tx_id) WHERE tx_id <> '';
CREATE INDEX evidence_payment_intent ON evidence (payment_intent) WHERE payment_intent <> '';
CREATE INDEX effect_external_id ON effect (external_id) WHERE external_id IS NOT NULL;
