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

// escalationFromRow converts an escalation row.
func escalationFromRow(r dbsqlc.Escalation) (*reconcile.Escalation, error) {
	e := reconcile.Escalation{
		Key:            r.Key,
		Subject:        r.Subject,
		Class:          reconcile.Class(r.Class),
		Reason:         r.Reason,
		RunID:          r.RunID,
		Status:         reconcile.EscalationStatus(r.Status),
		Generation:     int(r.Generation),
		ResolvedBy:     text(r.ResolvedBy),
		Note:           text(r.Note),
		AcknowledgedBy: text(r.AcknowledgedBy),
	}
	var err error
	if e.OpenedAt, err = parseTime(r.OpenedAt); err != nil {
		return nil, err
	}
	if e.PagedAt, err = parseNullTS(r.PagedAt); err != nil {
		return nil, err
	}
	if e.ResolvedAt, err = parseNullTS(r.ResolvedAt); err != nil {
		return nil, err
	}
	if e.AcknowledgedAt, err = parseNullTS(r.AcknowledgedAt); err != nil {
		return nil, err
	}
	return &e, nil
}

// readEscalation is the escalation that a :one query read, or its error
// through interpretError.
func readEscalation(r dbsqlc.Escalation, err error) (*reconcile.Escalation, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	return escalationFromRow(r)
}

// escalationsFromRows converts the rows of a :many query.
func escalationsFromRows(rows []dbsqlc.Escalation) ([]reconcile.Escalation, error) {
	var out []reconcile.Escalation
	for _, r := range rows {
		e, err := escalationFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, *e)
	}
	return out, nil
}

// EscalationOpen implements ledgerdb.Store: one conditional upsert that opens the
// escalation, or opens a resolved one again under the next generation.
func (s *Store) EscalationOpen(ctx context.Context, p *ledgerdb.EscalateParams) (*ledgerdb.EscalateResult, error) {
	var res *ledgerdb.EscalateResult
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		q := dbsqlc.New(tx)
		e, err := readEscalation(q.EscalationOpenUpsert(ctx, dbsqlc.EscalationOpenUpsertParams{
			Key:      p.Key,
			Subject:  p.Subject,
			Class:    string(p.Class),
			Reason:   p.Reason,
			RunID:    p.RunID,
			OpenedAt: ts(s.now()),
		}))
		if err == nil {
			res = &ledgerdb.EscalateResult{Escalation: *e, Opened: true}
			return nil
		}
		if !errors.Is(err, reconcile.ErrNotFound) {
			return err
		}
		if e, err = readEscalation(q.EscalationGet(ctx, p.Key)); err != nil {
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
		q := dbsqlc.New(tx)
		now := ts(s.now())
		e, err := readEscalation(q.EscalationAcknowledgeOpen(ctx, dbsqlc.EscalationAcknowledgeOpenParams{
			AcknowledgedAt: &now,
			AcknowledgedBy: &p.By,
			Key:            p.Key,
		}))
		if !errors.Is(err, reconcile.ErrNotFound) {
			out = e
			return err
		}
		if e, err = readEscalation(q.EscalationGet(ctx, p.Key)); err != nil {
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
		now := ts(s.now())
		return dbsqlc.New(tx).EscalationMarkPaged(ctx, dbsqlc.EscalationMarkPagedParams{
			PagedAt:    &now,
			Key:        p.Key,
			Generation: int64(p.Generation),
		})
	})
}

// EscalationList implements ledgerdb.Store.
func (s *Store) EscalationList(ctx context.Context, p *ledgerdb.EscalationsParams) ([]reconcile.Escalation, error) {
	rows, err := s.q.EscalationList(ctx, dbsqlc.EscalationListParams{
		Subject:       p.Subject,
		Open:          p.Open,
		ResolvedSince: nullTS(p.ResolvedSince),
	})
	if err != nil {
		return nil, err
	}
	return escalationsFromRows(rows)
}

