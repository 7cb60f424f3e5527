package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
	"reconcile/ledgerdb/sqlite/internal/dbsqlc"
)

// readEffect is the effect that a :one query read, or its error through
// interpretError.
func readEffect(r dbsqlc.Effect, err error) (*reconcile.Effect, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	e := reconcile.Effect{
		Key:        r.Key,
		RunID:      r.RunID,
		Step:       r.Step,
		Provider:   r.Provider,
		Status:     reconcile.Status(r.Status),
		ExternalID: text(r.ExternalID),
		Request:    []byte(r.Request),
		Response:   rawJSON(r.Response),
		ParentKey:  text(r.ParentKey),
		Depth:      int(r.Depth),
	}
	if e.CreatedAt, err = parseTime(r.CreatedAt); err != nil {
		return nil, err
	}
	if e.ConfirmedAt, err = parseNullTS(r.ConfirmedAt); err != nil {
		return nil, err
	}
	return &e, nil
}

// EffectRecord implements ledgerdb.Store.
func (s *Store) EffectRecord(ctx context.Context, p *ledgerdb.RecordParams) (*ledgerdb.RecordResult, error) {
	var res *ledgerdb.RecordResult
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = driver.Record(statements{ctx, dbsqlc.New(tx)}, p, s.now())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("effect %s: record: %w", p.Key, err)
	}
	return res, nil
}

// EffectConfirm implements ledgerdb.Store.
func (s *Store) EffectConfirm(ctx context.Context, p *ledgerdb.ConfirmParams) (*reconcile.Effect, error) {
	var out *reconcile.Effect
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		q := dbsqlc.New(tx)
		now := ts(s.now())
		e, err := readEffect(q.EffectConfirm(ctx, dbsqlc.EffectConfirmParams{
			ExternalID:  &p.ExternalID,
			Response:    optJSON(p.Response),
			ConfirmedAt: &now,
			Key:         p.Key,
		}))
		if !errors.Is(err, reconcile.ErrNotFound) {
			out = e
			return err
		}
		if e, err = readEffect(q.EffectGet(ctx, p.Key)); err != nil {
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
		q := dbsqlc.New(tx)
		e, err := readEffect(q.EffectAbandon(ctx, p.Key))
		if !errors.Is(err, reconcile.ErrNotFound) {
			out = e
			return err
		}
		if e, err = readEffect(q.EffectGet(ctx, p.Key)); err != nil {
			return err
		}
		out, err = driver.AlreadyAbandoned(e)
		return err
	})
	return out, err
}

// EffectGet implements ledgerdb.Store.
func (s *Store) EffectGet(ctx context.Context, key string) (*reconcile.Effect, error) {
	return readEffect(s.q.EffectGet(ctx, key))
}

// EffectLoad implements ledgerdb.Store, with one prepared insert in one
// transaction.
// Hand-written: a bulk load through one statement prepared once; a generated query is compiled again for every row.
func (s *Store) EffectLoad(ctx context.Context, effects []reconcile.Effect) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO effect (key, run_id, step, provider, status, external_id, request, response,
			created_at, confirmed_at, parent_key, depth) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
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
