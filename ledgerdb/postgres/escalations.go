package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

const escalationCols = `key, subject, class, reason, run_id, status, generation, opened_at, paged_at, resolved_at, resolved_by, note, acknowledged_at, acknowledged_by`

func scanEscalation(row pgx.Row) (*reconcile.Escalation, error) {
	var (
		e                      reconcile.Escalation
		class, status          string
		paged, resolved, acked *time.Time
		resolvedBy, note, by   *string
	)
	if err := row.Scan(&e.Key, &e.Subject, &class, &e.Reason, &e.RunID, &status, &e.Generation, &e.OpenedAt, &paged, &resolved,
		&resolvedBy, &note, &acked, &by); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, reconcile.ErrNotFound
		}
		return nil, err
	}
	e.Class, e.Status = reconcile.Class(class), reconcile.EscalationStatus(status)
	e.OpenedAt = e.OpenedAt.UTC()
	if paged != nil {
		e.PagedAt = paged.UTC()
	}
	if resolved != nil {
		e.ResolvedAt = resolved.UTC()
	}
	if resolvedBy != nil {
		e.ResolvedBy = *resolvedBy
	}
	if note != nil {
		e.Note = *note
	}
	if acked != nil {
		e.AcknowledgedAt = acked.UTC()
	}
	if by != nil {
		e.AcknowledgedBy = *by
	}
	return &e, nil
}

// EscalationOpen implements ledgerdb.Store: one conditional upsert that opens the
// escalation, or opens a resolved one again under the next generation.
func (s *Store) EscalationOpen(ctx context.Context, p *ledgerdb.EscalateParams) (*ledgerdb.EscalateResult, error) {
	e, err := scanEscalation(s.pool.QueryRow(ctx, `
		INSERT INTO escalation (key, subject, class, reason, run_id, status, generation, opened_at)
		VALUES ($1, $2, $3, $4, $5, 'open', 1, $6)
		ON CONFLICT (key) DO UPDATE
		SET status = 'open', generation = escalation.generation + 1, reason = EXCLUDED.reason, run_id = EXCLUDED.run_id,
		    opened_at = EXCLUDED.opened_at, paged_at = NULL, resolved_at = NULL, resolved_by = NULL, note = NULL,
		    acknowledged_at = NULL, acknowledged_by = NULL
		WHERE escalation.status = 'resolved'
		RETURNING `+escalationCols, p.Key, p.Subject, string(p.Class), p.Reason, p.RunID, s.now()))
	if err == nil {
		return &ledgerdb.EscalateResult{Escalation: *e, Opened: true}, nil
	}
	if !errors.Is(err, reconcile.ErrNotFound) {
		return nil, fmt.Errorf("escalate %s: %w", p.Key, err)
	}
	if e, err = scanEscalation(s.pool.QueryRow(ctx, `SELECT `+escalationCols+` FROM escalation WHERE key = $1`, p.Key)); err != nil {
		return nil, fmt.Errorf("escalate %s: %w", p.Key, err)
	}
	return &ledgerdb.EscalateResult{Escalation: *e}, nil
}

// EscalationAcknowledge implements ledgerdb.Store.
func (s *Store) EscalationAcknowledge(ctx context.Context, p *ledgerdb.AcknowledgeParams) (*reconcile.Escalation, error) {
	e, err := scanEscalation(s.pool.QueryRow(ctx, `UPDATE escalation SET status = 'acknowledged', acknowledged_at = $2, acknowledged_by = $3
		WHERE key = $1 AND status = 'open' RETURNING `+escalationCols, p.Key, s.now(), p.By))
	if !errors.Is(err, reconcile.ErrNotFound) {
		return e, err
	}
	if e, err = scanEscalation(s.pool.QueryRow(ctx, `SELECT `+escalationCols+` FROM escalation WHERE key = $1`, p.Key)); err != nil {
		return nil, fmt.Errorf("acknowledge %s: %w", p.Key, err)
	}
	return driver.Acknowledged(e)
}

// EscalationMarkPaged implements ledgerdb.Store.
func (s *Store) EscalationMarkPaged(ctx context.Context, p *ledgerdb.MarkPagedParams) error {
	_, err := s.pool.Exec(ctx, `UPDATE escalation SET paged_at = $3 WHERE key = $1 AND generation = $2 AND paged_at IS NULL`,
		p.Key, p.Generation, s.now())
	return err
}

// EscalationList implements ledgerdb.Store.
func (s *Store) EscalationList(ctx context.Context, p *ledgerdb.EscalationsParams) ([]reconcile.Escalation, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+escalationCols+` FROM escalation
		WHERE ($1 = '' OR subject = $1 OR subject LIKE $2) AND (NOT $3 OR status <> 'resolved')
		  AND ($4::timestamptz IS NULL OR (status = 'resolved' AND resolved_at > $4))
		ORDER BY opened_at, key`, p.Subject, childPattern(p.Subject), p.Open, nullTime(p.ResolvedSince))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (reconcile.Escalation, error) {
		e, err := scanEscalation(r)
		if err != nil {
			return reconcile.Escalation{}, err
		}
		return *e, nil
	})
}

