// Package compensate makes the repairs reconciliation plans, each exactly
// once however often it is attempted: a refund for each extra transaction
// of a duplicated effect, and a redelivery of each missing effect under its
// original key. Every action is claimed in the ledger before it is made
// (one conditional write that returns a fence token), made under its own
// idempotency key, and settled with the token; what cannot be decided goes
// to a person through the Escalator.
//
// It imports the ledger's interface (ledgerdb), not a driver: the claims
// are what make an action happen once across crashes, re-runs and replicas.
package compensate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
)

// Provider is one provider's API as the actions use it, with the rules of
// its requests; a provider the actions can act at is one implementation
// (stripeapi.Client is Stripe's).
type Provider interface {
	// Redelivers reports whether a missing effect of step can be made
	// again; Redeliver makes it again under its original key with exactly
	// the recorded request.
	Redelivers(step string) bool
	Redeliver(ctx context.Context, e *reconcile.Effect) (*reconcile.Made, error)
	// Refund compensates an extra charge under the compensation key.
	Refund(ctx context.Context, r *reconcile.RefundRequest) (*reconcile.Made, error)
	// CompensationRequest is the request a compensation records as its own
	// effect row before Refund makes it.
	CompensationRequest(r *reconcile.RefundRequest) json.RawMessage
	// Terms reads what a recorded request asks for.
	Terms(request json.RawMessage) (*reconcile.Terms, error)
	// RetrieveCharge retrieves a charge, or the charge of a payment intent,
	// with its refunds; an error wrapping reconcile.ErrNotFound when there
	// is none.
	RetrieveCharge(ctx context.Context, id string) (*reconcile.Charge, error)
	// FindPayment looks up the payment made under an effect key; nil when none.
	FindPayment(ctx context.Context, effectKey string) (*reconcile.Made, error)
	// FindRefund looks up the refund of a charge or payment intent made
	// under key; nil when none.
	FindRefund(ctx context.Context, target, key string) (*reconcile.Made, error)
}

// Escalator records an escalation and pages it once.
type Escalator interface {
	Raise(ctx context.Context, p *ledgerdb.EscalateParams) (*reconcile.Escalation, error)
}

// Options configure a run's actions.
type Options struct {
	RunID string
	Owner string // who claims: host:pid:run
	// Apply makes the actions; without it nothing external happens and
	// the outcomes are planned (or skipped, for what is done already).
	Apply bool
	// Lease is how long a claim is held before another run may take the
	// action over. It must outlast a provider call. Default 5 minutes.
	Lease time.Duration
	// Covered is the latest time the run's evidence of a provider covers
	// for what a step makes (its charges, its refunds); nil covers nothing.
	// What an earlier run redelivered before it should show in it, and
	// what does not is checked at the provider.
	Covered func(provider, step string) time.Time
	// Grace is how long a compensation may stay in doubt before a person is
	// paged. 0 means 1 hour; negative means at once.
	Grace time.Duration
	// DeferredPageAfter pages a person about an effect deferred for longer
	// than this. Default 72 hours.
	DeferredPageAfter time.Duration
	// MaxActions and MaxRefund bound the blast radius of one run: above
	// either, the run makes no action and pages. MaxActions 0 means 1000,
	// negative means no limit; MaxRefund is per currency in minor units, a
	// currency absent has no limit.
	MaxActions int
	MaxRefund  map[string]int64
	Now        func() time.Time
	// Progress, when set, is told how many of the run's actions are done.
	Progress func(done, total int)
	// Crash, when set, is called at each boundary of an action
	// ("compensate:claimed", "redeliver:called", "compensate:settled", ...):
	// the crash tests kill the process there.
	Crash func(point string)
	Log   *slog.Logger
}

// Ledger is what the actions need of the ledger: the effects and their
// states, and the claims an action is made under. A ledgerdb.Store is one.
type Ledger interface {
	EffectGet(ctx context.Context, key string) (*reconcile.Effect, error)
	EffectStateGetMany(ctx context.Context, keys []string) (map[string]reconcile.EffectState, error)
	ClaimAcquire(ctx context.Context, p *ledgerdb.ClaimParams) (*reconcile.ClaimResult, error)
	ClaimSettle(ctx context.Context, p *ledgerdb.SettleParams) (*reconcile.WriteResult, error)
	ClaimGetMany(ctx context.Context, keys []string) (map[string]*reconcile.Claim, error)
}

