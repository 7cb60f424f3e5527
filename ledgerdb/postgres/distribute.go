package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"reconcile/ledgerdb"
)

// A distributed run's partitions are River jobs (github.com/riverqueue/river,
// its tables migrated beside the ledger's), one per partition, unique by run
// and partition. River hands them out, retries a partition whose worker
// failed and gives a worker thought dead's partition to another; it is no
// fence. The fence is the partition's row in stage_result: it is written in
// the transaction that records the partition's confirmations, so that of
// two workers that matched one partition the second records nothing.
// The statements here are hand-written: they read River's tables, which
// are not in sqlc's schema, and feed the matching's own (match.go).

const partitionQueue = "reconcile_partition"

// partitionArgs are a partition job's arguments.
type partitionArgs struct {
	RunID string          `json:"run_id"`
	Index int             `json:"index"`
	Input json.RawMessage `json:"input"`
}

func (partitionArgs) Kind() string { return "reconcile_partition" }

// The limits of one partition's work: a partition takes about a second,
// so a job running for longer than partitionTimeout has a worker that
// hangs; one running for longer than partitionRescue has a worker that
// died, and is given to another.
const (
	partitionTimeout  = 10 * time.Minute
	partitionRescue   = 15 * time.Minute
	partitionAttempts = 3
)

var errNotStaged = errors.New("the run's partitions are no longer staged: it ended")

// forWorkers returns the store on a pool of its own, large enough for
// River and for n partitions at once, each of which reads on one
// connection and records on another. close closes that pool.
func (s *Store) forWorkers(ctx context.Context, n int) (ws *Store, close func(), err error) {
	cfg := s.pool.Config()
	cfg.MaxConns = max(cfg.MaxConns, int32(2*n+4))
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	c := *s
	c.pool = pool
	return &c, pool.Close, nil
}

// river makes a River client on the store's pool that works partitions
// with d.Match, d.Workers at a time (none: it only inserts).
func (s *Store) river(d *ledgerdb.Distribution) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &partitionWorker{s: s, d: d})
	log := slog.New(slog.DiscardHandler)
	if d.Log != nil {
		log = slog.New(warnings{d.Log.Handler()})
	}
	cfg := &river.Config{Workers: workers, JobTimeout: partitionTimeout, RescueStuckJobsAfter: partitionRescue,
		MaxAttempts: partitionAttempts, Logger: log, ID: d.Worker}
	if d.Workers > 0 {
		cfg.Queues = map[string]river.QueueConfig{partitionQueue: {MaxWorkers: d.Workers}}
		cfg.FetchCooldown = 20 * time.Millisecond
		cfg.FetchPollInterval = 200 * time.Millisecond
	}
	return river.NewClient(riverpgxv5.New(s.pool), cfg)
}

// warnings passes on River's warnings and errors: what it logs at info (a
// client started or stopped) says nothing to a person reading a run's log.
type warnings struct{ slog.Handler }

func (h warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnings) WithAttrs(as []slog.Attr) slog.Handler { return warnings{h.Handler.WithAttrs(as)} }
func (h warnings) WithGroup(g string) slog.Handler       { return warnings{h.Handler.WithGroup(g)} }

// PartitionDistribute implements ledgerdb.Distributor.
func (s *Store) PartitionDistribute(ctx context.Context, p *ledgerdb.MatchParams, d *ledgerdb.Distribution) (*ledgerdb.MatchSummary, [][]byte, error) {
	sum, results, err := s.distribute(ctx, p, d)
	if err != nil {
		return nil, nil, fmt.Errorf("match run %s: %w", p.RunID, err)
	}
	return sum, results, nil
}

