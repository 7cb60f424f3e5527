package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"reconcile"
	"reconcile/ledgerdb"
)

const runCols = `id, status, args, result, started_at, finished_at`

func scanRun(row interface{ Scan(...any) error }) (*reconcile.Run, error) {
	var (
		r                          reconcile.Run
		status                     string
		args, result, started, fin sql.NullString
	)
	if err := row.Scan(&r.ID, &status, &args, &result, &started, &fin); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, reconcile.ErrNotFound
		}
		return nil, err
	}
	r.Status = reconcile.RunStatus(status)
	r.Args, r.Result = rawJSON(args), rawJSON(result)
	var err error
	if r.StartedAt, err = parseTS(started); err != nil {
		return nil, err
	}
	if r.FinishedAt, err = parseTS(fin); err != nil {
		return nil, err
	}
	return &r, nil
}

// RunStart implements ledgerdb.Store.
func (s *Store) RunStart(ctx context.Context, p *ledgerdb.StartRunParams) (*reconcile.Run, error) {
	var r *reconcile.Run
	err := s.inTx(ctx, func(tx *sql.Tx) (err error) {
		r, err = scanRun(tx.QueryRowContext(ctx, `
			INSERT INTO run (id, status, args, started_at) VALUES (?, 'running', ?, ?)
			RETURNING `+runCols, p.ID, nullJSON(p.Args), ts(s.now())))
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
	err := s.inTx(ctx, func(tx *sql.Tx) (err error) {
		r, err = scanRun(tx.QueryRowContext(ctx, `
			UPDATE run SET status = ?, result = ?, finished_at = ? WHERE id = ? AND status = 'running'
			RETURNING id, status, args, NULL, started_at, finished_at`, string(p.Status), nullJSON(p.Result), ts(s.now()), p.ID))
		return err
	})
	if errors.Is(err, reconcile.ErrNotFound) {
		if _, gerr := s.RunGet(ctx, p.ID); gerr != nil {
			return nil, fmt.Errorf("run %s: finish: %w", p.ID, gerr)
		}
		return nil, fmt.Errorf("run %s: finish: %w: it is not running", p.ID, reconcile.ErrInvalidTransition)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: finish: %w", p.ID, err)
	}
	r.Result = p.Result
	return r, nil
}

// RunGet implements ledgerdb.Store.
func (s *Store) RunGet(ctx context.Context, id string) (*reconcile.Run, error) {
	return scanRun(s.db.QueryRowContext(ctx, `SELECT `+runCols+` FROM run WHERE id = ?`, id))
}

// RunList implements ledgerdb.Store.
func (s *Store) RunList(ctx context.Context, p *ledgerdb.RunsParams) ([]reconcile.Run, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.db.QueryContext(ctx, `
		SELECT id, status, args, NULL, started_at, finished_at FROM run
		WHERE ? = '' OR status = ?
		ORDER BY started_at DESC, id DESC LIMIT ?`, string(p.Status), string(p.Status), limit)
	if err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	defer rows.Close()
	var out []reconcile.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("runs: %w", err)
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}
