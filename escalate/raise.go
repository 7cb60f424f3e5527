package escalate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
)

// Ledger is what paging needs of the ledger: the escalations, and the
// claims a page is sent under. A ledgerdb.Store is one.
type Ledger interface {
	EscalationOpen(ctx context.Context, p *ledgerdb.EscalateParams) (*ledgerdb.EscalateResult, error)
	EscalationList(ctx context.Context, p *ledgerdb.EscalationsParams) ([]reconcile.Escalation, error)
	EscalationMarkPaged(ctx context.Context, p *ledgerdb.MarkPagedParams) error
	ClaimAcquire(ctx context.Context, p *ledgerdb.ClaimParams) (*reconcile.ClaimResult, error)
	ClaimSettle(ctx context.Context, p *ledgerdb.SettleParams) (*reconcile.WriteResult, error)
	ClaimGetMany(ctx context.Context, keys []string) (map[string]*reconcile.Claim, error)
}

// Raiser records escalations in the ledger and pages each one once. It
// imports the ledger's interface, not a driver: the escalation table is
// what makes paging once hold across runs and replicas.
type Raiser struct {
	Store Ledger
	Pager Pager
	Owner string // who pages, for the claim table
	// Lease is how long a page may take before another run may send it;
	// default 2m. It must outlast Retry.Total.
	Lease time.Duration
	// Retry is how a page the pager did not take is tried again within
	// the run.
	Retry Retry
	// Critical is, per currency in minor units, the money at or above
	// which a page is critical; below it, in a currency not listed, or
	// when the money is not known, a page is error.
	Critical map[string]int64
	// Hold makes Raise record the escalation without paging it: the run
	// pages with PageOpen once its actions are made, so that a pager that
	// is slow or down never holds up a refund nor the claim it is made
	// under.
	Hold bool
	Log  *slog.Logger // nil: discard
}

// Retry says how often, and for how long, a page is tried again within a
// run when the pager did not take it for a reason that may pass: an answer
// 429 or 5xx, a timeout, a connection that failed. A page the pager
// refuses otherwise (400: a wrong routing key) is not tried again.
type Retry struct {
	Attempts int           // tries in all; 0 means 3
	Wait     time.Duration // before the second try, doubled for each after; 0 means 2s
	Total    time.Duration // the most one page's tries and waits take; 0 means 30s
}

func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 3
	}
	if r.Wait <= 0 {
		r.Wait = 2 * time.Second
	}
	if r.Total <= 0 {
		r.Total = 30 * time.Second
	}
	return r
}

func (r *Raiser) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// NewPage is the page of e, with the severity its money gives.
func (r *Raiser) NewPage(e *reconcile.Escalation, money reconcile.Money) *Page {
	p := &Page{Escalation: e, Severity: SeverityError, Money: money}
	cur := strings.ToUpper(money.Currency)
	if limit, ok := r.Critical[cur]; ok && cur != "" && (money.Minor >= limit || -money.Minor >= limit) {
		p.Severity = SeverityCritical
	}
	return p
}

// PageKey is the claim under which the page of e's generation is sent
// once.
func PageKey(e *reconcile.Escalation) string {
	return fmt.Sprintf("page:%s#%d", e.Key, e.Generation)
}

// Raise records the escalation, or finds it open, and pages it unless that
// generation was paged already, or Hold is set. A page that fails is
// logged and sent again by the next PageOpen, or the next Raise of the
// same key: the escalation stays recorded either way.
func (r *Raiser) Raise(ctx context.Context, p *ledgerdb.EscalateParams) (*reconcile.Escalation, error) {
	res, err := r.Store.EscalationOpen(ctx, p)
	if err != nil {
		return nil, err
	}
	esc := &res.Escalation
	if r.Hold || !esc.PagedAt.IsZero() || esc.Status == reconcile.EscalationStatusResolved {
		return esc, nil
	}
	if _, _, err := r.page(ctx, r.NewPage(esc, reconcile.Money{}), r.Retry.withDefaults()); err != nil {
		return nil, err
	}
	return esc, nil
}

// Paged is what PageOpen did.
type Paged struct {
	Sent   []reconcile.Escalation // the pager took them now
	Failed []Failure              // the pager did not take them
}

// Failure is a page the pager did not take.
type Failure struct {
	Escalation reconcile.Escalation
	Err        error // a *SendError: it shows no secret
}