func (s *Store) distribute(ctx context.Context, p *ledgerdb.MatchParams, d *ledgerdb.Distribution) (*ledgerdb.MatchSummary, [][]byte, error) {
	s, closePool, err := s.forWorkers(ctx, d.Workers)
	if err != nil {
		return nil, nil, err
	}
	defer closePool()
	client, err := s.river(d)
	if err != nil {
		return nil, nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	m := &matching{conn: conn, p: p, now: s.now(), strs: map[string]string{}, kept: s.kept, staged: p.RunID}
	defer m.close()
	defer func() {
		if err := s.unstage(context.WithoutCancel(ctx), p.RunID); err != nil && d.Log != nil {
			d.Log.Warn("staged partitions not removed", "err", err)
		}
	}()
	sum := &ledgerdb.MatchSummary{}
	if err := m.prepare(ctx, sum); err != nil {
		return nil, nil, err
	}
	start := time.Now()
	if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := m.stage(ctx, tx, sum.Partitions); err != nil {
			return err
		}
		jobs := make([]river.InsertManyParams, sum.Partitions)
		for i := range jobs {
			jobs[i] = river.InsertManyParams{Args: partitionArgs{RunID: p.RunID, Index: i, Input: d.Input},
				InsertOpts: &river.InsertOpts{Queue: partitionQueue, UniqueOpts: river.UniqueOpts{ByArgs: true}}}
		}
		_, err := client.InsertManyTx(ctx, tx, jobs)
		return err
	}); err != nil {
		return nil, nil, err
	}
	conn.Close(ctx) // the temporary tables are staged: let them go
	if d.Log != nil {
		d.Log.Debug("partitions staged", "partitions", sum.Partitions, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	if d.Workers > 0 {
		if err := client.Start(ctx); err != nil {
			return nil, nil, err
		}
		defer client.Stop(context.WithoutCancel(ctx))
	}
	if err := s.await(ctx, p.RunID, sum.Partitions, d.Progress); err != nil {
		return nil, nil, err
	}
	// The workers' partitions are not at hand: the run's sources are
	// sorted as a source no run sorted is (migration 022).
	if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT sort_sources($1)`, nonNil(p.Sources)); err != nil {
			return err
		}
		return m.mark(ctx, tx, matchLeftStaged, p.RunID)
	}); err != nil {
		return nil, nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT worker, confirmed, result, work_ms FROM stage_result WHERE run_id = $1 ORDER BY idx`, p.RunID)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var results [][]byte
	by := map[string]int{} // how many partitions each worker recorded
	var work, longest time.Duration
	for rows.Next() {
		var worker string
		var n int
		var b []byte
		var ms int64
		if err := rows.Scan(&worker, &n, &b, &ms); err != nil {
			return nil, nil, err
		}
		by[worker]++
		work += time.Duration(ms) * time.Millisecond
		longest = max(longest, time.Duration(ms)*time.Millisecond)
		sum.Confirmed += n
		results = append(results, b)
	}
	if d.Log != nil {
		d.Log.Debug("partitions recorded", "by", by, "work", work, "longest", longest)
	}
	return sum, results, rows.Err()
}

// stage copies the run's partitions from the spill into the staged
// rows, for any process to read, and says how many there are. An
// effect's request is staged as the matcher reads it (driver.PlainRequest).
func (m *matching) stage(ctx context.Context, tx pgx.Tx, count int) error {
	run := m.p.RunID
	for i := range count {
		part, err := m.spill.Partition(i)
		if err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"stage_effect"}, []string{"run_id", "part", "key", "provider", "step", "status",
			"external_id", "created_at", "request", "class", "since", "final"}, pgx.CopyFromSlice(len(part.Effects), func(j int) ([]any, error) {
			e := &part.Effects[j]
			return []any{run, i, e.Key, e.Provider, e.Step, string(e.Status), nullText(e.ExternalID), e.CreatedAt, string(e.Request),
				nullText(string(e.State)), nullTime(e.Since), e.Final}, nil
		})); err != nil {
			return err
		}
		records := append(part.Evidence, part.Earlier...)
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"stage_record"}, []string{"run_id", "part", "mine", "uri", "webhook", "line", "provider", "kind",
			"tx_id", "amount_minor", "currency", "occurred_at", "pending", "failed", "effect_key", "parent_effect_key", "payment_intent",
			"parent_tx_id"}, pgx.CopyFromSlice(len(records), func(j int) ([]any, error) {
			e := &records[j]
			return []any{run, i, j < len(part.Evidence), e.URI, e.Webhook, e.Line, e.Provider, string(e.Kind), e.TxID, e.Amount.Minor,
				e.Amount.Currency, nullTime(e.Time), e.Pending, e.Failed, e.EffectKey, e.ParentEffectKey, e.PaymentIntent, e.ParentTxID}, nil
		})); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO stage_partition (run_id, idx, count) SELECT $1, i, $2 FROM generate_series(0, $2 - 1) AS i`, run, count)
	return err
}

// await waits until each of the run's count partitions has its result, or
// one of them failed for good.
func (s *Store) await(ctx context.Context, run string, count int, progress func(done, count int)) error {
	tick := time.NewTicker(100 * time.Millisecond) // polling the ledger, not waiting out a lease
	defer tick.Stop()
	for {
		var done, failed, staged int
		if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM stage_result WHERE run_id = $1),
			(SELECT count(*) FROM river_job WHERE kind = $2 AND args @> jsonb_build_object('run_id', $1::text)
			  AND state IN ('discarded', 'cancelled')), (SELECT count(*) FROM stage_partition WHERE run_id = $1)`,
			run, partitionArgs{}.Kind()).Scan(&done, &failed, &staged); err != nil {
			return err
		}
		if staged != count { // removed by another process: what was recorded of them is gone too
			return fmt.Errorf("%d of the run's %d staged partitions are gone", count-staged, count)
		}
		if progress != nil {
			progress(done, count)
		}
		if failed > 0 {
			var errs []string
			_ = s.pool.QueryRow(ctx, `SELECT coalesce(array_agg(e->>'error'), '{}') FROM river_job, unnest(errors) e
				WHERE kind = $2 AND args @> jsonb_build_object('run_id', $1::text) AND state IN ('discarded', 'cancelled')`, run, partitionArgs{}.Kind()).Scan(&errs)
			return fmt.Errorf("%d partitions failed: %s", failed, strings.Join(errs, "; "))
		}
		if done == count {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// unstage removes a run's staged rows. A worker that takes one of its
// partitions afterwards finds nothing staged, and cancels it. When no other
// run is staged and no other session holds the tables, they are emptied
// whole, which leaves nothing for a vacuum to do. Their locks are asked for
// without waiting: another run takes them in another order (its progress
// reads stage_result first), and waiting for them deadlocked with it.
func (s *Store) unstage(ctx context.Context, run string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		whole, err := unstageWhole(ctx, tx, run)
		if err != nil {
			return err
		}
		if whole {
			_, err := tx.Exec(ctx, `TRUNCATE stage_partition, stage_effect, stage_record, stage_result`)
			return err
		}
		for _, t := range []string{"stage_partition", "stage_effect", "stage_record", "stage_result"} {
			if _, err := tx.Exec(ctx, `DELETE FROM `+t+` WHERE run_id = $1`, run); err != nil {
				return err
			}
		}
		return nil
	})
}

