package escalate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
)

// Raiser records escalations in the ledger and pages each one once. It
// imports the ledger's interface, not a driver: the escalation table is
// what makes paging once hold across runs and replicas.
type Raiser struct {
	Store ledgerdb.Store
	Pager Pager
	Owner string        // who pages, for the claim table
	Lease time.Duration // how long a page may take before another run may send it; default 2m
	Log   *slog.Logger  // nil: discard
}

func (r *Raiser) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// Raise records the escalation, or finds it open, and pages it unless that
// generation was paged already. A page that fails is logged and retried by
// the next Raise of the same key: the escalation stays recorded either way.
func (r *Raiser) Raise(ctx context.Context, p *ledgerdb.EscalateParams) (*reconcile.Escalation, error) {
	res, err := r.Store.Escalate(ctx, p)
	if err != nil {
		return nil, err
	}
	esc := &res.Escalation
	if !esc.PagedAt.IsZero() || esc.Status == reconcile.EscalationResolved {
		return esc, nil
	}
	lease := r.Lease
	if lease <= 0 {
		lease = 2 * time.Minute
	}
	pageKey := fmt.Sprintf("page:%s#%d", esc.Key, esc.Generation)
	c, err := r.Store.Claim(ctx, &ledgerdb.ClaimParams{Key: pageKey, Owner: r.Owner, TTL: lease})
	if err != nil {
		return nil, err
	}
	switch c.Outcome {
	case reconcile.InFlight: // another run is paging it right now
		return esc, nil
	case reconcile.Done: // paged, but the mark was lost in a crash
		return esc, r.Store.MarkPaged(ctx, &ledgerdb.MarkPagedParams{Key: esc.Key, Generation: esc.Generation})
	}
	perr := r.Pager.Trigger(ctx, esc)
	settle := &ledgerdb.SettleParams{Key: pageKey, Fence: c.Claim.Fence, Owner: r.Owner, Success: perr == nil}
	if perr != nil {
		settle.Error = perr.Error()
	} else {
		settle.Result, _ = json.Marshal(map[string]string{"dedup_key": esc.Key})
	}
	ctx = context.WithoutCancel(ctx) // the page went out: record it even when the run is being stopped
	if _, err := r.Store.Settle(ctx, settle); err != nil {
		return nil, err
	}
	if perr != nil {
		r.log().Error("page failed; the next run retries it", "escalation", esc.Key, "err", perr)
		return esc, nil
	}
	if err := r.Store.MarkPaged(ctx, &ledgerdb.MarkPagedParams{Key: esc.Key, Generation: esc.Generation}); err != nil {
		return nil, err
	}
	esc.PagedAt = time.Now().UTC()
	r.log().Warn("paged", "escalation", esc.Key, "class", esc.Class, "subject", esc.Subject)
	return esc, nil
}

// Acknowledged tells the pager that someone took a paged escalation in hand.
func (r *Raiser) Acknowledged(ctx context.Context, e *reconcile.Escalation) error {
	if e.PagedAt.IsZero() {
		return nil
	}
	return r.Pager.Acknowledge(ctx, e)
}

// Resolved tells the pager that escalations were resolved. Every one is
// tried; the errors are joined.
func (r *Raiser) Resolved(ctx context.Context, closed []reconcile.Escalation) error {
	var errs []error
	for i := range closed {
		if closed[i].PagedAt.IsZero() {
			continue // never paged: nothing to resolve at the pager
		}
		if err := r.Pager.Resolve(ctx, &closed[i]); err != nil {
			errs = append(errs, fmt.Errorf("resolve page %s: %w", closed[i].Key, err))
		}
	}
	return errors.Join(errs...)
}
