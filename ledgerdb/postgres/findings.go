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

// EvidenceListLinked implements ledgerdb.Store. Each comparison names the
// "C" collation, the lookup indexes' (migration 013).
func (s *Store) EvidenceListLinked(ctx context.Context, p *ledgerdb.LinkParams) ([]reconcile.Evidence, error) {
	rows, err := dbsqlc.New(s.pool).EvidenceListLinked(ctx, dbsqlc.EvidenceListLinkedParams{Keys: nonNil(p.Keys), Ids: nonNil(p.IDs),
		ExcludeSources: nonNil(p.ExcludeSources)})
	if err != nil {
		return nil, err
	}
	out := make([]reconcile.Evidence, 0, len(rows))
	for i, r := range rows {
		if i > 0 && r.Evidence.SourceID == rows[i-1].Evidence.SourceID && r.Evidence.Seq == rows[i-1].Evidence.Seq {
			continue // the same record, found twice
		}
		e, err := evidenceOf(dbsqlc.EvidenceListBySourceRow(r))
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// FindingRecord implements ledgerdb.Store. The finding rows are streamed
// to COPY as they are encoded, not gathered first: a run of ten million
// effects has hundreds of thousands of findings. Hand-written, whole: its
// COPYs and the statements over its temporary table are beyond sqlc.
func (s *Store) FindingRecord(ctx context.Context, p *ledgerdb.FindingsParams) (*ledgerdb.FindingsResult, error) {
	res, dec, held := &ledgerdb.FindingsResult{}, driver.Decide(p), s.kept.Held()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := copyDetails(ctx, tx, held, driver.Named(p.Discrepancies)); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"finding"}, []string{"run_id", "seq", "class", "effect_key", "provider", "currency",
			"expected_minor", "observed_minor", "transactions", "actions", "reason"}, pgx.CopyFromSlice(len(dec.Findings), func(i int) ([]any, error) {
			d := dec.Findings[i]
			row, err := driver.EncodeFinding(d)
			return []any{p.RunID, i + 1, string(d.Class), d.EffectKey, d.Provider, d.Currency,
				d.ExpectedMinor, d.ObservedMinor, string(row.Transactions), string(row.Actions), d.Reason}, err
		})); err != nil {
			return err
		}
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
		if p.Marked != nil {
			if err := p.Marked(); err != nil {
				return err
			}
		}
		// Once the mark is made: it sorts the same sources (source.sorted),
		// and would wait for these rows while this waited for it.
		if _, err := tx.Exec(ctx, `UPDATE source SET run_id = $1 WHERE id = ANY($2) AND run_id IS NULL`, p.RunID, nonNil(p.Sources)); err != nil {
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
		if err := writeStates(ctx, tx); err != nil {
			return err
		}
		// The effects given a state leave the list of those a run left
		// without one (match_sql.go), which the next run would read and
		// empty again.
		_, err = tx.Exec(ctx, `DELETE FROM effect_pending p USING state_in s WHERE p.key = s.key`)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record findings of run %s: %w", p.RunID, err)
	}
	s.kept.Written(held)
	return res, nil
}

// FindingListByRun implements ledgerdb.Store.
func (s *Store) FindingListByRun(ctx context.Context, runID string) ([]reconcile.Discrepancy, error) {
	rows, err := dbsqlc.New(s.pool).FindingListByRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	out := make([]reconcile.Discrepancy, len(rows))
	for i, r := range rows {
		if out[i], err = discrepancyOf(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// discrepancyOf converts a finding row, its transactions and actions
// decoded.
func discrepancyOf(r dbsqlc.Finding) (reconcile.Discrepancy, error) {
	d := reconcile.Discrepancy{Class: reconcile.Class(r.Class), EffectKey: r.EffectKey, Provider: r.Provider, Currency: r.Currency,
		ExpectedMinor: r.ExpectedMinor, ObservedMinor: r.ObservedMinor, Reason: r.Reason}
	err := driver.DecodeFinding(&d, r.Transactions, r.Actions)
	return d, err
}

// nonNil turns a nil list into an empty one: pgx sends nil as NULL, and
// "x = ANY(NULL)" is not false but NULL, which NOT does not undo.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// writeStates upserts the states in state_in into effect_state, and fails
// when one names no effect: one join of the batch, where a foreign key
// would check and share-lock the effect row of each state (see migration
// 008). Only the states the upsert inserted are checked (an inserted row's
// xmax is 0): a key that had a state was checked when it was first given
// one. Of those, a key that a run listed as left without a state
// (effect_pending) was read from the effect table by that run; only the
// others are looked up in effect, each probe fetching an effect row from a
// table the run has long left (a first night's 35k: 0.56 s; of 10M: 7.7 s).
// The matching's confirmations need no such check: their keys are those of
// the effects it read from the effect table, which no role but the owner
// may delete from.
func writeStates(ctx context.Context, tx pgx.Tx) error {
	var key string
	err := tx.QueryRow(ctx, `WITH up AS (INSERT INTO effect_state SELECT * FROM state_in
  ON CONFLICT (key) DO UPDATE SET class = EXCLUDED.class, final = EXCLUDED.final, run_id = EXCLUDED.run_id,
    classified_at = EXCLUDED.classified_at,
    since = CASE WHEN effect_state.class = EXCLUDED.class THEN effect_state.since ELSE EXCLUDED.since END
  RETURNING key, xmax = 0 AS inserted)
SELECT key FROM up WHERE inserted AND NOT EXISTS (SELECT 1 FROM effect_pending p WHERE p.key = up.key)
  AND NOT EXISTS (SELECT 1 FROM effect e WHERE e.key = up.key) LIMIT 1`).Scan(&key)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("a state for %q, which is not an effect in the ledger", key)
}