// EffectResolve implements ledgerdb.Store.
func (s *Store) EffectResolve(ctx context.Context, p *ledgerdb.ResolveParams) (*ledgerdb.ResolveResult, error) {
	res := &ledgerdb.ResolveResult{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.now()
		e, err := scanEffect(tx.QueryRow(ctx, `SELECT `+effectCols+` FROM effect WHERE key = $1 FOR UPDATE`, p.EffectKey))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO resolution (effect_key, resolved_as, note, resolved_by, resolved_at) VALUES ($1, $2, $3, $4, $5)`,
			p.EffectKey, string(p.As), p.Note, p.By, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO effect_state (key, class, final, run_id, classified_at, since) VALUES ($1, $2, true, '', $3, $3)
			ON CONFLICT (key) DO UPDATE SET class = EXCLUDED.class, final = true, classified_at = EXCLUDED.classified_at, since = EXCLUDED.since`,
			p.EffectKey, string(reconcile.ClassResolved), now); err != nil {
			return err
		}
		switch status, ext := driver.ResolvedStatus(e, p); status {
		case reconcile.StatusAbandoned:
			e, err = scanEffect(tx.QueryRow(ctx, `UPDATE effect SET status = 'abandoned' WHERE key = $1 RETURNING `+effectCols, p.EffectKey))
		case reconcile.StatusConfirmed:
			e, err = scanEffect(tx.QueryRow(ctx, `UPDATE effect SET status = 'confirmed', external_id = $2, confirmed_at = $3
				WHERE key = $1 RETURNING `+effectCols, p.EffectKey, ext, now))
		}
		if err != nil {
			return err
		}
		res.Effect = *e
		rows, err := tx.Query(ctx, `UPDATE escalation SET status = 'resolved', resolved_at = $3, resolved_by = $4, note = $5
			WHERE (subject = $1 OR subject LIKE $2) AND status <> 'resolved' RETURNING `+escalationCols,
			p.EffectKey, childPattern(p.EffectKey), now, p.By, p.Note)
		if err != nil {
			return err
		}
		res.Closed, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (reconcile.Escalation, error) {
			e, err := scanEscalation(r)
			if err != nil {
				return reconcile.Escalation{}, err
			}
			return *e, nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", p.EffectKey, err)
	}
	return res, nil
}

// EffectStateGetMany implements ledgerdb.Store.
func (s *Store) EffectStateGetMany(ctx context.Context, keys []string) (map[string]reconcile.EffectState, error) {
	rows, err := s.pool.Query(ctx, `SELECT key, class, final, run_id, classified_at, since FROM effect_state WHERE key = ANY($1)`, nonNil(keys))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]reconcile.EffectState{}
	for rows.Next() {
		var (
			st    reconcile.EffectState
			class string
		)
		if err := rows.Scan(&st.Key, &class, &st.Final, &st.RunID, &st.ClassifiedAt, &st.Since); err != nil {
			return nil, err
		}
		st.Class, st.ClassifiedAt, st.Since = reconcile.Class(class), st.ClassifiedAt.UTC(), st.Since.UTC()
		out[st.Key] = st
	}
	return out, rows.Err()
}

// FindingListByEffect implements ledgerdb.Store.
func (s *Store) FindingListByEffect(ctx context.Context, effectKey string) ([]ledgerdb.RunFinding, error) {
	rows, err := s.pool.Query(ctx, `SELECT f.run_id, r.started_at, f.class, f.effect_key, f.provider, f.currency, f.expected_minor,
		f.observed_minor, f.transactions, f.actions, f.reason
		FROM finding f JOIN run r ON r.id = f.run_id WHERE f.effect_key = $1 ORDER BY r.started_at, f.run_id`, effectKey)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledgerdb.RunFinding, error) {
		var (
			f          ledgerdb.RunFinding
			class      string
			txs, actns []byte
		)
		if err := r.Scan(&f.RunID, &f.At, &class, &f.EffectKey, &f.Provider, &f.Currency, &f.ExpectedMinor, &f.ObservedMinor,
			&txs, &actns, &f.Reason); err != nil {
			return f, err
		}
		f.At, f.Class = f.At.UTC(), reconcile.Class(class)
		return f, driver.DecodeFinding(&f.Discrepancy, txs, actns)
	})
}

// ClaimListByEffect implements ledgerdb.Store.
func (s *Store) ClaimListByEffect(ctx context.Context, effectKey string) ([]reconcile.Claim, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+claimCols+` FROM claim WHERE key = $1 OR key LIKE $2 ORDER BY key`,
		effectKey, childPattern(effectKey))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (reconcile.Claim, error) {
		c, err := scanClaim(r)
		if err != nil {
			return reconcile.Claim{}, err
		}
		return *c, nil
	})
}

// childPattern is the LIKE pattern of the keys derived from key: its
// compensations, escalations and pages (key:...). LIKE's wildcards in key
// are escaped with a backslash.
func childPattern(key string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(key) + ":%"
}
