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
	"reconcile/ledgerdb/postgres/internal/dbsqlc"
)

// escalationOf converts an escalation row, its times in UTC.
func escalationOf(r dbsqlc.Escalation) reconcile.Escalation {
	return reconcile.Escalation{Key: r.Key, Subject: r.Subject, Class: reconcile.Class(r.Class), Reason: r.Reason, RunID: r.RunID,
		Status: reconcile.EscalationStatus(r.Status), Generation: r.Generation, OpenedAt: r.OpenedAt.UTC(), PagedAt: utcOf(r.PagedAt),
		AcknowledgedAt: utcOf(r.AcknowledgedAt), AcknowledgedBy: textOf(r.AcknowledgedBy), ResolvedAt: utcOf(r.ResolvedAt),
		ResolvedBy: textOf(r.ResolvedBy), Note: textOf(r.Note)}
}

// escalationsOf converts escalation rows.
func escalationsOf(rows []dbsqlc.Escalation) []reconcile.Escalation {
	out := make([]reconcile.Escalation, len(rows))
	for i, r := range rows {
		out[i] = escalationOf(r)
	}
	return out
}

// EscalationOpen implements ledgerdb.Store: one conditional upsert that opens the
// escalation, or opens a resolved one again under the next generation.
func (s *Store) EscalationOpen(ctx context.Context, p *ledgerdb.EscalateParams) (*ledgerdb.EscalateResult, error) {
	q := dbsqlc.New(s.pool)
	e, err := q.EscalationOpenUpsert(ctx, dbsqlc.EscalationOpenUpsertParams{Key: p.Key, Subject: p.Subject, Class: string(p.Class),
		Reason: p.Reason, RunID: p.RunID, OpenedAt: s.now()})
	if err == nil {
		return &ledgerdb.EscalateResult{Escalation: escalationOf(e), Opened: true}, nil
	}
	if err = interpretError(err); !errors.Is(err, reconcile.ErrNotFound) {
		return nil, fmt.Errorf("escalate %s: %w", p.Key, err)
	}
	if e, err = q.EscalationGet(ctx, p.Key); err != nil {
		return nil, fmt.Errorf("escalate %s: %w", p.Key, interpretError(err))
	}
	return &ledgerdb.EscalateResult{Escalation: escalationOf(e)}, nil
}

// EscalationAcknowledge implements ledgerdb.Store.
func (s *Store) EscalationAcknowledge(ctx context.Context, p *ledgerdb.AcknowledgeParams) (*reconcile.Escalation, error) {
	q := dbsqlc.New(s.pool)
	r, err := q.EscalationAcknowledgeUpdate(ctx, dbsqlc.EscalationAcknowledgeUpdateParams{Key: p.Key, AcknowledgedAt: s.now(),
		AcknowledgedBy: p.By})
	if err == nil {
		e := escalationOf(r)
		return &e, nil
	}
	if err = interpretError(err); !errors.Is(err, reconcile.ErrNotFound) {
		return nil, err
	}
	if r, err = q.EscalationGet(ctx, p.Key); err != nil {
		return nil, fmt.Errorf("acknowledge %s: %w", p.Key, interpretError(err))
	}
	e := escalationOf(r)
	return driver.Acknowledged(&e)
}

// EscalationMarkPaged implements ledgerdb.Store.
func (s *Store) EscalationMarkPaged(ctx context.Context, p *ledgerdb.MarkPagedParams) error {
	return dbsqlc.New(s.pool).EscalationMarkPagedUpdate(ctx, dbsqlc.EscalationMarkPagedUpdateParams{Key: p.Key,
		Generation: p.Generation, PagedAt: s.now()})
}

// EscalationList implements ledgerdb.Store.
func (s *Store) EscalationList(ctx context.Context, p *ledgerdb.EscalationsParams) ([]reconcile.Escalation, error) {
	var since *time.Time
	if !p.ResolvedSince.IsZero() {
		since = &p.ResolvedSince
	}
	rows, err := dbsqlc.New(s.pool).EscalationList(ctx, dbsqlc.EscalationListParams{Subject: p.Subject,
		ChildPattern: childPattern(p.Subject), OpenOnly: p.Open, ResolvedSince: since})
	if err != nil {
		return nil, err
	}
	return escalationsOf(rows), nil
}

