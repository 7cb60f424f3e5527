package compensate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"reconcile"
)

// verify asks the provider, before a refund, whether the file's word holds:
// the transaction to refund exists, is ours (its metadata names the effect,
// or it belongs to the effect's payment intent), is not the one kept, moved
// the planned amount, succeeded, is not disputed and is not refunded; and
// the transaction kept exists, is ours too, is not disputed and is not
// undone in full. When the charge needs no refund (it failed, or is
// refunded in full already) it says why in skip, with the refunds' ids in
// made; else in words what does not check out, in problem. err is a
// retrieval that failed: nothing is known.
func (r *run) verify(ctx context.Context, d *reconcile.Discrepancy, x *reconcile.Action, parent *reconcile.Effect) (made, skip, problem string, err error) {
	kept := keptOf(d)
	if kept == nil {
		return "", "", "the finding names no transaction to keep", nil
	}
	p := r.Providers[d.Provider] // compensate refunds only where there is one
	k, problem, err := r.retrieve(ctx, p, kept.ID, parent)
	if err != nil || problem != "" {
		if problem != "" {
			problem = "the transaction kept, " + problem
		}
		return "", "", problem, err
	}
	switch {
	case undone(k) >= k.Amount.Minor && k.Amount.Minor > 0:
		// Refunding the other one would leave the effect paid by no one.
		return "", "", fmt.Sprintf("the transaction kept, %s, is refunded in full at the provider", k.ID), nil
	case k.Disputed:
		// Its cardholder's bank may give it back: the other one too would
		// pay the customer back twice.
		return "", "", fmt.Sprintf("the transaction kept, %s, is disputed at the provider (a chargeback)", k.ID), nil
	}
	c, problem, err := r.retrieve(ctx, p, x.Target, parent)
	switch {
	case err != nil || problem != "":
		return "", "", problem, err
	case c.ID == k.ID:
		return "", "", fmt.Sprintf("%s is the charge kept (%s)", x.Target, kept.ID), nil
	case c.Amount.Minor != x.Amount.Minor || !strings.EqualFold(c.Amount.Currency, x.Amount.Currency):
		return "", "", fmt.Sprintf("%s moved %s at the provider, not the %s planned", c.ID, c.Amount, x.Amount), nil
	case c.Status == "failed":
		return "", "the provider shows " + c.ID + " failed: nothing to compensate", "", nil
	case c.Status != "succeeded":
		return "", "", fmt.Sprintf("%s is %s at the provider", c.ID, c.Status), nil
	case c.Disputed:
		return "", "", fmt.Sprintf("%s is disputed at the provider (a chargeback): the bank may give it back", c.ID), nil
	case c.Refunded >= c.Amount.Minor && c.Amount.Minor > 0:
		ids := make([]string, len(c.Refunds))
		for i := range c.Refunds {
			ids[i] = c.Refunds[i].ID
		}
		if len(ids) == 0 {
			return "", "", fmt.Sprintf("%s is refunded in full, by refunds the provider did not list", c.ID), nil
		}
		made = strings.Join(ids, ", ")
		return made, "the provider shows " + c.ID + " refunded in full already (" + made + "): nothing to compensate", "", nil
	case c.Refunded > 0:
		return "", "", fmt.Sprintf("%s is refunded in part already (%s of %s)", c.ID, reconcile.Money{Minor: c.Refunded, Currency: c.Amount.Currency}, c.Amount), nil
	}
	return "", "", "", nil
}

// retrieve retrieves one transaction of an effect and checks that it is
// the effect's: its effect key is the effect's, or, naming none, it
// belongs to the payment intent the ledger records.
func (r *run) retrieve(ctx context.Context, p Provider, id string, e *reconcile.Effect) (*reconcile.Charge, string, error) {
	c, err := p.RetrieveCharge(ctx, id)
	switch {
	case errors.Is(err, reconcile.ErrNotFound):
		return nil, id + " does not exist at the provider", nil
	case err != nil:
		return nil, "", err
	case c.EffectKey == e.Key:
		return c, "", nil
	case c.EffectKey != "":
		return nil, fmt.Sprintf("%s belongs to %s at the provider, not to %s", id, c.EffectKey, e.Key), nil
	case c.PaymentIntent != "" && c.PaymentIntent == e.ExternalID:
		return c, "", nil
	}
	return nil, fmt.Sprintf("%s names no effect at the provider and is not of payment intent %q", id, e.ExternalID), nil
}