// Applier makes a run's actions.
type Applier struct {
	Store Ledger
	// Providers are the providers' APIs by name (reconcile.Effect.Provider):
	// an action at a provider not listed is a person's. Without Apply they
	// may be missing.
	Providers map[string]Provider
	Escalator Escalator
	Options
}

// Result is what applying changed: the findings with their final classes
// and outcomes (compensations escalated by this run added), and the orphans
// that superseded owners reported.
type Result struct {
	Discrepancies []reconcile.Discrepancy
	Orphans       []reconcile.Orphan
}

func (a *Applier) defaults() {
	if a.Lease <= 0 {
		a.Lease = 5 * time.Minute
	}
	if a.Grace == 0 {
		a.Grace = time.Hour
	}
	if a.DeferredPageAfter <= 0 {
		a.DeferredPageAfter = 72 * time.Hour
	}
	if a.MaxActions == 0 {
		a.MaxActions = 1000
	}
	if a.Now == nil {
		a.Now = time.Now
	}
	if a.Crash == nil {
		a.Crash = func(string) {}
	}
	if a.Log == nil {
		a.Log = slog.New(slog.DiscardHandler)
	}
}

// Act decides the outcome of every action of ds, making the actions when
// Apply is set. ds is not modified.
func (a *Applier) Act(ctx context.Context, ds []reconcile.Discrepancy) (*Result, error) {
	a.defaults()
	r := &run{Applier: a, escalated: map[string]*reconcile.Discrepancy{}}
	r.ds = make([]reconcile.Discrepancy, len(ds))
	for i := range ds {
		r.ds[i] = ds[i]
		r.ds[i].Actions = append([]reconcile.Action(nil), ds[i].Actions...)
	}
	if err := r.skipDone(ctx); err != nil {
		return nil, err
	}
	if !a.Apply {
		return &Result{Discrepancies: r.ds}, nil
	}
	if err := r.askFirst(ctx); err != nil {
		return nil, err
	}
	if held, err := r.blastRadius(ctx); err != nil || held {
		return &Result{Discrepancies: r.ds}, err
	}
	for _, m := range r.made {
		if err := r.madeBefore(ctx, &r.ds[m.d], &r.ds[m.d].Actions[m.x], m.at); err != nil {
			return nil, err
		}
	}
	total, done := 0, 0
	for _, d := range r.ds {
		for _, x := range d.Actions {
			if x.Outcome == reconcile.OutcomePlanned {
				total++
			}
		}
	}
	for i := range r.ds {
		d := &r.ds[i]
		for j := range d.Actions {
			if d.Actions[j].Outcome != reconcile.OutcomePlanned {
				continue
			}
			if a.Progress != nil {
				a.Progress(done, total)
			}
			done++
			var err error
			switch d.Actions[j].Kind {
			case reconcile.ActionCompensate:
				err = r.compensate(ctx, d, &d.Actions[j])
			case reconcile.ActionRedeliver:
				err = r.redeliver(ctx, d, &d.Actions[j])
			case reconcile.ActionEscalate:
				err = r.raise(ctx, d.Actions[j].Key, d.Actions[j].Target, d.Class, d.Reason)
				d.Actions[j].Outcome = reconcile.OutcomeEscalated
			}
			if err != nil {
				return nil, err
			}
		}
	}
	r.markEscalatedCompensations()
	return &Result{Discrepancies: r.ds, Orphans: r.orphans}, nil
}

// run is one Apply call's state.
type run struct {
	*Applier
	ds        []reconcile.Discrepancy
	orphans   []reconcile.Orphan
	escalated map[string]*reconcile.Discrepancy // compensations escalated by this run, by key
	// found is this run's finding for each compensation effect in scope,
	// by key; claimed says which compensations the job has ever claimed.
	found   map[string]reconcile.Class
	claimed map[string]bool
	// made are the redeliveries an earlier run made of effects found
	// missing again: madeBefore asks the provider what became of them.
	made []madeEarlier
}

// madeEarlier is a redelivery an earlier run made, by index in ds and in
// its actions, and when.
type madeEarlier struct {
	d, x int
	at   time.Time
}

