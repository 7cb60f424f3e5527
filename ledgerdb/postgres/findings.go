package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

// EvidenceListLinked implements ledgerdb.Store. Each comparison names the
// "C" collation, the lookup indexes' (migration 013).
func (s *Store) EvidenceListLinked(ctx context.Context, p *ledgerdb.LinkParams) ([]reconcile.Evidence, error) {
	return s.queryEvidence(ctx, `WHERE NOT ev.source_id = ANY($3) AND (
		(ev.effect_key <> '' AND ev.effect_key COLLATE "C" = ANY($1)) OR (ev.parent_effect_key <> '' AND ev.parent_effect_key COLLATE "C" = ANY($1))
		OR (ev.tx_id <> '' AND ev.tx_id COLLATE "C" = ANY($2))
		OR (ev.payment_intent <> '' AND ev.payment_intent COLLATE "C" = ANY($2))
		OR (ev.parent_tx_id <> '' AND ev.parent_tx_id COLLATE "C" = ANY($2)))`,
		nonNil(p.Keys), nonNil(p.IDs), nonNil(p.ExcludeSources))
}

// FindingRecord implements ledgerdb.Store. The finding rows are streamed
// to COPY as they are encoded, not gathered first: a run of ten million
// effects has hundreds of thousands of findings.
func (s *Store) FindingRecord(ctx context.Context, p *ledgerdb.FindingsParams) (*ledgerdb.FindingsResult, error) {
	res, dec := &ledgerdb.FindingsResult{}, driver.Decide(p)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.now()
		keys, ids := make([]string, len(dec.Confirm)), make([]string, len(dec.Confirm))
		for i, c := range dec.Confirm {
			keys[i], ids[i] = c.Key, c.ExternalID
		}
		tag, err := tx.Exec(ctx, `UPDATE effect e SET status = 'confirmed', external_id = coalesce(e.external_id, c.id), confirmed_at = $3
			FROM unnest($1::text[], $2::text[]) AS c(key, id) WHERE e.key = c.key AND e.status = 'attempted'`, keys, ids, now)
		if err != nil {
			return err
		}
		res.Confirmed = int(tag.RowsAffected())
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"finding"}, []string{"run_id", "seq", "class", "effect_key", "provider", "currency",
			"expected_minor", "observed_minor", "transactions", "actions", "reason"}, pgx.CopyFromSlice(len(dec.Findings), func(i int) ([]any, error) {
			d := dec.Findings[i]
			row, err := driver.EncodeFinding(d)
			return []any{p.RunID, i + 1, string(d.Class), d.EffectKey, d.Provider, d.Currency,
				d.ExpectedMinor, d.ObservedMinor, string(row.Transactions), string(row.Actions), d.Reason}, err
		})); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE state_in (LIKE effect_state) ON COMMIT DROP`); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"state_in"}, []string{"key", "class", "final", "run_id", "classified_at", "since"},
			pgx.CopyFromSlice(len(dec.States), func(i int) ([]any, error) {
				st := &dec.States[i]
				return []any{st.Key, string(st.Class), st.Final, p.RunID, now, now}, nil
			})); err != nil {
			return err
		}
		if err := checkEffects(ctx, tx, "state_in"); err != nil {
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

// FindingListByRun implements ledgerdb.Store.
func (s *Store) FindingListByRun(ctx context.Context, runID string) ([]reconcile.Discrepancy, error) {
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
		return d, driver.DecodeFinding(&d, txs, actns)
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

// checkEffects fails when a key in table (a temporary table of states to
// write) names no effect: one join of the batch, where a foreign key would
// check and share-lock the effect row of each state (see migration 008).
// The matching's confirmations need no such check: their keys are those of
// the effects it read from the effect table, which no role but the owner
// may delete from.
func checkEffects(ctx context.Context, tx pgx.Tx, table string) error {
	var key string
	err := tx.QueryRow(ctx, `SELECT s.key FROM `+table+` s WHERE NOT EXISTS (SELECT 1 FROM effect e WHERE e.key = s.key) LIMIT 1`).Scan(&key)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("a state for %q, which is not an effect in the ledger", key)
}
