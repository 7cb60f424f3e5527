package compensate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"reconcile"
	"reconcile/ledgerdb"
)

// compensate refunds one extra transaction of a duplicated effect: check
// what the ledger already holds under the compensation key, verify at the
// provider that the charge is ours and extra, claim (with the compensation's
// own effect row), look up when an earlier attempt may have made it, call
// under the compensation key with the verified amount, check the answer,
// settle.
func (r *run) compensate(ctx context.Context, d *reconcile.Discrepancy, x *reconcile.Action) error {
	tx, p := target(d, x.Target), r.Providers[d.Provider]
	if p == nil || tx == nil {
		x.Outcome, x.Note = reconcile.OutcomeEscalated, "no API client for "+d.Provider+": a person refunds it"
		return r.raise(ctx, reconcile.EscalationKey(x.Key, reconcile.ClassEscalated), x.Key, d.Class, x.Note)
	}
	parent, err := r.Store.EffectGet(ctx, d.EffectKey)
	if err != nil {
		return err
	}
	existing, err := r.Store.EffectGet(ctx, x.Key)
	switch {
	case errors.Is(err, reconcile.ErrNotFound):
		existing = nil
	case err != nil:
		return err
	}
	if existing != nil {
		if stop, err := r.existingCompensation(ctx, d, x, existing); err != nil || stop {
			return err
		}
	} else if stop, err := r.verified(ctx, d, x, parent, false); err != nil || stop {
		return err
	}
	req := &reconcile.RefundRequest{Key: x.Key, Target: tx.ID, Compensates: d.EffectKey, Amount: x.Amount}
	c, err := r.claim(ctx, x.Key, compensationRow(parent, x, p.CompensationRequest(req)))
	if errors.Is(err, reconcile.ErrKeyReused) {
		x.Outcome, x.Note = reconcile.OutcomeRefused, "the compensation key is recorded with another request: "+err.Error()
		return r.doubt(ctx, d, x, x.Note)
	}
	if err != nil {
		return err
	}
	if done(c, x) {
		return nil
	}
	r.Crash("compensate:claimed")
	if c.Claim.Fence > 1 { // an earlier attempt may have made it: look before acting again
		found, err := p.FindRefund(ctx, tx.ID, x.Key)
		if err != nil {
			return r.release(ctx, &c.Claim, x, reconcile.OutcomeDeferred, "refund lookup unavailable: "+err.Error())
		}
		if found != nil {
			x.Made, x.Note, x.Outcome = found.ID, "made by an earlier attempt; found by lookup", reconcile.OutcomeApplied
			return r.checked(ctx, d, x, &c.Claim, found, refundDiffers(found, req), true)
		}
		if doubtful, err := r.pastGrace(ctx, x.Key); err != nil || doubtful {
			if err != nil {
				return err
			}
			note := "an earlier refund attempt is unconfirmed past its grace period and the provider shows no refund: a person decides"
			if err := r.release(ctx, &c.Claim, x, reconcile.OutcomeEscalated, note); err != nil {
				return err
			}
			return r.doubt(ctx, d, x, note)
		}
	}
	if existing != nil { // verified only now: the lookup above may have found our own refund
		if stop, err := r.verified(ctx, d, x, parent, true); err != nil || stop {
			if err != nil {
				return err
			}
			return r.release(ctx, &c.Claim, x, x.Outcome, x.Note)
		}
	}
	made, err := p.Refund(ctx, req)
	r.Crash("compensate:called")
	if err == nil {
		return r.checked(ctx, d, x, &c.Claim, made, refundDiffers(made, req), true)
	}
	return r.answered(ctx, d, x, &c.Claim, made, err, true)
}