// skipDone settles the outcome of the actions there is nothing to do for:
// the compensations a person resolved, and the actions an earlier run
// completed. They are not made again, and not counted against the blast
// radius.
func (r *run) skipDone(ctx context.Context) error {
	var comps, keys []string
	for _, d := range r.ds {
		for _, x := range d.Actions {
			if x.Kind == reconcile.ActionCompensate {
				comps = append(comps, x.Key)
			}
			if x.Kind != reconcile.ActionEscalate {
				keys = append(keys, x.Key)
			}
		}
	}
	states, err := r.Store.EffectStateGetMany(ctx, comps)
	if err != nil {
		return err
	}
	claims, err := r.Store.ClaimGetMany(ctx, keys)
	if err != nil {
		return err
	}
	r.found, r.claimed = map[string]reconcile.Class{}, map[string]bool{}
	for _, d := range r.ds {
		r.found[d.EffectKey] = d.Class
	}
	for k := range claims {
		r.claimed[k] = true
	}
	for i := range r.ds {
		for j := range r.ds[i].Actions {
			x := &r.ds[i].Actions[j]
			if x.Kind == reconcile.ActionEscalate {
				continue
			}
			if st, ok := states[x.Key]; ok && st.Class == reconcile.ClassResolved {
				x.Outcome, x.Note = reconcile.OutcomeSkipped, "resolved by a person"
				continue
			}
			if c, ok := claims[x.Key]; ok && c.State == reconcile.ClaimStateDone {
				fromEarlierRun(x, c.Result)
				if x.Kind == reconcile.ActionRedeliver && x.Outcome == reconcile.OutcomeSkipped && x.Made != "" {
					r.made = append(r.made, madeEarlier{i, j, c.SettledAt})
				}
			}
		}
	}
	return nil
}

// askFirst asks the provider about the compensations of charges that a
// record says failed before the limits count them: most did fail (a
// returned bank debit the customer paid again by card), and a night of
// them would otherwise hold every action back. Where there is no client
// to ask, the record stands, as it did before there was a question.
func (r *run) askFirst(ctx context.Context) error {
	for i := range r.ds {
		d := &r.ds[i]
		asked, failed := false, true // some action asked about, and every one failed there
		for j := range d.Actions {
			x := &d.Actions[j]
			if tx := target(d, x.Target); x.Kind != reconcile.ActionCompensate || x.Outcome != reconcile.OutcomePlanned || tx == nil || !tx.Failed {
				failed = false
				continue
			}
			asked = true
			if r.Providers[d.Provider] == nil { // nobody to ask: the record is all there is
				x.Outcome, x.Note = reconcile.OutcomeSkipped, "no API client for "+d.Provider+" to ask: "+x.Target+"'s failure record stands; nothing to compensate"
				continue
			}
			parent, err := r.Store.EffectGet(ctx, d.EffectKey)
			if err != nil {
				return err
			}
			if _, err := r.verified(ctx, d, x, parent, false); err != nil {
				return err
			}
			failed = failed && x.Outcome == reconcile.OutcomeSkipped
		}
		if asked && failed { // the one charge left stands: the effect is made once
			d.Class, d.Reason = reconcile.ClassConfirmed, d.Reason+"; "+d.Actions[0].Note
		}
	}
	return nil
}

// blastRadius holds every action back and pages when the run would make
// more actions, or refund more money, than the limits allow: a systemic
// fault is not fixed by ten thousand refunds.
func (r *run) blastRadius(ctx context.Context) (bool, error) {
	var keys []string
	refunds := map[string]int64{}
	for i := range r.ds {
		for _, x := range r.ds[i].Actions {
			if x.Outcome != reconcile.OutcomePlanned || x.Kind == reconcile.ActionEscalate {
				continue
			}
			keys = append(keys, x.Key)
			if x.Kind == reconcile.ActionCompensate {
				// Saturated, not wrapped: a wrapped sum would pass any limit.
				refunds[x.Amount.Currency], _ = reconcile.AddMinor(refunds[x.Amount.Currency], x.Amount.Minor)
			}
		}
	}
	var over []string
	if r.MaxActions > 0 && len(keys) > r.MaxActions {
		over = append(over, fmt.Sprintf("%d actions planned, the limit is %d", len(keys), r.MaxActions))
	}
	curs := make([]string, 0, len(refunds))
	for cur := range refunds {
		curs = append(curs, cur)
	}
	sort.Strings(curs)
	for _, cur := range curs {
		if limit, ok := r.MaxRefund[cur]; ok && refunds[cur] > limit {
			over = append(over, fmt.Sprintf("refunds of %s planned, the limit is %s",
				reconcile.Money{Minor: refunds[cur], Currency: cur}, reconcile.Money{Minor: limit, Currency: cur}))
		}
	}
	if len(over) == 0 {
		return false, nil
	}
	reason := strings.Join(over, "; ") + ": no action was made; check for a systemic fault, then run with higher limits"
	sort.Strings(keys)
	sum := sha256.Sum256([]byte(strings.Join(keys, "\n")))
	key := "blast-radius:" + hex.EncodeToString(sum[:8]) // the same plan pages once
	if err := r.raise(ctx, key, "run "+r.RunID, reconcile.ClassEscalated, reason); err != nil {
		return true, err
	}
	for i := range r.ds {
		for j := range r.ds[i].Actions {
			x := &r.ds[i].Actions[j]
			if x.Outcome == reconcile.OutcomePlanned && x.Kind != reconcile.ActionEscalate {
				x.Outcome, x.Note = reconcile.OutcomeEscalated, "held back: "+reason
			}
		}
	}
	r.Log.Error("blast radius exceeded: no action made", "reason", reason, "escalation", key)
	return true, nil
}