// EffectResolve implements ledgerdb.Store.
func (s *Store) EffectResolve(ctx context.Context, p *ledgerdb.ResolveParams) (*ledgerdb.ResolveResult, error) {
	res := &ledgerdb.ResolveResult{}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		q := dbsqlc.New(tx)
		now := ts(s.now())
		e, err := readEffect(q.EffectGet(ctx, p.EffectKey))
		if err != nil {
			return err
		}
		if err := q.ResolutionInsert(ctx, dbsqlc.ResolutionInsertParams{
			EffectKey:  p.EffectKey,
			ResolvedAs: string(p.As),
			Note:       p.Note,
			ResolvedBy: p.By,
			ResolvedAt: now,
		}); err != nil {
			return err
		}
		if err := q.EffectStateUpsertResolved(ctx, dbsqlc.EffectStateUpsertResolvedParams{
			Key:   p.EffectKey,
			Class: string(reconcile.ClassResolved),
			At:    now,
		}); err != nil {
			return err
		}
		switch status, ext := driver.ResolvedStatus(e, p); status {
		case reconcile.StatusAbandoned:
			e, err = readEffect(q.EffectAbandonByResolution(ctx, p.EffectKey))
		case reconcile.StatusConfirmed:
			e, err = readEffect(q.EffectConfirmByResolution(ctx, dbsqlc.EffectConfirmByResolutionParams{
				ExternalID:  &ext,
				ConfirmedAt: &now,
				Key:         p.EffectKey,
			}))
		}
		if err != nil {
			return err
		}
		res.Effect = *e
		rows, err := q.EscalationResolveBySubject(ctx, dbsqlc.EscalationResolveBySubjectParams{
			ResolvedAt: &now,
			ResolvedBy: &p.By,
			Note:       &p.Note,
			Subject:    p.EffectKey,
		})
		if err != nil {
			return err
		}
		res.Closed, err = escalationsFromRows(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", p.EffectKey, err)
	}
	return res, nil
}

// effectStateFromRow converts an effect_state row.
func effectStateFromRow(r dbsqlc.EffectState) (reconcile.EffectState, error) {
	st := reconcile.EffectState{
		Key:   r.Key,
		Class: reconcile.Class(r.Class),
		Final: r.Final,
		RunID: r.RunID,
	}
	var err error
	if st.ClassifiedAt, err = parseTime(r.ClassifiedAt); err != nil {
		return st, err
	}
	st.Since, err = parseNullTS(r.Since)
	return st, err
}

// EffectStateGetMany implements ledgerdb.Store.
func (s *Store) EffectStateGetMany(ctx context.Context, keys []string) (map[string]reconcile.EffectState, error) {
	rows, err := s.q.EffectStateGetMany(ctx, jsonList(keys))
	if err != nil {
		return nil, err
	}
	out := map[string]reconcile.EffectState{}
	for _, r := range rows {
		st, err := effectStateFromRow(r)
		if err != nil {
			return nil, err
		}
		out[st.Key] = st
	}
	return out, nil
}

// FindingListByEffect implements ledgerdb.Store.
func (s *Store) FindingListByEffect(ctx context.Context, effectKey string) ([]ledgerdb.RunFinding, error) {
	rows, err := s.q.FindingListByEffect(ctx, effectKey)
	if err != nil {
		return nil, err
	}
	var out []ledgerdb.RunFinding
	for _, r := range rows {
		f := ledgerdb.RunFinding{RunID: r.Finding.RunID}
		if f.At, err = parseTime(r.StartedAt); err != nil {
			return nil, err
		}
		if f.Discrepancy, err = discrepancyFromRow(r.Finding); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// ClaimListByEffect implements ledgerdb.Store.
func (s *Store) ClaimListByEffect(ctx context.Context, effectKey string) ([]reconcile.Claim, error) {
	rows, err := s.q.ClaimListByEffect(ctx, effectKey)
	if err != nil {
		return nil, err
	}
	var out []reconcile.Claim
	for _, r := range rows {
		c, err := claimFromRow(r)
		if err != nil {
			return nil, err
		}
		out = append(out, *c)
	}
	return out, nil
}