// existingCompensation decides on a compensation whose row is in the
// ledger already, whoever wrote it. One this run's evidence confirms is
// made; one in doubt (missing past the cutoff, refunded twice or for
// another amount) is a person's, and so is one the job never claimed: no
// refund is sent under its key, or any other. stop is true when the
// action's outcome is settled.
func (r *run) existingCompensation(ctx context.Context, d *reconcile.Discrepancy, x *reconcile.Action, row *reconcile.Effect) (stop bool, err error) {
	switch class, ok := r.found[x.Key]; {
	case ok && class == reconcile.ClassConfirmed:
		x.Outcome, x.Made, x.Note = reconcile.OutcomeSkipped, row.ExternalID, "made earlier: the evidence shows the compensation's refund"
		return true, nil
	case ok && class == reconcile.ClassEscalated:
		x.Outcome, x.Note = reconcile.OutcomeEscalated, "the compensation "+x.Key+" is in doubt: a person decides; nothing is sent"
		return true, nil
	case ok && class == reconcile.ClassDeferred:
		x.Outcome, x.Note = reconcile.OutcomeDeferred, "the compensation "+x.Key+" is deferred this run: nothing is sent"
		return true, nil
	}
	if !r.claimed[x.Key] { // another run may have claimed it since this one began
		claims, err := r.Store.ClaimGetMany(ctx, []string{x.Key})
		if err != nil {
			return true, err
		}
		r.claimed[x.Key] = claims[x.Key] != nil
	}
	if !r.claimed[x.Key] {
		x.Outcome = reconcile.OutcomeEscalated
		x.Note = "a compensation row " + x.Key + " is in the ledger, not written by this job's claims, and not confirmed: a person decides; nothing is sent"
		return true, r.doubt(ctx, d, x, x.Note)
	}
	return false, nil
}

// verified checks at the provider, before a refund, that the transaction
// to refund is ours and extra and the one kept is real (see verify). A
// charge that failed, or is refunded in full already, needs nothing more:
// the action is skipped (with the refunds' ids). Anything else that does
// not check out is escalated and paged once: as the compensation's own
// doubt when its row is claimed already, else about the effect. A
// retrieval that fails defers the action. stop is true when the action's
// outcome is settled.
func (r *run) verified(ctx context.Context, d *reconcile.Discrepancy, x *reconcile.Action, parent *reconcile.Effect, claimed bool) (stop bool, err error) {
	made, skip, problem, err := r.verify(ctx, d, x, parent)
	switch {
	case err != nil:
		x.Outcome, x.Note = reconcile.OutcomeDeferred, "the provider could not be asked before the refund: "+err.Error()+"; retried next run"
		return true, nil
	case skip != "":
		x.Outcome, x.Made, x.Note = reconcile.OutcomeSkipped, made, skip
		return true, nil
	case problem != "":
		x.Outcome, x.Note = reconcile.OutcomeEscalated, "not refunded: "+problem+"; a person decides"
		if claimed {
			return true, r.doubt(ctx, d, x, x.Note)
		}
		return true, r.raise(ctx, reconcile.EscalationKey(x.Key, reconcile.ClassEscalated), d.EffectKey, d.Class, x.Note)
	}
	return false, nil
}