// refundedByHand retrieves the charge a missing refund returns before the
// refund is made again. A refund of it that names no effect was made by a
// person (in the dashboard, perhaps when the application's call seemed to
// fail) and may be this one: a second would refund the customer twice, so
// a person decides. It reports whether the redelivery stops here.
func (r *run) refundedByHand(ctx context.Context, d *reconcile.Discrepancy, x *reconcile.Action, c *reconcile.Claim, target string) (bool, error) {
	ch, err := r.Providers[d.Provider].RetrieveCharge(ctx, target)
	var note string
	switch {
	case errors.Is(err, reconcile.ErrNotFound):
		note = target + ", which the refund returns, does not exist at the provider: a person decides"
	case err != nil:
		d.Class = reconcile.ClassDeferred
		if err := r.release(ctx, c, x, reconcile.OutcomeDeferred, "retrieval of "+target+" unavailable: "+err.Error()+"; retried next run"); err != nil {
			return true, err
		}
		return true, r.deferredTooLong(ctx, d)
	default:
		var ids []string
		for _, m := range ch.Refunds {
			if m.EffectKey == "" && m.Status != "failed" && m.Status != "canceled" {
				ids = append(ids, m.ID)
			}
		}
		if len(ids) == 0 {
			return false, nil
		}
		note = fmt.Sprintf("%s already has refunds that name no effect (%s), made by hand: one may be this refund; a person decides", ch.ID, strings.Join(ids, ", "))
	}
	if err := r.release(ctx, c, x, reconcile.OutcomeEscalated, note); err != nil {
		return true, err
	}
	return true, r.raise(ctx, reconcile.EscalationKey(d.EffectKey, reconcile.ClassMissing), d.EffectKey, d.Class, note)
}

// keptOf is the transaction a duplicated effect keeps: the one no
// compensation targets.
func keptOf(d *reconcile.Discrepancy) *reconcile.Transaction {
	for i := range d.Transactions {
		if !slices.ContainsFunc(d.Actions, func(x reconcile.Action) bool {
			return x.Kind == reconcile.ActionCompensate && x.Target == d.Transactions[i].ID
		}) {
			return &d.Transactions[i]
		}
	}
	return nil
}

// undone is how much of charge c its refunds took back as a compensation
// does: a person's (it names no effect) or a compensation's. A refund a
// refund effect of the application made is that effect's money. Refunds
// the provider did not list count whole.
func undone(c *reconcile.Charge) int64 {
	if len(c.Refunds) == 0 {
		return c.Refunded
	}
	var sum int64
	for _, r := range c.Refunds {
		if r.Status != "failed" && r.Status != "canceled" && (r.EffectKey == "" || reconcile.IsCompensationKey(r.EffectKey)) {
			sum, _ = reconcile.AddMinor(sum, r.Amount.Minor)
		}
	}
	return sum
}

// notMade says why what the provider answered, or a lookup found, is not
// the effect made although it exists: a payment declined or waiting for
// its customer to authenticate, a refund that failed. It is "" for one made
// or on its way (succeeded, processing, pending) and for an answer that
// says nothing of its status.
func notMade(m *reconcile.Made) string {
	switch m.Status {
	case "", "succeeded", "processing", "pending":
		return ""
	}
	return "is " + m.Status + " at the provider, not made"
}

// refundDiffers says how a refund the provider made or a lookup found
// differs from the compensation asked for, or "" when it does not.
func refundDiffers(m *reconcile.Made, req *reconcile.RefundRequest) string {
	q := &reconcile.Terms{Amount: &req.Amount.Minor, Currency: req.Amount.Currency, Target: req.Target}
	if diff := differs(q, req.Key, m); diff != "" {
		return m.ID + " " + diff
	}
	return ""
}