// raise records and pages an escalation.
func (r *run) raise(ctx context.Context, key, subject string, c reconcile.Class, reason string) error {
	_, err := r.Escalator.Raise(ctx, &ledgerdb.EscalateParams{Key: key, Subject: subject, Class: c, Reason: reason, RunID: r.RunID})
	return err
}

// claim takes an action's claim, with the compensation row when there is one.
func (r *run) claim(ctx context.Context, key string, row *ledgerdb.RecordParams) (*reconcile.ClaimResult, error) {
	return r.Store.ClaimAcquire(ctx, &ledgerdb.ClaimParams{Key: key, Owner: r.Owner, TTL: r.Lease, Effect: row})
}

// settle ends a claim. A success confirms the action's effect in the same
// write. A superseded success is an orphan: it is kept and reported.
func (r *run) settle(ctx context.Context, c *reconcile.Claim, x *reconcile.Action, made *reconcile.Made, confirmKey string, failure string) error {
	ctx = context.WithoutCancel(ctx) // the provider answered: record it even when the run is being stopped
	p := &ledgerdb.SettleParams{Key: c.Key, Fence: c.Fence, Owner: r.Owner, Success: failure == "", Error: failure}
	switch {
	case made != nil:
		s := &settled{ID: made.ID, Charge: made.ChargeID, Status: made.Status}
		if x.Outcome == reconcile.OutcomeEscalated { // made, but not what was asked for: later runs say so too
			s.Outcome, s.Note = x.Outcome, x.Note
		}
		p.Result, _ = json.Marshal(s)
		if confirmKey != "" {
			p.Confirm = &ledgerdb.ConfirmParams{Key: confirmKey, ExternalID: made.ID, Response: made.Response}
		}
	case failure == "": // closed without a result: refused, or a person decides
		p.Result, _ = json.Marshal(&settled{Outcome: x.Outcome, Note: x.Note})
	}
	w, err := r.Store.ClaimSettle(ctx, p)
	if err != nil {
		return err
	}
	r.Crash(string(x.Kind) + ":settled")
	if w.Outcome == reconcile.WriteOutcomeSuperseded {
		x.Outcome = reconcile.OutcomeSuperseded
		x.Note = fmt.Sprintf("another run took the action over (fence %d, %s); this attempt changed nothing", w.Claim.Fence, w.Claim.Owner)
		if w.Orphan != nil {
			r.orphans = append(r.orphans, *w.Orphan)
			x.Note = fmt.Sprintf("ORPHAN: %s was made after the claim moved to %s (fence %d): check it by hand", x.Made, w.Claim.Owner, w.Claim.Fence)
			r.Log.Error("orphan: an action made by a superseded owner", "key", c.Key, "made", x.Made, "current_owner", w.Claim.Owner,
				"current_fence", w.Claim.Fence, "current_result", string(w.Claim.Result))
		}
	}
	return nil
}

// settled is what a completed claim records: what the provider made, or
// why the action was closed without making anything.
type settled struct {
	ID      string            `json:"id,omitempty"`
	Charge  string            `json:"charge,omitempty"`
	Status  string            `json:"status,omitempty"`
	Outcome reconcile.Outcome `json:"outcome,omitempty"` // refused or escalated, when closed without a result
	Note    string            `json:"note,omitempty"`
}

// fromEarlierRun gives an action that an earlier run completed the outcome
// that run settled it with: made (skipped now), or refused or escalated.
func fromEarlierRun(x *reconcile.Action, result json.RawMessage) {
	var s settled
	json.Unmarshal(result, &s)
	if s.Outcome == reconcile.OutcomeRefused || s.Outcome == reconcile.OutcomeEscalated {
		x.Outcome, x.Note = s.Outcome, "closed by an earlier run: "+s.Note
		return
	}
	x.Outcome, x.Made, x.Note = reconcile.OutcomeSkipped, s.ID, "made by an earlier run"
}