// redeliver does a missing effect's work again under its original key,
// with exactly the recorded request, by the call its step makes: a charge
// as a payment intent, a refund as a refund. Any other step is a person's.
// It always asks the provider first (lookup), and what it finds or is
// answered must be what was asked for.
func (r *run) redeliver(ctx context.Context, d *reconcile.Discrepancy, x *reconcile.Action) error {
	e, err := r.Store.EffectGet(ctx, d.EffectKey)
	if err != nil {
		return err
	}
	p := r.Providers[d.Provider]
	if p == nil || !p.Redelivers(e.Step) {
		x.Outcome, x.Note = reconcile.OutcomeEscalated, "no redelivery for a "+e.Step+" at "+d.Provider+": a person redelivers it"
		return r.raise(ctx, reconcile.EscalationKey(d.EffectKey, reconcile.ClassMissing), d.EffectKey, d.Class, x.Note)
	}
	want, err := p.Terms(e.Request)
	if err == nil && e.Step == "refund" && want.Target == "" {
		err = errors.New("a refund that names neither a charge nor a payment intent")
	}
	if err != nil {
		x.Outcome, x.Note = reconcile.OutcomeEscalated, "the recorded request cannot be sent again ("+err.Error()+"): a person redelivers it"
		return r.raise(ctx, reconcile.EscalationKey(d.EffectKey, reconcile.ClassMissing), d.EffectKey, d.Class, x.Note)
	}
	c, err := r.claim(ctx, x.Key, nil)
	if err != nil {
		return err
	}
	if done(c, x) {
		return nil
	}
	r.Crash("redeliver:claimed")
	refund := e.Step == "refund"
	found, err := r.lookup(ctx, p, e, want.Target)
	if err != nil {
		d.Class = reconcile.ClassDeferred
		if err := r.release(ctx, &c.Claim, x, reconcile.OutcomeDeferred, "lookup unavailable: "+err.Error()+"; retried next run"); err != nil {
			return err
		}
		return r.deferredTooLong(ctx, d)
	}
	if notFailed(found) {
		if diff := cmp.Or(differs(want, e.Key, found), notMade(found)); diff != "" {
			return r.checked(ctx, d, x, &c.Claim, found, "the lookup found "+found.ID+", which "+diff, false)
		}
		d.Class, d.Reason = reconcile.ClassConfirmed, fmt.Sprintf("found at the provider by lookup: %s; no call made", found.ID)
		x.Outcome, x.Made, x.Note = reconcile.OutcomeSkipped, found.ID, d.Reason
		return r.settle(ctx, &c.Claim, x, found, e.Key, "")
	}
	if refund {
		if stop, err := r.refundedByHand(ctx, d, x, &c.Claim, want.Target); err != nil || stop {
			return err
		}
	}
	made, err := p.Redeliver(ctx, e)
	r.Crash("redeliver:called")
	if err == nil {
		diff := cmp.Or(differs(want, e.Key, made), notMade(made))
		if diff != "" {
			diff = "the provider answered with " + made.ID + ", which " + diff
		}
		return r.checked(ctx, d, x, &c.Claim, made, diff, false)
	}
	return r.answered(ctx, d, x, &c.Claim, made, err, false)
}

// lookup asks the provider whether a missing effect was made after all,
// before anything is sent again: a file that says a payment failed (or
// leaves it out) is not the provider's word. A payment is searched by its
// effect key, and the payment the ledger names is retrieved, so that one
// the application made under an idempotency key of its own, or that the
// provider's search has not indexed yet, is found; a refund is looked for
// among the refunds of the charge it returns. It returns what it found,
// made or not, or nil.
func (r *run) lookup(ctx context.Context, p Provider, e *reconcile.Effect, target string) (*reconcile.Made, error) {
	if e.Step == "refund" {
		return p.FindRefund(ctx, target, e.Key)
	}
	found, err := p.FindPayment(ctx, e.Key)
	if err != nil || notFailed(found) || e.ExternalID == "" {
		return found, err
	}
	ch, err := p.RetrieveCharge(ctx, e.ExternalID)
	switch {
	case errors.Is(err, reconcile.ErrUnavailable) || errors.Is(err, reconcile.ErrInDoubt):
		return nil, err
	case err != nil: // no such payment, or an id of no shape the provider knows: nothing to find by it
		return found, nil
	}
	// The ledger names it: one that carries no effect key (an application
	// that sends none) is the effect's on the ledger's word; one that
	// carries another's is not.
	m := &reconcile.Made{ID: cmp.Or(ch.PaymentIntent, ch.ID), ChargeID: ch.ID, PaymentIntent: ch.PaymentIntent, Status: ch.Status,
		Amount: ch.Amount, EffectKey: cmp.Or(ch.EffectKey, e.Key), Response: ch.Response}
	if notFailed(m) {
		return m, nil
	}
	return found, nil
}

// notFailed says whether a lookup found something that did not fail.
func notFailed(m *reconcile.Made) bool {
	return m != nil && m.Status != "failed" && m.Status != "canceled"
}