// EffectResolve implements ledgerdb.Store.
func (s *Store) EffectResolve(ctx context.Context, p *ledgerdb.ResolveParams) (*ledgerdb.ResolveResult, error) {
	res := &ledgerdb.ResolveResult{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q, now := dbsqlc.New(tx), s.now()
		r, err := q.EffectGetForUpdate(ctx, p.EffectKey)
		if err != nil {
			return interpretError(err)
		}
		if err := q.ResolutionInsert(ctx, dbsqlc.ResolutionInsertParams{EffectKey: p.EffectKey, ResolvedAs: string(p.As), Note: p.Note,
			ResolvedBy: p.By, ResolvedAt: now}); err != nil {
			return err
		}
		if err := q.EffectStateResolveUpsert(ctx, dbsqlc.EffectStateResolveUpsertParams{Key: p.EffectKey,
			Class: string(reconcile.ClassResolved), At: now}); err != nil {
			return err
		}
		switch status, ext := driver.ResolvedStatus(effectOf(r), p); status {
		case reconcile.StatusAbandoned:
			r, err = q.EffectResolveAbandon(ctx, p.EffectKey)
		case reconcile.StatusConfirmed:
			r, err = q.EffectResolveConfirm(ctx, dbsqlc.EffectResolveConfirmParams{Key: p.EffectKey, ExternalID: ext, ConfirmedAt: now})
		}
		if err != nil {
			return interpretError(err)
		}
		res.Effect = *effectOf(r)
		closed, err := q.EscalationResolveBySubject(ctx, dbsqlc.EscalationResolveBySubjectParams{Subject: p.EffectKey,
			ChildPattern: childPattern(p.EffectKey), ResolvedAt: now, ResolvedBy: p.By, Note: p.Note})
		if err != nil {
			return err
		}
		res.Closed = escalationsOf(closed)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", p.EffectKey, err)
	}
	return res, nil
}

// EffectStateGetMany implements ledgerdb.Store.
func (s *Store) EffectStateGetMany(ctx context.Context, keys []string) (map[string]reconcile.EffectState, error) {
	rows, err := dbsqlc.New(s.pool).EffectStateGetMany(ctx, nonNil(keys))
	if err != nil {
		return nil, err
	}
	out := map[string]reconcile.EffectState{}
	for _, r := range rows {
		out[r.Key] = reconcile.EffectState{Key: r.Key, Class: reconcile.Class(r.Class), Final: r.Final, RunID: r.RunID,
			ClassifiedAt: r.ClassifiedAt.UTC(), Since: r.Since.UTC()}
	}
	return out, nil
}

// FindingListByEffect implements ledgerdb.Store.
func (s *Store) FindingListByEffect(ctx context.Context, effectKey string) ([]ledgerdb.RunFinding, error) {
	rows, err := dbsqlc.New(s.pool).FindingListByEffect(ctx, effectKey)
	if err != nil {
		return nil, err
	}
	out := make([]ledgerdb.RunFinding, len(rows))
	for i, r := range rows {
		d, err := discrepancyOf(r.Finding)
		if err != nil {
			return nil, err
		}
		out[i] = ledgerdb.RunFinding{RunID: r.Finding.RunID, At: r.StartedAt.UTC(), Discrepancy: d}
	}
	return out, nil
}

// ClaimListByEffect implements ledgerdb.Store.
func (s *Store) ClaimListByEffect(ctx context.Context, effectKey string) ([]reconcile.Claim, error) {
	rows, err := dbsqlc.New(s.pool).ClaimListByEffect(ctx, dbsqlc.ClaimListByEffectParams{EffectKey: effectKey,
		ChildPattern: childPattern(effectKey)})
	if err != nil {
		return nil, err
	}
	return claimsOf(rows), nil
}

// childPattern is the LIKE pattern of the keys derived from key: its
// compensations, escalations and pages (key:...). LIKE's wildcards in key
// are escaped with a backslash.
func childPattern(key string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(key) + ":%"
}
