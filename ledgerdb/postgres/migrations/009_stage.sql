-- A run whose partitions other processes match (reconcile run --distribute,
-- reconcile worker) stages them here: the effects in scope and the records
-- of each partition, with its partition key, as the matching of one process
-- holds them in temporary tables; the bounds of its partitions; and, once
-- per partition, what the matching of it found. The rows live only while
-- their run does; unlogged, they cost no WAL and vanish with a crash of the
-- server, which fails the run (a run that starts again stages again). The
-- run writes its rows through views (match_sql.go) whose run is the
-- setting reconcile.run_id of its connection.
CREATE UNLOGGED TABLE stage_effect (
  run_id text NOT NULL DEFAULT current_setting('reconcile.run_id'), key text NOT NULL, provider text NOT NULL, step text NOT NULL, kind text NOT NULL, status text NOT NULL,
  external_id text, created_at timestamptz NOT NULL, amount text, currency text, request text, class text, since timestamptz,
  final boolean NOT NULL, conflicts text[]);
CREATE INDEX stage_effect_key ON stage_effect (run_id, key COLLATE "C");

CREATE UNLOGGED TABLE stage_record (
  run_id text NOT NULL DEFAULT current_setting('reconcile.run_id'), pkey text COLLATE "C" NOT NULL, linked boolean NOT NULL, mine boolean NOT NULL, source_id bigint NOT NULL,
  line int NOT NULL, provider text NOT NULL, kind text NOT NULL, tx_id text NOT NULL, amount_minor bigint NOT NULL, currency text NOT NULL,
  occurred_at timestamptz, pending boolean NOT NULL, failed boolean NOT NULL, effect_key text NOT NULL, parent_effect_key text NOT NULL,
  payment_intent text NOT NULL, parent_tx_id text NOT NULL);
CREATE INDEX stage_record_pkey ON stage_record (run_id, pkey);

-- A partition holds the keys from lo (included) to hi (excluded); NULL is
-- open.
CREATE UNLOGGED TABLE stage_partition (
  run_id text NOT NULL, idx int NOT NULL, count int NOT NULL, lo text COLLATE "C", hi text COLLATE "C",
  PRIMARY KEY (run_id, idx));

-- The one result of a partition: written in the transaction that records
-- its confirmations, so that a partition worked twice (its worker thought
-- dead, another one given it) is recorded once.
CREATE UNLOGGED TABLE stage_result (
  run_id text NOT NULL, idx int NOT NULL, worker text NOT NULL, confirmed int NOT NULL, result bytea NOT NULL,
  work_ms bigint NOT NULL, -- how long the worker took to read, match and record it
  PRIMARY KEY (run_id, idx));