// checked settles an action the provider made something for, once what it
// made has been compared with the request: when diff says how it differs,
// the claim is closed with what was made but nothing is confirmed, and a
// person decides; else the action is applied (or skipped, for a replay).
func (r *run) checked(ctx context.Context, d *reconcile.Discrepancy, x *reconcile.Action, c *reconcile.Claim, made *reconcile.Made, diff string, comp bool) error {
	if diff == "" {
		return r.answered(ctx, d, x, c, made, nil, comp)
	}
	x.Outcome, x.Made, x.Note = reconcile.OutcomeEscalated, made.ID, diff+": not confirmed; a person decides"
	if err := r.settle(ctx, c, x, made, "", ""); err != nil {
		return err
	}
	if comp {
		return r.doubt(ctx, d, x, x.Note)
	}
	return r.raise(ctx, reconcile.EscalationKey(d.EffectKey, reconcile.ClassEscalated), d.EffectKey, d.Class, "redelivery: "+x.Note)
}

// answered settles an action after the provider's answer.
func (r *run) answered(ctx context.Context, d *reconcile.Discrepancy, x *reconcile.Action, c *reconcile.Claim, made *reconcile.Made, err error, comp bool) error {
	var pe *reconcile.ProviderError
	switch {
	case err == nil:
		x.Outcome, x.Made = reconcile.OutcomeApplied, made.ID
		if made.Replayed {
			x.Outcome, x.Note = reconcile.OutcomeSkipped, "the provider answered from its idempotency store: nothing new was made"
		}
		return r.settle(ctx, c, x, made, x.Key, "")
	case errors.Is(err, reconcile.ErrInDoubt):
		note := "in doubt: " + err.Error() + "; the next run looks it up before acting again"
		if err := r.release(ctx, c, x, reconcile.OutcomeDeferred, note); err != nil {
			return err
		}
		if !comp {
			return nil
		}
		if doubtful, err := r.pastGrace(ctx, x.Key); err != nil || !doubtful {
			return err
		}
		x.Outcome = reconcile.OutcomeEscalated
		return r.doubt(ctx, d, x, note)
	case errors.Is(err, reconcile.ErrUnavailable):
		return r.release(ctx, c, x, reconcile.OutcomeDeferred, "provider unavailable: "+err.Error()+"; retried next run")
	case errors.Is(err, reconcile.ErrRefused):
		// Never retried with other parameters: the claim is closed and a
		// person decides.
		x.Outcome, x.Note = reconcile.OutcomeRefused, err.Error()
	case errors.As(err, &pe):
		x.Outcome, x.Note = reconcile.OutcomeEscalated, "the provider made nothing: "+err.Error()
	default:
		return err
	}
	if err := r.settle(ctx, c, x, nil, "", ""); err != nil {
		return err
	}
	if comp {
		return r.doubt(ctx, d, x, x.Note)
	}
	return r.raise(ctx, reconcile.EscalationKey(d.EffectKey, reconcile.Class(x.Outcome)), d.EffectKey, d.Class, "redelivery "+string(x.Outcome)+": "+x.Note)
}

// release fails a claim so that the next run may take the action again,
// and gives the action its outcome.
func (r *run) release(ctx context.Context, c *reconcile.Claim, x *reconcile.Action, o reconcile.Outcome, note string) error {
	outcome := x.Outcome
	if err := r.settle(ctx, c, x, nil, "", note); err != nil {
		return err
	}
	if x.Outcome == outcome { // not superseded
		x.Outcome, x.Note = o, note
	}
	return nil
}

// done says whether a claim attempt leaves nothing to do, and why.
func done(c *reconcile.ClaimResult, x *reconcile.Action) bool {
	switch c.Outcome {
	case reconcile.ClaimOutcomeDone:
		fromEarlierRun(x, c.Claim.Result)
		return true
	case reconcile.ClaimOutcomeInFlight:
		x.Outcome, x.Note = reconcile.OutcomeDeferred, "another run is making it now ("+c.Claim.Owner+")"
		return true
	}
	return false
}

