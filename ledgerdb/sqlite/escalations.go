package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

const escalationCols = `key, subject, class, reason, run_id, status, generation, opened_at, paged_at, resolved_at, resolved_by, note, acknowledged_at, acknowledged_by`

// childOf is the SQL condition "col is key or a key derived from it"
// (key:...), with key as the parameter ?n. ':' sorts just before ';' in
// SQLite's binary collation, so the derived keys are one range.
func childOf(col, n string) string {
	return fmt.Sprintf("(%[1]s = %[2]s OR (%[1]s > %[2]s || ':' AND %[1]s < %[2]s || ';'))", col, n)
}

func scanEscalation(row scanner) (*reconcile.Escalation, error) {
	var (
		e                                            reconcile.Escalation
		class, status, opened                        string
		paged, resolved, resolvedBy, note, acked, by sql.NullString
	)
	if err := row.Scan(&e.Key, &e.Subject, &class, &e.Reason, &e.RunID, &status, &e.Generation, &opened, &paged, &resolved,
		&resolvedBy, &note, &acked, &by); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, reconcile.ErrNotFound
		}
		return nil, err
	}
	e.Class, e.Status = reconcile.Class(class), reconcile.EscalationStatus(status)
	e.ResolvedBy, e.Note, e.AcknowledgedBy = resolvedBy.String, note.String, by.String
	var err error
	if e.OpenedAt, err = parseTS(sql.NullString{String: opened, Valid: true}); err != nil {
		return nil, err
	}
	if e.PagedAt, err = parseTS(paged); err != nil {
		return nil, err
	}
	if e.ResolvedAt, err = parseTS(resolved); err != nil {
		return nil, err
	}
	if e.AcknowledgedAt, err = parseTS(acked); err != nil {
		return nil, err
	}
	return &e, nil
}

// EscalationOpen implements ledgerdb.Store: one conditional upsert that opens the
// escalation, or opens a resolved one again under the next generation.
func (s *Store) EscalationOpen(ctx context.Context, p *ledgerdb.EscalateParams) (*ledgerdb.EscalateResult, error) {
	var res *ledgerdb.EscalateResult
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		e, err := scanEscalation(tx.QueryRowContext(ctx, `
			INSERT INTO escalation (key, subject, class, reason, run_id, status, generation, opened_at)
			VALUES (?, ?, ?, ?, ?, 'open', 1, ?)
			ON CONFLICT (key) DO UPDATE
			SET status = 'open', generation = escalation.generation + 1, reason = excluded.reason, run_id = excluded.run_id,
			    opened_at = excluded.opened_at, paged_at = NULL, resolved_at = NULL, resolved_by = NULL, note = NULL,
			    acknowledged_at = NULL, acknowledged_by = NULL
			WHERE escalation.status = 'resolved'
			RETURNING `+escalationCols, p.Key, p.Subject, string(p.Class), p.Reason, p.RunID, ts(s.now())))
		if err == nil {
			res = &ledgerdb.EscalateResult{Escalation: *e, Opened: true}
			return nil
		}
		if !errors.Is(err, reconcile.ErrNotFound) {
			return err
		}
		if e, err = scanEscalation(tx.QueryRowContext(ctx, `SELECT `+escalationCols+` FROM escalation WHERE key = ?`, p.Key)); err != nil {
			return err
		}
		res = &ledgerdb.EscalateResult{Escalation: *e}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("escalate %s: %w", p.Key, err)
	}
	return res, nil
}

// EscalationAcknowledge implements ledgerdb.Store.
func (s *Store) EscalationAcknowledge(ctx context.Context, p *ledgerdb.AcknowledgeParams) (*reconcile.Escalation, error) {
	var out *reconcile.Escalation
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		e, err := scanEscalation(tx.QueryRowContext(ctx, `UPDATE escalation SET status = 'acknowledged', acknowledged_at = ?, acknowledged_by = ?
			WHERE key = ? AND status = 'open' RETURNING `+escalationCols, ts(s.now()), p.By, p.Key))
		if !errors.Is(err, reconcile.ErrNotFound) {
			out = e
			return err
		}
		if e, err = scanEscalation(tx.QueryRowContext(ctx, `SELECT `+escalationCols+` FROM escalation WHERE key = ?`, p.Key)); err != nil {
			return err
		}
		out, err = driver.Acknowledged(e)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("acknowledge %s: %w", p.Key, err)
	}
	return out, nil
}

