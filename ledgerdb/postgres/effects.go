package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
	"reconcile/ledgerdb/postgres/internal/dbsqlc"
)

// effectOf converts an effect row, its times in UTC.
func effectOf(r dbsqlc.Effect) *reconcile.Effect {
	return &reconcile.Effect{Key: r.Key, RunID: r.RunID, Step: r.Step, Provider: r.Provider, Status: reconcile.Status(r.Status),
		ExternalID: textOf(r.ExternalID), Request: r.Request, Response: r.Response, CreatedAt: r.CreatedAt.UTC(),
		ConfirmedAt: utcOf(r.ConfirmedAt), ParentKey: textOf(r.ParentKey), Depth: r.Depth}
}

// EffectRecord implements ledgerdb.Store.
func (s *Store) EffectRecord(ctx context.Context, p *ledgerdb.RecordParams) (*ledgerdb.RecordResult, error) {
	res, err := driver.Record(statements{ctx, dbsqlc.New(s.pool)}, p, s.now())
	if err != nil {
		return nil, fmt.Errorf("effect %s: record: %w", p.Key, err)
	}
	return res, nil
}

// EffectConfirm implements ledgerdb.Store.
func (s *Store) EffectConfirm(ctx context.Context, p *ledgerdb.ConfirmParams) (*reconcile.Effect, error) {
	r, err := dbsqlc.New(s.pool).EffectConfirmUpdate(ctx, dbsqlc.EffectConfirmUpdateParams{Key: p.Key, ExternalID: p.ExternalID,
		Response: jsonText(p.Response), ConfirmedAt: s.now()})
	if err == nil {
		return effectOf(r), nil
	}
	if err = interpretError(err); !errors.Is(err, reconcile.ErrNotFound) {
		return nil, err
	}
	cur, err := s.EffectGet(ctx, p.Key)
	if err != nil {
		return nil, err
	}
	return driver.AlreadyConfirmed(cur, p.ExternalID)
}

// EffectAbandon implements ledgerdb.Store.
func (s *Store) EffectAbandon(ctx context.Context, p *ledgerdb.AbandonParams) (*reconcile.Effect, error) {
	r, err := dbsqlc.New(s.pool).EffectAbandonUpdate(ctx, p.Key)
	if err == nil {
		return effectOf(r), nil
	}
	if err = interpretError(err); !errors.Is(err, reconcile.ErrNotFound) {
		return nil, err
	}
	cur, err := s.EffectGet(ctx, p.Key)
	if err != nil {
		return nil, err
	}
	return driver.AlreadyAbandoned(cur)
}

// EffectGet implements ledgerdb.Store.
func (s *Store) EffectGet(ctx context.Context, key string) (*reconcile.Effect, error) {
	r, err := dbsqlc.New(s.pool).EffectGet(ctx, key)
	if err != nil {
		return nil, interpretError(err)
	}
	return effectOf(r), nil
}

// EffectLoad implements ledgerdb.Store, with COPY. Hand-written: sqlc's
// :copyfrom takes a slice of its own rows, a second copy of every effect
// of a bench's world.
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
