package job

import (
	"context"
	"log/slog"

	"reconcile"
	"reconcile/escalate"
	"reconcile/ledgerdb"
)

// Acknowledge records that by took the open escalation key in hand, and
// acknowledges its page. An unknown key fails with reconcile.ErrNotFound,
// a resolved one with reconcile.ErrInvalidTransition.
func Acknowledge(ctx context.Context, store ledgerdb.Store, pager escalate.Pager, log *slog.Logger, key, by string) (*reconcile.Escalation, error) {
	e, err := store.EscalationAcknowledge(ctx, &ledgerdb.AcknowledgeParams{Key: key, By: by})
	if err != nil {
		return nil, err
	}
	return e, (&escalate.Raiser{Store: store, Pager: pager, Log: log}).Acknowledged(ctx, e)
}

// Resolve records a person's decision on an effect, closes every
// escalation about it, and resolves their pages. An unknown effect fails
// with reconcile.ErrNotFound.
func Resolve(ctx context.Context, store ledgerdb.Store, pager escalate.Pager, log *slog.Logger, p *ledgerdb.ResolveParams) (*ledgerdb.ResolveResult, error) {
	out, err := store.EffectResolve(ctx, p)
	if err != nil {
		return nil, err
	}
	return out, (&escalate.Raiser{Store: store, Pager: pager, Log: log}).Resolved(ctx, out.Closed)
}
