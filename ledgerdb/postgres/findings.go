package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
)

// LinkedEvidence implements ledgerdb.Store.
func (s *Store) LinkedEvidence(ctx context.Context, p *ledgerdb.LinkParams) ([]reconcile.Evidence, error) {
	return s.queryEvidence(ctx, `WHERE NOT ev.source_id = ANY($3) AND (
		(ev.effect_key <> '' AND ev.effect_key = ANY($1)) OR (ev.parent_effect_key <> '' AND ev.parent_effect_key = ANY($1))
		OR (ev.tx_id <> '' AND ev.tx_id = ANY($2))
		OR (ev.payment_intent <> '' AND ev.payment_intent = ANY($2)) OR (ev.parent_tx_id <> '' AND ev.parent_tx_id = ANY($2)))`,
		nonNil(p.Keys), nonNil(p.IDs), nonNil(p.ExcludeSources))
}

// RecordFindings implements ledgerdb.Store. The finding rows and states
// are streamed to COPY as they are encoded, not gathered first: a run of
// ten million effects has hundreds of thousands of findings.
func (s *Store) RecordFindings(ctx context.Context, p *ledgerdb.FindingsParams) (*ledgerdb.FindingsResult, error) {
	res := &ledgerdb.FindingsResult{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.now()
		var confirmKeys, confirmIDs []string
		for i := range p.Discrepancies {
			d := &p.Discrepancies[i]
			if d.EffectKey != "" && d.Class == reconcile.Confirmed && len(d.Transactions) == 1 {
				confirmKeys = append(confirmKeys, d.EffectKey)
				confirmIDs = append(confirmIDs, ledgerdb.ConfirmingID(&d.Transactions[0]))
			}
		}
		tag, err := tx.Exec(ctx, `UPDATE effect e SET status = 'confirmed', external_id = coalesce(e.external_id, c.id), confirmed_at = $3
			FROM unnest($1::text[], $2::text[]) AS c(key, id) WHERE e.key = c.key AND e.status = 'attempted'`,
			nonNil(confirmKeys), nonNil(confirmIDs), now)
		if err != nil {
			return err
		}
		res.Confirmed = int(tag.RowsAffected())
		i, seq := 0, 0
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"finding"}, []string{"run_id", "seq", "class", "effect_key", "provider", "currency",
			"expected_minor", "observed_minor", "transactions", "actions", "reason"}, pgx.CopyFromFunc(func() ([]any, error) {
			for ; i < len(p.Discrepancies); i++ {
				d := &p.Discrepancies[i]
				if d.Class == reconcile.Confirmed {
					continue
				}
				row, err := ledgerdb.EncodeFinding(d)
				if err != nil {
					return nil, err
				}
				i, seq = i+1, seq+1
				return []any{p.RunID, seq, string(d.Class), d.EffectKey, d.Provider, d.Currency,
					d.ExpectedMinor, d.ObservedMinor, string(row.Transactions), string(row.Actions), d.Reason}, nil
			}
			return nil, nil
		})); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE state_in (LIKE effect_state) ON COMMIT DROP`); err != nil {
			return err
		}
		i = 0
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"state_in"}, []string{"key", "class", "final", "run_id", "classified_at", "since"},
			pgx.CopyFromFunc(func() ([]any, error) {
				for ; i < len(p.Discrepancies); i++ {
					if d := &p.Discrepancies[i]; d.EffectKey != "" {
						i++
						return []any{d.EffectKey, string(d.Class), ledgerdb.IsFinal(d), p.RunID, now, now}, nil
					}
				}
				return nil, nil
			})); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO effect_state SELECT * FROM state_in
			ON CONFLICT (key) DO UPDATE SET class = EXCLUDED.class, final = EXCLUDED.final, run_id = EXCLUDED.run_id,
			classified_at = EXCLUDED.classified_at,
			since = CASE WHEN effect_state.class = EXCLUDED.class THEN effect_state.since ELSE EXCLUDED.since END`)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record findings of run %s: %w", p.RunID, err)
	}
	return res, nil
}

// Findings implements ledgerdb.Store.
func (s *Store) Findings(ctx context.Context, runID string) ([]reconcile.Discrepancy, error) {
	rows, err := s.pool.Query(ctx, `SELECT class, effect_key, provider, currency, expected_minor, observed_minor, transactions, actions, reason
		FROM finding WHERE run_id = $1 ORDER BY seq`, runID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (reconcile.Discrepancy, error) {
		var (
			d          reconcile.Discrepancy
			class      string
			txs, actns []byte
		)
		if err := r.Scan(&class, &d.EffectKey, &d.Provider, &d.Currency, &d.ExpectedMinor, &d.ObservedMinor, &txs, &actns, &d.Reason); err != nil {
			return d, err
		}
		d.Class = reconcile.Class(class)
		return d, ledgerdb.DecodeFinding(&d, txs, actns)
	})
}

// nonNil turns a nil list into an empty one: pgx sends nil as NULL, and
// "x = ANY(NULL)" is not false but NULL, which NOT does not undo.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
