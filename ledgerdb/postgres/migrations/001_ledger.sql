-- The application's effect ledger, exactly as applications write it.
CREATE TABLE IF NOT EXISTS effect (
  key          text PRIMARY KEY,
  run_id       text NOT NULL,
  step         text NOT NULL,
  provider     text NOT NULL,
  status       text NOT NULL,
  external_id  text,
  request      jsonb NOT NULL,
  response     jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  confirmed_at timestamptz
);

-- One row per action (or run) that the job claims. fence only grows.
CREATE TABLE claim (
  key         text PRIMARY KEY,
  owner       text NOT NULL,
  fence       bigint NOT NULL CHECK (fence > 0),
  state       text NOT NULL CHECK (state IN ('held', 'done', 'failed')),
  lease_until timestamptz,          -- NULL: no deadline, live until settled
  result      jsonb,
  error       text,
  claimed_at  timestamptz NOT NULL,
  settled_at  timestamptz
);

-- Effects made by owners that had lost their claim: reported, never dropped.
CREATE TABLE orphan (
  id             bigserial PRIMARY KEY,
  key            text NOT NULL REFERENCES claim (key),
  stale_fence    bigint NOT NULL,
  stale_owner    text NOT NULL,
  stale_result   jsonb,
  current_fence  bigint NOT NULL,
  current_owner  text NOT NULL,
  current_state  text NOT NULL,
  current_result jsonb,
  recorded_at    timestamptz NOT NULL
);

CREATE TABLE run (
  id          text PRIMARY KEY,
  status      text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
  args        jsonb,
  result      jsonb,
  started_at  timestamptz NOT NULL,
  finished_at timestamptz
);
