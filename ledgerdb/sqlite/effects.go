package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

const effectCols = `key, run_id, step, provider, status, external_id, request, response, created_at, confirmed_at, parent_key, depth`

func scanEffect(row scanner) (*reconcile.Effect, error) {
	var (
		e                  reconcile.Effect
		status, req        string
		extID, resp        sql.NullString
		created, confirmed sql.NullString
		parent             sql.NullString
	)
	if err := row.Scan(&e.Key, &e.RunID, &e.Step, &e.Provider, &status, &extID, &req, &resp, &created, &confirmed, &parent, &e.Depth); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, reconcile.ErrNotFound
		}
		return nil, err
	}
	e.Status = reconcile.Status(status)
	e.ExternalID = extID.String
	e.Request = []byte(req)
	e.Response = rawJSON(resp)
	e.ParentKey = parent.String
	var err error
	if e.CreatedAt, err = parseTS(created); err != nil {
		return nil, err
	}
	if e.ConfirmedAt, err = parseTS(confirmed); err != nil {
		return nil, err
	}
	return &e, nil
}

// EffectRecord implements ledgerdb.Store.
func (s *Store) EffectRecord(ctx context.Context, p *ledgerdb.RecordParams) (*ledgerdb.RecordResult, error) {
	var res *ledgerdb.RecordResult
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = recordAttempt(ctx, tx, p, s.now())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("effect %s: record: %w", p.Key, err)
	}
	return res, nil
}

// recordAttempt inserts an attempted effect, or returns the row when it
// records the same attempt.
func recordAttempt(ctx context.Context, q querier, p *ledgerdb.RecordParams, now time.Time) (*ledgerdb.RecordResult, error) {
	req, err := driver.CanonicalJSON(p.Request)
	if err != nil {
		return nil, err
	}
	e, err := scanEffect(q.QueryRowContext(ctx, `
		INSERT INTO effect (key, run_id, step, provider, status, request, created_at, parent_key, depth)
		VALUES (?, ?, ?, ?, 'attempted', ?, ?, ?, ?)
		ON CONFLICT (key) DO NOTHING
		RETURNING `+effectCols,
		p.Key, p.RunID, p.Step, p.Provider, string(req), ts(now), nullText(p.ParentKey), p.Depth))
	if err == nil {
		return &ledgerdb.RecordResult{Effect: *e, Created: true}, nil
	}
	if !errors.Is(err, reconcile.ErrNotFound) {
		return nil, err
	}
	if e, err = scanEffect(q.QueryRowContext(ctx, `SELECT `+effectCols+` FROM effect WHERE key = ?`, p.Key)); err != nil {
		return nil, err
	}
	return driver.SameAttempt(e, p, req)
}

// EffectConfirm implements ledgerdb.Store.
func (s *Store) EffectConfirm(ctx context.Context, p *ledgerdb.ConfirmParams) (*reconcile.Effect, error) {
	var out *reconcile.Effect
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		e, err := scanEffect(tx.QueryRowContext(ctx, `
			UPDATE effect SET status = 'confirmed', external_id = ?, response = ?, confirmed_at = ?
			WHERE key = ? AND status = 'attempted'
			RETURNING `+effectCols, p.ExternalID, nullJSON(p.Response), ts(s.now()), p.Key))
		if !errors.Is(err, reconcile.ErrNotFound) {
			out = e
			return err
		}
		if e, err = scanEffect(tx.QueryRowContext(ctx, `SELECT `+effectCols+` FROM effect WHERE key = ?`, p.Key)); err != nil {
			return err
		}
		out, err = driver.AlreadyConfirmed(e, p.ExternalID)
		return err
	})
	return out, err
}

// EffectAbandon implements ledgerdb.Store.
func (s *Store) EffectAbandon(ctx context.Context, p *ledgerdb.AbandonParams) (*reconcile.Effect, error) {
	var out *reconcile.Effect
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		e, err := scanEffect(tx.QueryRowContext(ctx, `
			UPDATE effect SET status = 'abandoned' WHERE key = ? AND status = 'attempted'
			RETURNING `+effectCols, p.Key))
		if !errors.Is(err, reconcile.ErrNotFound) {
			out = e
			return err
		}
		if e, err = scanEffect(tx.QueryRowContext(ctx, `SELECT `+effectCols+` FROM effect WHERE key = ?`, p.Key)); err != nil {
			return err
		}
		out, err = driver.AlreadyAbandoned(e)
		return err
	})
	return out, err
}

// EffectGet implements ledgerdb.Store.
func (s *Store) EffectGet(ctx context.Context, key string) (*reconcile.Effect, error) {
	return scanEffect(s.db.QueryRowContext(ctx, `SELECT `+effectCols+` FROM effect WHERE key = ?`, key))
}

// EffectLoad implements ledgerdb.Store, with one prepared insert in one
// transaction.
func (s *Store) EffectLoad(ctx context.Context, effects []reconcile.Effect) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO effect (`+effectCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		for i := range effects {
			e := &effects[i]
			if _, err := ins.ExecContext(ctx, e.Key, e.RunID, e.Step, e.Provider, string(e.Status), nullText(e.ExternalID), string(e.Request),
				nullJSON(e.Response), ts(e.CreatedAt), nullTS(e.ConfirmedAt), nullText(e.ParentKey), e.Depth); err != nil {
				return fmt.Errorf("effect %s: %w", e.Key, err)
			}
		}
		return nil
	})
}

// nullText passes an empty string as NULL.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}
