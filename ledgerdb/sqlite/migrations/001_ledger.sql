-- The application's effect ledger, exactly as applications write it: jsonb
-- is TEXT holding JSON, timestamptz is TEXT in UTC with a fixed width
-- (2006-01-02T15:04:05.000Z), so text order is time order.
CREATE TABLE IF NOT EXISTS effect (
  key          TEXT PRIMARY KEY,
  run_id       TEXT NOT NULL,
  step         TEXT NOT NULL,
  provider     TEXT NOT NULL,
  status       TEXT NOT NULL,
  external_id  TEXT,
  request      TEXT NOT NULL CHECK (json_valid(request)),
  response     TEXT CHECK (response IS NULL OR json_valid(response)),
  created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  confirmed_at TEXT
);

-- One row per action (or run) that the job claims. fence only grows.
CREATE TABLE claim (
  key         TEXT PRIMARY KEY,
  owner       TEXT NOT NULL,
  fence       INTEGER NOT NULL CHECK (fence > 0),
  state       TEXT NOT NULL CHECK (state IN ('held', 'done', 'failed')),
  lease_until TEXT,                 -- NULL: no deadline, live until settled
  result      TEXT CHECK (result IS NULL OR json_valid(result)),
  error       TEXT,
  claimed_at  TEXT NOT NULL,
  settled_at  TEXT
);

-- Effects made by owners that had lost their claim: reported, never dropped.
CREATE TABLE orphan (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  key            TEXT NOT NULL REFERENCES claim (key),
  stale_fence    INTEGER NOT NULL,
  stale_owner    TEXT NOT NULL,
  stale_result   TEXT,
  current_fence  INTEGER NOT NULL,
  current_owner  TEXT NOT NULL,
  current_state  TEXT NOT NULL,
  current_result TEXT,
  recorded_at    TEXT NOT NULL
);

CREATE TABLE run (
  id          TEXT PRIMARY KEY,
  status      TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
  args        TEXT,
  result      TEXT,
  started_at  TEXT NOT NULL,
  finished_at TEXT
);
