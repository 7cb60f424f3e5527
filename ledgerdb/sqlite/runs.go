package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
	"reconcile/ledgerdb/sqlite/internal/dbsqlc"
)

// runFromRow converts a run row; the reads that leave the result out give
// it as NULL.
func runFromRow(r dbsqlc.Run) (*reconcile.Run, error) {
	run := reconcile.Run{
		ID:     r.ID,
		Status: reconcile.RunStatus(r.Status),
		Args:   rawJSON(r.Args),
		Result: rawJSON(r.Result),
	}
	var err error
	if run.StartedAt, err = parseTime(r.StartedAt); err != nil {
		return nil, err
	}
	if run.FinishedAt, err = parseNullTS(r.FinishedAt); err != nil {
		return nil, err
	}
	return &run, nil
}

// readRun is the run that a :one query read, or its error through
// interpretError.
func readRun(r dbsqlc.Run, err error) (*reconcile.Run, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	return runFromRow(r)
}

// RunStart implements ledgerdb.Store.
func (s *Store) RunStart(ctx context.Context, p *ledgerdb.StartRunParams) (*reconcile.Run, error) {
	var r *reconcile.Run
	err := s.inTx(ctx, func(tx *sql.Tx) (err error) {
		r, err = readRun(dbsqlc.New(tx).RunInsert(ctx, dbsqlc.RunInsertParams{
			ID:        p.ID,
			Args:      optJSON(p.Args),
			StartedAt: ts(s.now()),
		}))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("run %s: start: %w", p.ID, err)
	}
	return r, nil
}

// RunFinish implements ledgerdb.Store.
func (s *Store) RunFinish(ctx context.Context, p *ledgerdb.FinishRunParams) (*reconcile.Run, error) {
	// The result is not read back: a large run's is hundreds of megabytes.
	var r *reconcile.Run
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		now := ts(s.now())
		row, err := dbsqlc.New(tx).RunFinishRunning(ctx, dbsqlc.RunFinishRunningParams{
			Status:     string(p.Status),
			Result:     optJSON(p.Result),
			FinishedAt: &now,
			ID:         p.ID,
		})
		if err != nil {
			return interpretError(err)
		}
		r, err = runFromRow(dbsqlc.Run{ID: row.ID, Status: row.Status, Args: row.Args, StartedAt: row.StartedAt, FinishedAt: row.FinishedAt})
		return err
	})
	return driver.Finished(ctx, p, r, err, s.RunGet)
}

// RunGet implements ledgerdb.Store.
func (s *Store) RunGet(ctx context.Context, id string) (*reconcile.Run, error) {
	return readRun(s.q.RunGet(ctx, id))
}

// RunList implements ledgerdb.Store.
func (s *Store) RunList(ctx context.Context, p *ledgerdb.RunsParams) ([]reconcile.Run, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.q.RunList(ctx, dbsqlc.RunListParams{Status: string(p.Status), Limit: int64(limit)})
	if err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	var out []reconcile.Run
	for _, row := range rows {
		r, err := runFromRow(dbsqlc.Run{ID: row.ID, Status: row.Status, Args: row.Args, StartedAt: row.StartedAt, FinishedAt: row.FinishedAt})
		if err != nil {
			return nil, fmt.Errorf("runs: %w", err)
		}
		out = append(out, *r)
	}
	return out, nil
}
