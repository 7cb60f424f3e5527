-- A compensation is an effect row too: depth 1, with the key of the effect
-- it compensates. Applications' own rows keep the defaults.
ALTER TABLE effect ADD COLUMN parent_key TEXT;
ALTER TABLE effect ADD COLUMN depth INTEGER NOT NULL DEFAULT 0 CHECK (depth IN (0, 1));

-- When an effect entered its class: how long it has been deferred, say.
ALTER TABLE effect_state ADD COLUMN since TEXT;
UPDATE effect_state SET since = classified_at;

-- What was handed to a person. key is the pager's dedup key; a resolved
-- escalation that comes back is opened again under the next generation.
CREATE TABLE escalation (
  key         TEXT PRIMARY KEY,
  subject     TEXT NOT NULL,
  class       TEXT NOT NULL,
  reason      TEXT NOT NULL,
  run_id      TEXT NOT NULL,
  status      TEXT NOT NULL CHECK (status IN ('open', 'acknowledged', 'resolved')),
  generation  INTEGER NOT NULL,
  opened_at   TEXT NOT NULL,
  paged_at    TEXT,
  resolved_at TEXT,
  resolved_by TEXT,
  note        TEXT
);
CREATE INDEX escalation_subject ON escalation (subject);
CREATE INDEX escalation_open ON escalation (opened_at) WHERE status <> 'resolved';

-- A person's decisions on effects, with who and when.
CREATE TABLE resolution (
  id          INTEGER PRIMARY KEY,
  effect_key  TEXT NOT NULL REFERENCES effect (key),
  resolved_as TEXT NOT NULL CHECK (resolved_as IN ('confirmed', 'abandoned', 'compensated')),
  note        TEXT NOT NULL,
  resolved_by TEXT NOT NULL,
  resolved_at TEXT NOT NULL
);
CREATE INDEX resolution_effect ON resolution (effect_key);

CREATE INDEX finding_effect_key ON finding (effect_key) WHERE effect_key <> '';