// EscalationMarkPaged implements ledgerdb.Store.
func (s *Store) EscalationMarkPaged(ctx context.Context, p *ledgerdb.MarkPagedParams) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE escalation SET paged_at = ? WHERE key = ? AND generation = ? AND paged_at IS NULL`,
			ts(s.now()), p.Key, p.Generation)
		return err
	})
}

// EscalationList implements ledgerdb.Store.
func (s *Store) EscalationList(ctx context.Context, p *ledgerdb.EscalationsParams) ([]reconcile.Escalation, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+escalationCols+` FROM escalation
		WHERE (?1 = '' OR `+childOf("subject", "?1")+`) AND (NOT ?2 OR status <> 'resolved')
		  AND (?3 IS NULL OR (status = 'resolved' AND resolved_at > ?3))
		ORDER BY opened_at, key`, p.Subject, p.Open, nullTS(p.ResolvedSince))
	if err != nil {
		return nil, err
	}
	return collectEscalations(rows)
}

func collectEscalations(rows *sql.Rows) ([]reconcile.Escalation, error) {
	defer rows.Close()
	var out []reconcile.Escalation
	for rows.Next() {
		e, err := scanEscalation(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *e)
	}
	return out, rows.Err()
}

// EffectResolve implements ledgerdb.Store.
func (s *Store) EffectResolve(ctx context.Context, p *ledgerdb.ResolveParams) (*ledgerdb.ResolveResult, error) {
	res := &ledgerdb.ResolveResult{}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		now := ts(s.now())
		e, err := scanEffect(tx.QueryRowContext(ctx, `SELECT `+effectCols+` FROM effect WHERE key = ?`, p.EffectKey))
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO resolution (effect_key, resolved_as, note, resolved_by, resolved_at) VALUES (?, ?, ?, ?, ?)`,
			p.EffectKey, string(p.As), p.Note, p.By, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO effect_state (key, class, final, run_id, classified_at, since) VALUES (?1, ?2, 1, '', ?3, ?3)
			ON CONFLICT (key) DO UPDATE SET class = excluded.class, final = 1, classified_at = excluded.classified_at, since = excluded.since`,
			p.EffectKey, string(reconcile.ClassResolved), now); err != nil {
			return err
		}
		switch status, ext := driver.ResolvedStatus(e, p); status {
		case reconcile.StatusAbandoned:
			e, err = scanEffect(tx.QueryRowContext(ctx, `UPDATE effect SET status = 'abandoned' WHERE key = ? RETURNING `+effectCols, p.EffectKey))
		case reconcile.StatusConfirmed:
			e, err = scanEffect(tx.QueryRowContext(ctx, `UPDATE effect SET status = 'confirmed', external_id = ?, confirmed_at = ?
				WHERE key = ? RETURNING `+effectCols, ext, now, p.EffectKey))
		}
		if err != nil {
			return err
		}
		res.Effect = *e
		rows, err := tx.QueryContext(ctx, `UPDATE escalation SET status = 'resolved', resolved_at = ?2, resolved_by = ?3, note = ?4
			WHERE `+childOf("subject", "?1")+` AND status <> 'resolved' RETURNING `+escalationCols, p.EffectKey, now, p.By, p.Note)
		if err != nil {
			return err
		}
		res.Closed, err = collectEscalations(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", p.EffectKey, err)
	}
	return res, nil
}

// EffectStateGetMany implements ledgerdb.Store.
func (s *Store) EffectStateGetMany(ctx context.Context, keys []string) (map[string]reconcile.EffectState, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT key, class, final, run_id, classified_at, since FROM effect_state
		WHERE key IN (SELECT value FROM json_each(?))`, jsonList(keys))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]reconcile.EffectState{}
	for rows.Next() {
		var (
			st                reconcile.EffectState
			class             string
			classified, since sql.NullString
		)
		if err := rows.Scan(&st.Key, &class, &st.Final, &st.RunID, &classified, &since); err != nil {
			return nil, err
		}
		st.Class = reconcile.Class(class)
		if st.ClassifiedAt, err = parseTS(classified); err != nil {
			return nil, err
		}
		if st.Since, err = parseTS(since); err != nil {
			return nil, err
		}
		out[st.Key] = st
	}
	return out, rows.Err()
}

// FindingListByEffect implements ledgerdb.Store.
func (s *Store) FindingListByEffect(ctx context.Context, effectKey string) ([]ledgerdb.RunFinding, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT f.run_id, r.started_at, f.class, f.effect_key, f.provider, f.currency, f.expected_minor,
		f.observed_minor, f.transactions, f.actions, f.reason
		FROM finding f JOIN run r ON r.id = f.run_id WHERE f.effect_key = ? ORDER BY r.started_at, f.run_id`, effectKey)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ledgerdb.RunFinding
	for rows.Next() {
		var (
			f                 ledgerdb.RunFinding
			class, txs, actns string
			at                sql.NullString
		)
		if err := rows.Scan(&f.RunID, &at, &class, &f.EffectKey, &f.Provider, &f.Currency, &f.ExpectedMinor, &f.ObservedMinor,
			&txs, &actns, &f.Reason); err != nil {
			return nil, err
		}
		f.Class = reconcile.Class(class)
		if f.At, err = parseTS(at); err != nil {
			return nil, err
		}
		if err := driver.DecodeFinding(&f.Discrepancy, []byte(txs), []byte(actns)); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// ClaimListByEffect implements ledgerdb.Store.
func (s *Store) ClaimListByEffect(ctx context.Context, effectKey string) ([]reconcile.Claim, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+claimCols+` FROM claim WHERE `+childOf("key", "?1")+` ORDER BY key`, effectKey)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []reconcile.Claim
	for rows.Next() {
		c, err := scanClaim(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *c)
	}
	return out, rows.Err()
}
