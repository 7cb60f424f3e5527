package stripe

import (
	"fmt"
	"strings"

	"reconcile"
)

// disputeTxn is one of the balance transactions a dispute lists: the
// withdrawal of the disputed funds with the dispute fee (a negative
// amount) and, when the dispute is won, their reinstatement (a positive
// one). Its amount and fee are in the currency of our Stripe balance, as
// the itemized reports show them; the dispute's own amount is what the
// cardholder disputed, in the charge's currency, and may be more than a
// partial reinstatement gives back.
type disputeTxn struct {
	ID       string  `json:"id"`
	Amount   jsonInt `json:"amount"`
	Fee      jsonInt `json:"fee"`
	Currency string  `json:"currency"`
	Created  jsonInt `json:"created"`
}

// dispute gives the record of the money a dispute event moved: the
// withdrawal or the reinstatement, as the balance transaction the dispute
// lists for it says. Every event of one movement carries the same
// transaction, so that records of one movement agree on the amount:
// charge.dispute.funds_withdrawn, and charge.dispute.created, .updated and
// .closed once the funds are withdrawn, give the withdrawal;
// charge.dispute.funds_reinstated, and the others once a won dispute lists
// its reinstatement, give the reinstatement.
func (p *eventParser) dispute(ev *event, o *object, e reconcile.Evidence) ([]*reconcile.Evidence, string, error) {
	if o.ID == "" {
		return nil, "", reject("event %s: the dispute has no id", ev.ID)
	}
	charge, err := idOf(o.Charge, "charge")
	if err != nil {
		return nil, "", reject("event %s: %v", ev.ID, err)
	}
	pi, err := idOf(o.PaymentIntent, "payment_intent")
	if err != nil {
		return nil, "", reject("event %s: %v", ev.ID, err)
	}
	amount, err := minor(o, o.Amount)
	if err != nil {
		return nil, "", reject("event %s: %v", ev.ID, err)
	}
	e.TxID, e.ParentTxID, e.PaymentIntent, e.Kind = o.ID, charge, pi, reconcile.KindDispute
	funds := ev.Type == "charge.dispute.funds_withdrawn" || ev.Type == "charge.dispute.funds_reinstated"
	back := ev.Type == "charge.dispute.funds_reinstated"
	if !funds && o.Status == "won" {
		// A won dispute's funds came back when it lists their
		// reinstatement; else it repeats the withdrawal, if any.
		r, err := latestTxn(ev, o, true)
		if err != nil {
			return nil, "", err
		}
		back = r != nil
	}
	t, err := latestTxn(ev, o, back)
	if err != nil {
		return nil, "", err
	}
	if t != nil {
		return p.disputeMoved(ev, o, e, t)
	}
	inquiry := strings.HasPrefix(o.Status, "warning_")
	if !funds && !inquiry {
		return nil, fmt.Sprintf("%s for %s (status %s) lists no balance transaction: it moved no money; "+
			"charge.dispute.funds_withdrawn and charge.dispute.funds_reinstated carry the movements", ev.Type, o.ID, o.Status), nil
	}
	// The dispute's own amount, as the best word there is: the funds
	// events of a dump that leaves the balance transactions out, and
	// inquiries, which withdraw no funds (one closed as an inquiry never
	// will).
	if !back {
		amount = -amount
	}
	switch {
	case o.Status == "warning_closed":
		e.Failed = true
	case inquiry:
		e.Pending = true
	}
	evs, ignore, err := p.one(ev, o, e, amount, o.Reason)
	if err == nil && funds {
		what := "withdrew"
		if back {
			what = "reinstated"
		}
		evs[0].Metadata["amount_note"] = "the dispute's amount: the dispute lists no balance transaction that " + what + " it"
	}
	return evs, ignore, err
}

// disputeMoved completes a dispute's record with the balance transaction
// of its movement: its signed amount, currency and fee.
func (p *eventParser) disputeMoved(ev *event, o *object, e reconcile.Evidence, t *disputeTxn) ([]*reconcile.Evidence, string, error) {
	c := t.Currency
	if c == "" {
		c = o.Currency
	}
	cur, err := p.currency(c)
	if err != nil {
		return nil, "", reject("event %s: dispute %s: balance transaction %s: currency: %v", ev.ID, o.ID, t.ID, err)
	}
	e.Fee = t.Fee.v
	evs, ignore, err := p.one(ev, o, e, t.Amount.v, o.Reason)
	if err != nil {
		return nil, "", err
	}
	evs[0].Amount.Currency = cur // one gave the dispute's currency
	evs[0].Metadata["balance_transaction_id"] = t.ID
	return evs, ignore, nil
}

// latestTxn returns the latest balance transaction the dispute lists that
// gave money back (back) or took it, nil when there is none, and rejects
// the event when any of them is malformed.
//
// Stripe lists at most one of each, but should a dispute list two of one
// sign (funds withdrawn again after a reinstatement), the latest is the
// one an event about that movement was sent for: Stripe sends
// funds_withdrawn and funds_reinstated as it makes the transaction, and
// the events after it show the dispute as that transaction left it. Of
// two made in the same second, the one listed last is taken, as Stripe
// lists them in the order made.
func latestTxn(ev *event, o *object, back bool) (*disputeTxn, error) {
	var latest *disputeTxn
	for i := range o.BalanceTransactions {
		t := &o.BalanceTransactions[i]
		where := fmt.Sprintf("event %s: dispute %s: balance transaction %s", ev.ID, o.ID, t.ID)
		switch {
		case !t.Amount.set:
			return nil, reject("%s has no amount", where)
		case t.Amount.bad != "":
			return nil, reject("%s: amount %s is not a whole number of minor units", where, t.Amount.bad)
		case t.Fee.bad != "":
			return nil, reject("%s: fee %s is not a whole number of minor units", where, t.Fee.bad)
		case t.Created.bad != "":
			return nil, reject("%s: created %s is not a unix time in seconds", where, t.Created.bad)
		}
		if (t.Amount.v > 0) == back && t.Amount.v != 0 && (latest == nil || t.Created.v >= latest.Created.v) {
			latest = t
		}
	}
	return latest, nil
}