// PageOpen pages every open escalation that no pager has taken: those
// raised under Hold, and those whose page an earlier run could not send.
// An acknowledged one is not paged: someone is on it. money says what each
// is about, for its severity; nil when not known. When the pager is down
// (a page still not taken after its retries, for a reason that may pass),
// each page after it is tried once, so that a run is held up by one page's
// retries, not by every page's.
func (r *Raiser) PageOpen(ctx context.Context, money func(*reconcile.Escalation) reconcile.Money) (*Paged, error) {
	es, err := r.Store.EscalationList(ctx, &ledgerdb.EscalationsParams{Open: true})
	if err != nil {
		return nil, err
	}
	retry := r.Retry.withDefaults()
	out := &Paged{}
	for i := range es {
		e := &es[i]
		if e.Status != reconcile.EscalationStatusOpen || !e.PagedAt.IsZero() {
			continue
		}
		var m reconcile.Money
		if money != nil {
			m = money(e)
		}
		sent, perr, err := r.page(ctx, r.NewPage(e, m), retry)
		if err != nil {
			return out, err
		}
		var se *SendError
		switch {
		case perr != nil:
			out.Failed = append(out.Failed, Failure{Escalation: *e, Err: perr})
			if errors.As(perr, &se) && se.Temporary {
				retry.Attempts = 1
			}
		case sent:
			out.Sent = append(out.Sent, *e)
		}
	}
	return out, nil
}

// page sends pg once across runs and replicas. sent says whether it is
// paged now; perr is why the pager did not take it; err is the ledger's
// failure.
func (r *Raiser) page(ctx context.Context, pg *Page, retry Retry) (sent bool, perr, err error) {
	esc := pg.Escalation
	lease := r.Lease
	if lease <= 0 {
		lease = 2 * time.Minute
	}
	pageKey := PageKey(esc)
	c, err := r.Store.ClaimAcquire(ctx, &ledgerdb.ClaimParams{Key: pageKey, Owner: r.Owner, TTL: lease})
	if err != nil {
		return false, nil, err
	}
	switch c.Outcome {
	case reconcile.ClaimOutcomeInFlight: // another run is paging it right now
		return false, nil, nil
	case reconcile.ClaimOutcomeDone: // paged, but the mark was lost in a crash
		return true, nil, r.markPaged(ctx, esc)
	}
	perr = r.trigger(ctx, pg, retry)
	settle := &ledgerdb.SettleParams{Key: pageKey, Fence: c.Claim.Fence, Owner: r.Owner, Success: perr == nil}
	if perr != nil {
		settle.Error = perr.Error()
	} else {
		settle.Result, _ = json.Marshal(map[string]string{"dedup_key": esc.Key, "severity": string(pg.severity())})
	}
	ctx = context.WithoutCancel(ctx) // the page went out: record it even when the run is being stopped
	if _, err := r.Store.ClaimSettle(ctx, settle); err != nil {
		return false, perr, err
	}
	if perr != nil {
		r.log().Error("page failed; the next run sends it again", "escalation", esc.Key, "err", perr)
		return false, perr, nil
	}
	if err := r.markPaged(ctx, esc); err != nil {
		return false, nil, err
	}
	r.log().Warn("paged", "escalation", esc.Key, "class", esc.Class, "subject", esc.Subject, "severity", pg.severity())
	return true, nil, nil
}

func (r *Raiser) markPaged(ctx context.Context, esc *reconcile.Escalation) error {
	if err := r.Store.EscalationMarkPaged(ctx, &ledgerdb.MarkPagedParams{Key: esc.Key, Generation: esc.Generation}); err != nil {
		return err
	}
	esc.PagedAt = time.Now().UTC()
	return nil
}

// trigger sends one page, trying again with backoff while the pager's
// failure may pass, within retry's attempts and total time.
func (r *Raiser) trigger(ctx context.Context, pg *Page, retry Retry) error {
	ctx, cancel := context.WithTimeout(ctx, retry.Total)
	defer cancel()
	deadline, _ := ctx.Deadline()
	wait := retry.Wait
	for attempt := 1; ; attempt++ {
		err := r.Pager.Trigger(ctx, pg)
		var se *SendError
		if err == nil || attempt >= retry.Attempts || !errors.As(err, &se) || !se.Temporary || time.Until(deadline) < wait {
			return err
		}
		r.log().Warn("page not taken; trying again", "escalation", pg.Escalation.Key, "attempt", attempt, "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait *= 2
	}
}

// PageErrors returns, by escalation key, why the page of each of es that
// no pager has taken failed last; an escalation not listed was paged, or
// its page was never tried, or is being sent now.
func PageErrors(ctx context.Context, store Ledger, es []reconcile.Escalation) (map[string]string, error) {
	keys := make([]string, 0, len(es))
	for i := range es {
		if es[i].PagedAt.IsZero() && es[i].Status != reconcile.EscalationStatusResolved {
			keys = append(keys, PageKey(&es[i]))
		}
	}
	out := map[string]string{}
	if len(keys) == 0 {
		return out, nil
	}
	claims, err := store.ClaimGetMany(ctx, keys)
	if err != nil {
		return nil, err
	}
	for i := range es {
		if c, ok := claims[PageKey(&es[i])]; ok && c.State == reconcile.ClaimStateFailed {
			out[es[i].Key] = c.Error
		}
	}
	return out, nil
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
