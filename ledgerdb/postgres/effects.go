package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

const effectCols = `key, run_id, step, provider, status, external_id, request, response, created_at, confirmed_at, parent_key, depth`

func scanEffect(row pgx.Row) (*reconcile.Effect, error) {
	var (
		e         reconcile.Effect
		status    string
		extID     *string
		req, resp []byte
		confirmed *time.Time
		parent    *string
	)
	if err := row.Scan(&e.Key, &e.RunID, &e.Step, &e.Provider, &status, &extID, &req, &resp, &e.CreatedAt, &confirmed, &parent, &e.Depth); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, reconcile.ErrNotFound
		}
		return nil, err
	}
	e.Status = reconcile.Status(status)
	if extID != nil {
		e.ExternalID = *extID
	}
	e.Request = req
	if resp != nil {
		e.Response = resp
	}
	e.CreatedAt = e.CreatedAt.UTC()
	if confirmed != nil {
		e.ConfirmedAt = confirmed.UTC()
	}
	if parent != nil {
		e.ParentKey = *parent
	}
	return &e, nil
}

// EffectRecord implements ledgerdb.Store.
func (s *Store) EffectRecord(ctx context.Context, p *ledgerdb.RecordParams) (*ledgerdb.RecordResult, error) {
	res, err := recordAttempt(ctx, s.pool, p, s.now())
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
	var parent any
	if p.ParentKey != "" {
		parent = p.ParentKey
	}
	e, err := scanEffect(q.QueryRow(ctx, `
		INSERT INTO effect (key, run_id, step, provider, status, request, created_at, parent_key, depth)
		VALUES ($1, $2, $3, $4, 'attempted', $5, $6, $7, $8)
		ON CONFLICT (key) DO NOTHING
		RETURNING `+effectCols,
		p.Key, p.RunID, p.Step, p.Provider, string(req), now, parent, p.Depth))
	if err == nil {
		return &ledgerdb.RecordResult{Effect: *e, Created: true}, nil
	}
	if !errors.Is(err, reconcile.ErrNotFound) {
		return nil, err
	}
	if e, err = scanEffect(q.QueryRow(ctx, `SELECT `+effectCols+` FROM effect WHERE key = $1`, p.Key)); err != nil {
		return nil, err
	}
	return driver.SameAttempt(e, p, req)
}

// EffectConfirm implements ledgerdb.Store.
func (s *Store) EffectConfirm(ctx context.Context, p *ledgerdb.ConfirmParams) (*reconcile.Effect, error) {
	var resp any // NULL when no response was given
	if len(p.Response) > 0 {
		resp = string(p.Response)
	}
	e, err := scanEffect(s.pool.QueryRow(ctx, `
		UPDATE effect SET status = 'confirmed', external_id = $2, response = $3, confirmed_at = $4
		WHERE key = $1 AND status = 'attempted'
		RETURNING `+effectCols, p.Key, p.ExternalID, resp, s.now()))
	if !errors.Is(err, reconcile.ErrNotFound) {
		return e, err
	}
	cur, err := s.EffectGet(ctx, p.Key)
	if err != nil {
		return nil, err
	}
	return driver.AlreadyConfirmed(cur, p.ExternalID)
}

// EffectAbandon implements ledgerdb.Store.
func (s *Store) EffectAbandon(ctx context.Context, p *ledgerdb.AbandonParams) (*reconcile.Effect, error) {
	e, err := scanEffect(s.pool.QueryRow(ctx, `
		UPDATE effect SET status = 'abandoned' WHERE key = $1 AND status = 'attempted'
		RETURNING `+effectCols, p.Key))
	if !errors.Is(err, reconcile.ErrNotFound) {
		return e, err
	}
	cur, err := s.EffectGet(ctx, p.Key)
	if err != nil {
		return nil, err
	}
	return driver.AlreadyAbandoned(cur)
}

// EffectGet implements ledgerdb.Store.
func (s *Store) EffectGet(ctx context.Context, key string) (*reconcile.Effect, error) {
	return scanEffect(s.pool.QueryRow(ctx, `SELECT `+effectCols+` FROM effect WHERE key = $1`, key))
}

// EffectLoad implements ledgerdb.Store, with COPY.
func (s *Store) EffectLoad(ctx context.Context, effects []reconcile.Effect) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"effect"}, []string{"key", "run_id", "step", "provider", "status", "external_id",
			"request", "response", "created_at", "confirmed_at", "parent_key", "depth"}, pgx.CopyFromSlice(len(effects), func(i int) ([]any, error) {
			e := &effects[i]
			return []any{e.Key, e.RunID, e.Step, e.Provider, string(e.Status), nullText(e.ExternalID), string(e.Request), nullJSON(e.Response),
				e.CreatedAt, nullTime(e.ConfirmedAt), nullText(e.ParentKey), e.Depth}, nil
		}))
		return err
	})
}

// nullText passes an empty string as NULL.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}
