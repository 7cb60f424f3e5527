package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
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
	return s.queryEvidence(ctx, `WHERE ev.source_id NOT IN (SELECT value FROM json_each(?3)) AND (
		(ev.effect_key <> '' AND ev.effect_key IN (SELECT value FROM json_each(?1)))
		OR (ev.parent_effect_key <> '' AND ev.parent_effect_key IN (SELECT value FROM json_each(?1)))
		OR (ev.tx_id <> '' AND ev.tx_id IN (SELECT value FROM json_each(?2)))
		OR (ev.payment_intent <> '' AND ev.payment_intent IN (SELECT value FROM json_each(?2)))
		OR (ev.parent_tx_id <> '' AND ev.parent_tx_id IN (SELECT value FROM json_each(?2))))`,
		jsonList(p.Keys), jsonList(p.IDs), jsonList(p.ExcludeSources))
}

// FindingRecord implements ledgerdb.Store.
func (s *Store) FindingRecord(ctx context.Context, p *ledgerdb.FindingsParams) (*ledgerdb.FindingsResult, error) {
	res := &ledgerdb.FindingsResult{}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
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
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record findings of run %s: %w", p.RunID, err)
	}
	return res, nil
}

// FindingListByRun implements ledgerdb.Store.
func (s *Store) FindingListByRun(ctx context.Context, runID string) ([]reconcile.Discrepancy, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT class, effect_key, provider, currency, expected_minor, observed_minor, transactions, actions, reason
		FROM finding WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []reconcile.Discrepancy
	for rows.Next() {
		var (
			d          reconcile.Discrepancy
			class      string
			txs, actns string
		)
		if err := rows.Scan(&class, &d.EffectKey, &d.Provider, &d.Currency, &d.ExpectedMinor, &d.ObservedMinor, &txs, &actns, &d.Reason); err != nil {
			return nil, err
		}
		d.Class = reconcile.Class(class)
		if err := driver.DecodeFinding(&d, []byte(txs), []byte(actns)); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
