package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
	"reconcile/ledgerdb/sqlite/internal/dbsqlc"
)

// jsonList passes a list as one JSON array parameter, read in SQL with
// json_each: SQLite has no array parameters.
func jsonList[T any](v []T) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// EvidenceListLinked implements ledgerdb.Store.
func (s *Store) EvidenceListLinked(ctx context.Context, p *ledgerdb.LinkParams) ([]reconcile.Evidence, error) {
	rows, err := s.q.EvidenceListLinked(ctx, dbsqlc.EvidenceListLinkedParams{
		ExcludeSources: jsonList(p.ExcludeSources),
		Keys:           jsonList(p.Keys),
		IDs:            jsonList(p.IDs),
	})
	if err != nil {
		return nil, err
	}
	var out []reconcile.Evidence
	for _, r := range rows {
		e, err := evidenceFromRow(dbsqlc.EvidenceListBySourceRow(r))
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// FindingRecord implements ledgerdb.Store.
// Hand-written: bulk writes through three statements prepared once; generated queries are compiled again for every row.
func (s *Store) FindingRecord(ctx context.Context, p *ledgerdb.FindingsParams) (*ledgerdb.FindingsResult, error) {
	res, held := &ledgerdb.FindingsResult{}, s.kept.Held()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := insertDetails(ctx, tx, held, driver.Named(p.Discrepancies)); err != nil {
			return err
		}
		now := ts(s.now())
		insFinding, err := tx.PrepareContext(ctx, `INSERT INTO finding (run_id, seq, class, effect_key, provider, currency,
			expected_minor, observed_minor, transactions, actions, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer insFinding.Close()
		upState, err := tx.PrepareContext(ctx, `INSERT INTO effect_state (key, class, final, run_id, classified_at, since) VALUES (?1, ?2, ?3, ?4, ?5, ?5)
			ON CONFLICT (key) DO UPDATE SET class = excluded.class, final = excluded.final, run_id = excluded.run_id,
			classified_at = excluded.classified_at,
			since = CASE WHEN effect_state.class = excluded.class THEN effect_state.since ELSE excluded.since END`)
		if err != nil {
			return err
		}
		defer upState.Close()
		confirm, err := tx.PrepareContext(ctx, `UPDATE effect SET status = 'confirmed', external_id = coalesce(external_id, ?), confirmed_at = ?
			WHERE key = ? AND status = 'attempted'`)
		if err != nil {
			return err
		}
		defer confirm.Close()
		dec := driver.Decide(p)
		for i, d := range dec.Findings {
			row, err := driver.EncodeFinding(d)
			if err != nil {
				return err
			}
			if _, err := insFinding.ExecContext(ctx, p.RunID, i+1, string(d.Class), d.EffectKey, d.Provider, d.Currency,
				d.ExpectedMinor, d.ObservedMinor, string(row.Transactions), string(row.Actions), d.Reason); err != nil {
				return err
			}
		}
		if p.Marked != nil {
			if err := p.Marked(); err != nil {
				return err
			}
		}
		for _, st := range dec.States {
			if _, err := upState.ExecContext(ctx, st.Key, string(st.Class), st.Final, p.RunID, now); err != nil {
				return err
			}
		}
		for _, c := range dec.Confirm {
			r, err := confirm.ExecContext(ctx, c.ExternalID, now, c.Key)
			if err != nil {
				return err
			}
			n, _ := r.RowsAffected()
			res.Confirmed += int(n)
		}
		for _, id := range p.Sources {
			if _, err := tx.ExecContext(ctx, `UPDATE source SET run_id = ? WHERE id = ? AND run_id IS NULL`, p.RunID, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record findings of run %s: %w", p.RunID, err)
	}
	s.kept.Written(held)
	return res, nil
}

// discrepancyFromRow converts a finding row.
func discrepancyFromRow(r dbsqlc.Finding) (reconcile.Discrepancy, error) {
	d := reconcile.Discrepancy{
		Class:         reconcile.Class(r.Class),
		EffectKey:     r.EffectKey,
		Provider:      r.Provider,
		Currency:      r.Currency,
		ExpectedMinor: r.ExpectedMinor,
		ObservedMinor: r.ObservedMinor,
		Reason:        r.Reason,
	}
	err := driver.DecodeFinding(&d, []byte(r.Transactions), []byte(r.Actions))
	return d, err
}

// FindingListByRun implements ledgerdb.Store.
func (s *Store) FindingListByRun(ctx context.Context, runID string) ([]reconcile.Discrepancy, error) {
	rows, err := s.q.FindingListByRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	var out []reconcile.Discrepancy
	for _, r := range rows {
		d, err := discrepancyFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
