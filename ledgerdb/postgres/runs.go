package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
)

const runCols = `id, status, args, result, started_at, finished_at`

func scanRun(row pgx.Row) (*reconcile.Run, error) {
	var (
		r        reconcile.Run
		status   string
		finished *time.Time
	)
	if err := row.Scan(&r.ID, &status, &r.Args, &r.Result, &r.StartedAt, &finished); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, reconcile.ErrNotFound
		}
		return nil, err
	}
	r.Status = reconcile.RunStatus(status)
	r.StartedAt = r.StartedAt.UTC()
	if finished != nil {
		r.FinishedAt = finished.UTC()
	}
	return &r, nil
}

// StartRun implements ledgerdb.Store.
func (s *Store) StartRun(ctx context.Context, p *ledgerdb.StartRunParams) (*reconcile.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `
		INSERT INTO run (id, status, args, started_at) VALUES ($1, 'running', $2, $3)
		RETURNING `+runCols, p.ID, nullJSON(p.Args), s.now()))
	if err != nil {
		return nil, fmt.Errorf("run %s: start: %w", p.ID, err)
	}
	return r, nil
}

// FinishRun implements ledgerdb.Store.
func (s *Store) FinishRun(ctx context.Context, p *ledgerdb.FinishRunParams) (*reconcile.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `
		UPDATE run SET status = $2, result = $3, finished_at = $4 WHERE id = $1 AND status = 'running'
		RETURNING `+runCols, p.ID, string(p.Status), nullJSON(p.Result), s.now()))
	if errors.Is(err, reconcile.ErrNotFound) {
		if _, gerr := s.Run(ctx, p.ID); gerr != nil {
			return nil, fmt.Errorf("run %s: finish: %w", p.ID, gerr)
		}
		return nil, fmt.Errorf("run %s: finish: %w: it is not running", p.ID, reconcile.ErrInvalidTransition)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: finish: %w", p.ID, err)
	}
	return r, nil
}

// Run implements ledgerdb.Store.
func (s *Store) Run(ctx context.Context, id string) (*reconcile.Run, error) {
	return scanRun(s.pool.QueryRow(ctx, `SELECT `+runCols+` FROM run WHERE id = $1`, id))
}