// unstageWhole takes the staging tables for tx, if it can at once, and
// says whether it did and no run but run is staged.
func unstageWhole(ctx context.Context, tx pgx.Tx, run string) (bool, error) {
	sp, err := tx.Begin(ctx) // a savepoint: a lock not granted ends it alone
	if err != nil {
		return false, err
	}
	var pe *pgconn.PgError
	if _, err := sp.Exec(ctx, `LOCK TABLE stage_partition, stage_effect, stage_record, stage_result NOWAIT`); errors.As(err, &pe) && pe.Code == "55P03" {
		return false, sp.Rollback(ctx) // lock_not_available: another session uses them
	} else if err != nil {
		return false, err
	}
	var others bool
	if err := sp.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM stage_partition WHERE run_id <> $1)`, run).Scan(&others); err != nil {
		return false, err
	}
	return !others, sp.Commit(ctx)
}

// PartitionWork implements ledgerdb.Distributor.
func (s *Store) PartitionWork(ctx context.Context, d *ledgerdb.Distribution) error {
	if d.Workers < 1 {
		return errors.New("work partitions: a worker works at least one partition at a time")
	}
	s, closePool, err := s.forWorkers(ctx, d.Workers)
	if err != nil {
		return err
	}
	defer closePool()
	client, err := s.river(d)
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return client.Stop(context.WithoutCancel(ctx))
}

// partitionWorker matches and records one staged partition.
type partitionWorker struct {
	river.WorkerDefaults[partitionArgs]
	s *Store
	d *ledgerdb.Distribution
}

func (w *partitionWorker) Work(ctx context.Context, job *river.Job[partitionArgs]) error {
	m, r, err := w.s.stagedPartition(ctx, job.Args.RunID, job.Args.Index, w.d)
	if errors.Is(err, errNotStaged) {
		return river.JobCancel(err)
	}
	if err != nil {
		return err
	}
	confs, result, err := w.d.Match(job.Args.Input, r.part)
	if err != nil { // the same partition would fail again: the run fails now
		return river.JobCancel(fmt.Errorf("run %s partition %d: %w", job.Args.RunID, job.Args.Index, err))
	}
	_, err = w.s.recordPartition(ctx, m, r, confs, result, func(tx pgx.Tx) error {
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	return err
}

// stagedPartition reads partition idx of a staged run.
func (s *Store) stagedPartition(ctx context.Context, run string, idx int, d *ledgerdb.Distribution) (*matching, *read, error) {
	m := &matching{p: &ledgerdb.MatchParams{RunID: run}, now: s.now(),
		strs: map[string]string{}, staged: run, worker: d.Worker, started: time.Now()}
	r := &read{part: &ledgerdb.Partition{Index: idx}}
	err := s.pool.QueryRow(ctx, `SELECT count FROM stage_partition WHERE run_id = $1 AND idx = $2`, run, idx).Scan(&r.part.Count)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, fmt.Errorf("run %s partition %d: %w", run, idx, errNotStaged)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := m.read(ctx, s.pool, r); err != nil {
		return nil, nil, err
	}
	return m, r, nil
}

// recordPartition records a matched partition once: its result and its
// confirmations in one transaction, and done (the job's completion) in
// it. It returns false, having written nothing, when the partition's
// result is recorded already (another worker matched it too) or its run
// is no longer staged.
func (s *Store) recordPartition(ctx context.Context, m *matching, r *read, confs []ledgerdb.Confirmation, result []byte,
	done func(pgx.Tx) error) (bool, error) {
	r.confirmed = confs
	r.settle()
	recorded := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO stage_result (run_id, idx, worker, confirmed, result, work_ms) SELECT $1, $2, $3, 0, $4, 0
			WHERE EXISTS (SELECT 1 FROM stage_partition WHERE run_id = $1 AND idx = $2) ON CONFLICT DO NOTHING`,
			m.staged, r.part.Index, m.worker, result)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, matchWriterSetup); err != nil {
			return err
		}
		n, err := m.record(ctx, tx, r)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE stage_result SET confirmed = $3, work_ms = $4 WHERE run_id = $1 AND idx = $2`,
			m.staged, r.part.Index, n, time.Since(m.started).Milliseconds()); err != nil {
			return err
		}
		recorded = true
		return done(tx)
	})
	return recorded && err == nil, err
}
