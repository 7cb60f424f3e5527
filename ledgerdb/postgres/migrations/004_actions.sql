-- A compensation is an effect row too: depth 1, with the key of the effect
-- it compensates. Applications' own rows keep the defaults.
ALTER TABLE effect ADD COLUMN parent_key text;
ALTER TABLE effect ADD COLUMN depth integer NOT NULL DEFAULT 0 CHECK (depth IN (0, 1));

-- When an effect entered its class: how long it has been deferred, say.
ALTER TABLE effect_state ADD COLUMN since timestamptz;
UPDATE effect_state SET since = classified_at;
ALTER TABLE effect_state ALTER COLUMN since SET NOT NULL;

-- What was handed to a person. key is the pager's dedup key; a resolved
-- escalation that comes back is opened again under the next generation.
CREATE TABLE escalation (
  key         text PRIMARY KEY,
  subject     text NOT NULL,
  class       text NOT NULL,
  reason      text NOT NULL,
  run_id      text NOT NULL,
  status      text NOT NULL CHECK (status IN ('open', 'acknowledged', 'resolved')),
  generation  integer NOT NULL,
  opened_at   timestamptz NOT NULL,
  paged_at    timestamptz,
  resolved_at timestamptz,
  resolved_by text,
  note        text
);
CREATE INDEX escalation_subject ON escalation (subject);
CREATE INDEX escalation_open ON escalation (opened_at) WHERE status <> 'resolved';

-- A person's decisions on effects, with who and when.
CREATE TABLE resolution (
  id          bigserial PRIMARY KEY,
  effect_key  text NOT NULL REFERENCES effect (key),
  resolved_as text NOT NULL CHECK (resolved_as IN ('confirmed', 'abandoned', 'compensated')),
  note        text NOT NULL,
  resolved_by text NOT NULL,
  resolved_at timestamptz NOT NULL
);
CREATE INDEX resolution_effect ON resolution (effect_key);

CREATE INDEX finding_effect_key ON finding (effect_key) WHERE effect_key <> '';