// pastGrace says whether the compensation keyed key has been in doubt for
// longer than the grace period.
func (r *run) pastGrace(ctx context.Context, key string) (bool, error) {
	e, err := r.Store.EffectGet(ctx, key)
	if err != nil {
		return false, err
	}
	return e.Status == reconcile.StatusAttempted && r.Now().Sub(e.CreatedAt) >= r.Grace, nil
}

// doubt escalates a compensation that a person must decide on: its own
// finding becomes escalated, and it is paged once.
func (r *run) doubt(ctx context.Context, d *reconcile.Discrepancy, x *reconcile.Action, reason string) error {
	key := reconcile.EscalationKey(x.Key, reconcile.ClassEscalated)
	if err := r.raise(ctx, key, x.Key, reconcile.ClassEscalated, reason); err != nil {
		return err
	}
	r.escalated[x.Key] = &reconcile.Discrepancy{Class: reconcile.ClassEscalated, EffectKey: x.Key, Provider: d.Provider, Currency: x.Amount.Currency,
		ExpectedMinor: x.Amount.Minor, Reason: "compensation escalated: " + reason,
		Actions: []reconcile.Action{{Kind: reconcile.ActionEscalate, Key: key, Target: x.Key, Outcome: reconcile.OutcomeEscalated}}}
	return nil
}

// deferredTooLong pages about an effect deferred for longer than allowed.
func (r *run) deferredTooLong(ctx context.Context, d *reconcile.Discrepancy) error {
	st, err := r.Store.EffectStateGetMany(ctx, []string{d.EffectKey})
	if err != nil {
		return err
	}
	s, ok := st[d.EffectKey]
	if !ok || s.Class != reconcile.ClassDeferred || r.Now().Sub(s.Since) < r.DeferredPageAfter {
		return nil
	}
	key := reconcile.EscalationKey(d.EffectKey, reconcile.ClassDeferred)
	reason := fmt.Sprintf("deferred since %s: the provider's lookup keeps failing", s.Since.Format("2006-01-02 15:04 MST"))
	d.Actions = append(d.Actions, reconcile.Action{Kind: reconcile.ActionEscalate, Key: key, Target: d.EffectKey, Outcome: reconcile.OutcomeEscalated, Note: reason})
	return r.raise(ctx, key, d.EffectKey, reconcile.ClassDeferred, reason)
}

// markEscalatedCompensations gives each compensation escalated by this run
// the class escalated: its own finding when it was classified, else a new
// one.
func (r *run) markEscalatedCompensations() {
	for i := range r.ds {
		d := &r.ds[i]
		esc, ok := r.escalated[d.EffectKey]
		if !ok {
			continue
		}
		d.Class, d.Reason = reconcile.ClassEscalated, esc.Reason
		if !hasAction(d, esc.Actions[0].Key) {
			d.Actions = append(d.Actions, esc.Actions[0])
		}
		delete(r.escalated, d.EffectKey)
	}
	keys := make([]string, 0, len(r.escalated))
	for k := range r.escalated {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.ds = append(r.ds, *r.escalated[k])
	}
}

func hasAction(d *reconcile.Discrepancy, key string) bool {
	for _, x := range d.Actions {
		if x.Key == key {
			return true
		}
	}
	return false
}

// target is the transaction of d an action names.
func target(d *reconcile.Discrepancy, id string) *reconcile.Transaction {
	for i := range d.Transactions {
		if d.Transactions[i].ID == id {
			return &d.Transactions[i]
		}
	}
	return nil
}

// compensationRow is the compensation's own effect row: step compensate,
// depth 1, under the effect it compensates and in the same application run,
// with the refund it requests. Every part is derived from recorded facts,
// so every run and replica writes the same row.
func compensationRow(parent *reconcile.Effect, x *reconcile.Action, req json.RawMessage) *ledgerdb.RecordParams {
	return &ledgerdb.RecordParams{Key: x.Key, RunID: parent.RunID, Step: "compensate", Provider: parent.Provider, Request: req, ParentKey: parent.Key, Depth: 1}
}