// differs says how what the provider made or a lookup found under key
// differs from the terms of its request, or "" when it does not.
func differs(q *reconcile.Terms, key string, m *reconcile.Made) string {
	var diffs []string
	if m.EffectKey != key {
		diffs = append(diffs, fmt.Sprintf("carries effect key %q", m.EffectKey))
	}
	if q.Amount != nil && m.Amount.Minor != *q.Amount {
		diffs = append(diffs, fmt.Sprintf("is of %s, not %d minor units", m.Amount, *q.Amount))
	}
	if q.Currency != "" && !strings.EqualFold(m.Amount.Currency, q.Currency) {
		diffs = append(diffs, fmt.Sprintf("is in %s, not %s", m.Amount.Currency, strings.ToUpper(q.Currency)))
	}
	if q.Target != "" && m.ChargeID != q.Target && m.PaymentIntent != q.Target {
		diffs = append(diffs, fmt.Sprintf("refunds charge %q of payment intent %q, not %s", m.ChargeID, m.PaymentIntent, q.Target))
	}
	return strings.Join(diffs, ", ")
}

// madeBefore checks at the provider what an earlier run redelivered, at
// made, for an effect that is missing again, once the run's evidence
// covers that time (Options.Covered; a run over the same report asks
// nothing): a bank debit the bank returned after it was made (processing,
// then failed), a refund the customer's bank could not take, or one the
// provider no longer shows. One that still stands leaves the action
// skipped; one that does not is a person's: nothing is made again, and a
// person is paged once. A check that is unavailable leaves it to the next
// run.
func (r *run) madeBefore(ctx context.Context, d *reconcile.Discrepancy, x *reconcile.Action, made time.Time) error {
	p := r.Providers[d.Provider]
	if p == nil || r.Covered == nil {
		return nil
	}
	e, err := r.Store.EffectGet(ctx, d.EffectKey)
	if err != nil || !made.Before(r.Covered(d.Provider, e.Step)) {
		return err
	}
	state, err := standing(ctx, p, e, x.Made)
	switch {
	case errors.Is(err, reconcile.ErrNotFound):
		state = "does not exist"
	case err != nil:
		x.Note += "; its check at the provider is unavailable (" + err.Error() + "), retried next run"
		return nil
	case state == "":
		return nil
	}
	x.Outcome, x.Note = reconcile.OutcomeEscalated, fmt.Sprintf("%s, which an earlier run made, %s at the provider: nothing is made again; a person decides", x.Made, state)
	return r.raise(ctx, reconcile.EscalationKey(d.EffectKey, reconcile.ClassMissing), d.EffectKey, d.Class, "redelivery: "+x.Note)
}

// standing says how what was made for e, id, no longer stands at the
// provider ("failed", "is refunded in full", ...), or "" when it stands or
// e's step is one madeBefore does not check.
func standing(ctx context.Context, p Provider, e *reconcile.Effect, id string) (string, error) {
	switch e.Step {
	case "charge":
		ch, err := p.RetrieveCharge(ctx, id)
		switch {
		case err != nil:
			return "", err
		case ch.Status == "failed":
			return "failed (charge " + ch.ID + ")", nil
		case ch.Disputed:
			return "is disputed (charge " + ch.ID + ")", nil
		case ch.Refunded >= ch.Amount.Minor:
			return "is refunded in full (charge " + ch.ID + ")", nil
		}
	case "refund":
		t, err := p.Terms(e.Request)
		if err != nil {
			return "", nil // not redelivered
		}
		rf, err := p.FindRefund(ctx, t.Target, e.Key)
		switch {
		case err != nil:
			return "", err
		case rf == nil:
			return "", reconcile.ErrNotFound
		case rf.Status == "failed" || rf.Status == "canceled":
			return rf.Status, nil
		}
	}
	return "", nil
}
