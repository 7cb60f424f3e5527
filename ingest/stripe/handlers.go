package stripe

import (
	"fmt"
	"strings"

	"reconcile"
)

// eventHandler turns one event type's object into evidence.
type eventHandler struct {
	object string // the object type the event carries
	fn     func(p *eventParser, ev *event, o *object, base reconcile.Evidence) ([]*reconcile.Evidence, string, error)
}

// eventHandlers lists the event types that move money we track; every
// charge.dispute.* type goes to the dispute handler as well.
var eventHandlers = map[string]eventHandler{
	"payment_intent.succeeded": {"payment_intent", (*eventParser).paymentIntent},
	"charge.succeeded":         {"charge", (*eventParser).charge},
	"charge.captured":          {"charge", (*eventParser).charge},
	"charge.refunded":          {"charge", (*eventParser).chargeRefunded},
	"refund.created":           {"refund", (*eventParser).refund},
	"refund.updated":           {"refund", (*eventParser).refund},
	"charge.refund.updated":    {"refund", (*eventParser).refund},
	"payout.paid":              {"payout", (*eventParser).payout},
	"payout.failed":            {"payout", (*eventParser).payout},
}

func (p *eventParser) paymentIntent(ev *event, o *object, e reconcile.Evidence) ([]*reconcile.Evidence, string, error) {
	if o.ID == "" {
		return nil, "", reject("event %s: the payment_intent has no id", ev.ID)
	}
	charge, err := idOf(o.LatestCharge, "latest_charge")
	if err != nil {
		return nil, "", reject("event %s: %v", ev.ID, err)
	}
	if charge == "" && o.Charges != nil && len(o.Charges.Data) > 0 {
		charge = o.Charges.Data[0].ID
	}
	amount, err := firstPositive(o, o.AmountReceived, o.Amount)
	if err != nil {
		return nil, "", reject("event %s: %v", ev.ID, err)
	}
	e.TxID, e.PaymentIntent, e.Kind = charge, o.ID, reconcile.KindCharge
	return p.one(ev, o, e, amount, "")
}

func (p *eventParser) charge(ev *event, o *object, e reconcile.Evidence) ([]*reconcile.Evidence, string, error) {
	if o.ID == "" {
		return nil, "", reject("event %s: the charge has no id", ev.ID)
	}
	pi, err := idOf(o.PaymentIntent, "payment_intent")
	if err != nil {
		return nil, "", reject("event %s: %v", ev.ID, err)
	}
	amount, err := firstPositive(o, o.AmountCaptured, o.Amount)
	if err != nil {
		return nil, "", reject("event %s: %v", ev.ID, err)
	}
	e.TxID, e.PaymentIntent, e.Kind = o.ID, pi, reconcile.KindCharge
	// An authorization awaiting capture, or a bank debit still clearing,
	// has not moved the money yet.
	e.Pending = (o.Captured != nil && !*o.Captured) || o.Status == "pending"
	e.Fee = o.BalanceTransaction.fee
	return p.one(ev, o, e, amount, "")
}

// chargeRefunded gives one refund record per refund the charge lists.
func (p *eventParser) chargeRefunded(ev *event, o *object, base reconcile.Evidence) ([]*reconcile.Evidence, string, error) {
	if o.Refunds == nil || len(o.Refunds.Data) == 0 {
		return nil, fmt.Sprintf("charge.refunded for %s lists no refunds: the refund.created and refund.updated events carry them", o.ID), nil
	}
	chargePI, err := idOf(o.PaymentIntent, "payment_intent")
	if err != nil {
		return nil, "", reject("event %s: %v", ev.ID, err)
	}
	var out []*reconcile.Evidence
	for i := range o.Refunds.Data {
		r := &o.Refunds.Data[i]
		r.Object = "refund"
		evs, _, err := p.refund(ev, r, base)
		if err != nil {
			return nil, "", err
		}
		e := evs[0]
		if e.ParentTxID == "" {
			e.ParentTxID = o.ID
		}
		if e.PaymentIntent == "" {
			e.PaymentIntent = chargePI
		}
		e.ParentEffectKey = metaOf(o.meta, "effect_key")
		out = append(out, e)
	}
	return out, "", nil
}

