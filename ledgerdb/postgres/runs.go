package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
	"reconcile/ledgerdb/postgres/internal/dbsqlc"
)

// runOf converts a run row, its times in UTC.
func runOf(r dbsqlc.Run) *reconcile.Run {
	return &reconcile.Run{ID: r.ID, Status: reconcile.RunStatus(r.Status), Args: r.Args, Result: r.Result, StartedAt: r.StartedAt.UTC(),
		FinishedAt: utcOf(r.FinishedAt)}
}

// RunStart implements ledgerdb.Store.
func (s *Store) RunStart(ctx context.Context, p *ledgerdb.StartRunParams) (*reconcile.Run, error) {
	r, err := dbsqlc.New(s.pool).RunStartInsert(ctx, dbsqlc.RunStartInsertParams{ID: p.ID, Args: jsonText(p.Args), StartedAt: s.now()})
	if err != nil {
		return nil, fmt.Errorf("run %s: start: %w", p.ID, interpretError(err))
	}
	return runOf(r), nil
}

// RunFinish implements ledgerdb.Store. The result of a large run is
// hundreds of megabytes of JSON: it goes in through COPY, rather than as
// one parameter that would be copied whole, and is not read back (the run
// returned carries the result as given). The COPY is in the binary
// format, the result sent as it lies, into a temporary table that does
// not compress it (the run's own column does, with lz4 where it can:
// migration 016): a second night's 23 MB took 0.15 to 0.17 s, against
// 0.37 to 0.43 s in the text format, whose every byte the server looks at
// for an escape, into a column compressed by pglz (by hand, alternating).
// Hand-written: COPY, and an update that reads the temporary table it
// fills.
func (s *Store) RunFinish(ctx context.Context, p *ledgerdb.FinishRunParams) (*reconcile.Run, error) {
	var r *reconcile.Run
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if len(p.Result) > maxValue {
			return fmt.Errorf("a result of %d bytes: more than a value of the ledger holds (1 GB)", len(p.Result))
		}
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE run_result (result text) ON COMMIT DROP;
			ALTER TABLE run_result ALTER COLUMN result SET STORAGE EXTERNAL`); err != nil {
			return err
		}
		if len(p.Result) > 0 {
			if _, err := tx.Conn().PgConn().CopyFrom(ctx, copyValue(p.Result), copySQL("run_result", "result")); err != nil {
				return err
			}
		}
		var row dbsqlc.Run
		if err := tx.QueryRow(ctx, `
			UPDATE run SET status = $2, result = (SELECT result::json FROM run_result), finished_at = $3 WHERE id = $1 AND status = 'running'
			RETURNING id, status, args, NULL::json, started_at, finished_at`, p.ID, string(p.Status), s.now()).Scan(
			&row.ID, &row.Status, &row.Args, &row.Result, &row.StartedAt, &row.FinishedAt); err != nil {
			return interpretError(err)
		}
		r = runOf(row)
		return nil
	})
	return driver.Finished(ctx, p, r, err, s.RunGet)
}

// maxValue is the largest value PostgreSQL holds in a field.
const maxValue = 1<<30 - 1

// RunGet implements ledgerdb.Store.
func (s *Store) RunGet(ctx context.Context, id string) (*reconcile.Run, error) {
	r, err := dbsqlc.New(s.pool).RunGet(ctx, id)
	if err != nil {
		return nil, interpretError(err)
	}
	return runOf(r), nil
}

// RunList implements ledgerdb.Store.
func (s *Store) RunList(ctx context.Context, p *ledgerdb.RunsParams) ([]reconcile.Run, error) {
	var limit *int64
	if p.Limit > 0 {
		n := int64(p.Limit)
		limit = &n
	}
	rows, err := dbsqlc.New(s.pool).RunList(ctx, dbsqlc.RunListParams{Status: string(p.Status), MaxRuns: limit})
	if err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	var out []reconcile.Run
	for _, r := range rows {
		out = append(out, *runOf(dbsqlc.Run{ID: r.ID, Status: r.Status, Args: r.Args, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}))
	}
	return out, nil
}