func (p *eventParser) refund(ev *event, o *object, e reconcile.Evidence) ([]*reconcile.Evidence, string, error) {
	if o.ID == "" {
		return nil, "", reject("event %s: a refund has no id", ev.ID)
	}
	charge, err := idOf(o.Charge, "charge")
	if err != nil {
		return nil, "", reject("event %s: refund %s: %v", ev.ID, o.ID, err)
	}
	pi, err := idOf(o.PaymentIntent, "payment_intent")
	if err != nil {
		return nil, "", reject("event %s: refund %s: %v", ev.ID, o.ID, err)
	}
	amount, err := minor(o, o.Amount)
	if err != nil {
		return nil, "", reject("event %s: %v", ev.ID, err)
	}
	e.TxID, e.ParentTxID, e.PaymentIntent, e.Kind = o.ID, charge, pi, reconcile.KindRefund
	switch o.Status {
	case "pending", "requires_action":
		e.Pending = true
	case "failed", "canceled":
		e.Failed = true
	}
	return p.one(ev, o, e, -amount, o.Reason)
}

func (p *eventParser) payout(ev *event, o *object, e reconcile.Evidence) ([]*reconcile.Evidence, string, error) {
	if o.ID == "" {
		return nil, "", reject("event %s: the payout has no id", ev.ID)
	}
	amount, err := minor(o, o.Amount)
	if err != nil {
		return nil, "", reject("event %s: %v", ev.ID, err)
	}
	e.TxID, e.Kind, e.Failed = o.ID, reconcile.KindPayout, ev.Type == "payout.failed"
	return p.one(ev, o, e, -amount, "")
}

// one completes a record with what every object has: currency, description,
// metadata and the effect key.
func (p *eventParser) one(ev *event, o *object, e reconcile.Evidence, amount int64, fallbackDesc string) ([]*reconcile.Evidence, string, error) {
	cur, err := p.currency(o.Currency)
	if err != nil {
		return nil, "", reject("event %s: %s %s: currency: %v", ev.ID, o.Object, o.ID, err)
	}
	e.Amount = reconcile.Money{Minor: amount, Currency: cur}
	e.Description = o.Description
	if e.Description == "" {
		e.Description = fallbackDesc
	}
	e.EffectKey = metaOf(o.meta, "effect_key")
	if e.EffectKey == "" && createdByRequest(ev.Type) {
		e.EffectKey = ev.Request.idempotencyKey
	}
	e.Metadata = make(map[string]string, len(o.meta)+1)
	for _, m := range o.meta {
		if m.value != "" {
			e.Metadata[m.key] = m.value
		} else {
			delete(e.Metadata, m.key) // a later empty value replaces an earlier one
		}
	}
	e.Metadata["event_id"] = ev.ID
	return []*reconcile.Evidence{&e}, "", nil
}

// currency normalizes a currency and checks that Stripe has an exponent for
// it. A dump holds a few currencies, each many times, so the answers for
// three-letter codes are kept.
func (p *eventParser) currency(c string) (string, error) {
	if cur, ok := p.currencies[c]; ok {
		return cur, nil
	}
	cur, err := reconcile.NormalizeCurrency(c)
	if err == nil {
		_, err = reconcile.Exponent(provider, cur)
	}
	if err != nil {
		return "", err
	}
	if len(c) == 3 {
		p.currencies[strings.Clone(c)] = cur
	}
	return cur, nil
}

// createdByRequest reports whether the request behind an event of this type
// created its object, so that the request's idempotency key is our key for
// the object. An update's request was made for another purpose.
func createdByRequest(typ string) bool {
	return strings.HasPrefix(typ, "payment_intent.") || typ == "charge.succeeded" || typ == "refund.created"
}

// idOf returns the id a reference holds.
func idOf(r ref, field string) (string, error) {
	if r.bad {
		return "", fmt.Errorf("%s is neither an id nor an object with one", field)
	}
	return r.id, nil
}

// minor reads an integer amount of minor units.
func minor(o *object, n jsonInt) (int64, error) {
	switch {
	case !n.set:
		return 0, fmt.Errorf("%s %s has no amount", o.Object, o.ID)
	case n.bad != "":
		return 0, fmt.Errorf("%s %s: amount %s is not a whole number of minor units", o.Object, o.ID, n.bad)
	}
	return n.v, nil
}

// firstPositive reads the preferred amount when it is above zero, else the
// fallback: amount_received or amount_captured once money has moved, else
// the amount asked for.
func firstPositive(o *object, preferred, fallback jsonInt) (int64, error) {
	if preferred.set {
		v, err := minor(o, preferred)
		if err != nil || v > 0 {
			return v, err
		}
	}
	return minor(o, fallback)
}
