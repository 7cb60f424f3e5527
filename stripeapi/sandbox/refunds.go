package sandbox

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// Refund is a refund the sandbox made.
type Refund struct {
	ID            string // re_…
	Charge        string // the refunded charge, ch_…
	PaymentIntent string // the refunded charge's payment intent, pi_…
	Key           string // the Idempotency-Key it was created under; empty without one (by hand)
	Amount        int64  // minor units, positive
	Currency      string // lower case
	Status        string // succeeded, or failed (FailRefund)
	Reason        string
	Metadata      map[string]string
	// Params holds every form parameter of the request that created it.
	Params  url.Values
	Created time.Time
}

// refund is a Refund and what the sandbox keeps alongside it.
type refund struct {
	Refund
	txn string // its balance transaction
	// failed is when the refund failed (FailRefund), and failure the
	// balance transaction that gave its money back to the balance.
	failed  time.Time
	failure string
}

// refundReasons are the reasons Stripe accepts.
var refundReasons = map[string]bool{"": true, "duplicate": true, "fraudulent": true, "requested_by_customer": true}

// Refunds returns the refunds the sandbox made, oldest first.
func (s *Server) Refunds() []Refund {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Refund, len(s.refunds))
	for i, rf := range s.refunds {
		out[i] = rf.Refund
		out[i].Metadata = maps.Clone(rf.Metadata)
		out[i].Params = url.Values(maps.Clone(map[string][]string(rf.Params)))
	}
	return out
}

// RefundByHand refunds amount of a charge (0: what is left of it) the way
// a person does in Stripe's dashboard: without an idempotency key or
// metadata. It is a test and demo aid for a refund nobody's ledger
// recorded; it answers Stripe's refusals (a charge already refunded, an
// amount beyond what is left) as errors. It counts in Requests, as the
// dashboard's own request would.
func (s *Server) RefundByHand(charge string, amount int64) (Refund, error) {
	if amount < 0 {
		return Refund{}, fmt.Errorf("refund amount %d is negative", amount)
	}
	form := url.Values{"charge": {charge}}
	if amount > 0 {
		form.Set("amount", strconv.FormatInt(amount, 10))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := s.createRefund(nil, form, "", newID("req_"))
	if resp.status != http.StatusOK {
		var e struct {
			Error apiError `json:"error"`
		}
		json.Unmarshal(resp.body, &e)
		return Refund{}, fmt.Errorf("refund of %s: %s", charge, e.Error.Message)
	}
	rf := s.refunds[len(s.refunds)-1].Refund
	rf.Metadata = maps.Clone(rf.Metadata)
	rf.Params = url.Values(maps.Clone(map[string][]string(rf.Params)))
	return rf, nil
}

// dispute is a chargeback the sandbox was told of: the whole charge taken
// back, its funds withdrawn from the balance.
type dispute struct {
	id, txn string
	charge  *payment
	created time.Time
}

// Dispute takes charge back as a cardholder's bank does (a chargeback,
// lost): the charge shows disputed, cannot be refunded, and the itemized
// report lists the withdrawal. It returns the dispute's id.
func (s *Server) Dispute(charge string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.charges[charge]
	if p == nil || p.Disputed {
		return "", fmt.Errorf("no charge %s to dispute", charge)
	}
	p.Disputed = true
	d := &dispute{id: newID("du_"), txn: newID("txn_"), charge: p, created: s.now().UTC()}
	s.disputes = append(s.disputes, d)
	return d.id, nil
}

// createRefund is POST /v1/refunds: a refund of a charge, named by itself
// or by its payment intent, in full unless an amount is given.
func (s *Server) createRefund(r *http.Request, form url.Values, key, reqID string) response {
	p, resp, bad := s.refundTarget(form)
	if bad {
		return resp
	}
	amount, resp, bad := amountParam(form, "amount", false)
	if bad {
		return resp
	}
	reason := form.Get("reason")
	if !refundReasons[reason] {
		return invalid("", "reason", "Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer")
	}
	left := p.Amount - p.Refunded
	switch {
	case p.Disputed:
		return errorResponse(http.StatusBadRequest, apiError{Type: "invalid_request_error", Code: "charge_disputed",
			Message: fmt.Sprintf("Charge %s has been charged back; cannot issue a refund.", p.ChargeID)}, true)
	case !p.returned.IsZero():
		return errorResponse(http.StatusBadRequest, apiError{Type: "invalid_request_error", Code: "charge_failed",
			Message: fmt.Sprintf("Charge %s failed; there is nothing to refund.", p.ChargeID)}, true)
	case left == 0:
		return errorResponse(http.StatusBadRequest, apiError{Type: "invalid_request_error", Code: "charge_already_refunded",
			Message: fmt.Sprintf("Charge %s has already been refunded.", p.ChargeID)}, true)
	case amount > left:
		return errorResponse(http.StatusBadRequest, apiError{Type: "invalid_request_error", Code: "amount_too_large", Param: "amount",
			Message: fmt.Sprintf("Refund amount (%d) is greater than unrefunded amount on charge (%d)", amount, left)}, true)
	case amount == 0:
		amount = left
	}
	now := s.now().UTC()
	rf := &refund{Refund: Refund{
		ID:            newID("re_"),
		Charge:        p.ChargeID,
		PaymentIntent: p.ID,
		Key:           key,
		Amount:        amount,
		Currency:      p.Currency,
		Status:        "succeeded",
		Reason:        reason,
		Metadata:      metadata(form),
		Params:        url.Values(maps.Clone(map[string][]string(form))),
		Created:       now,
	}, txn: newID("txn_")}
	p.Refunded += amount
	p.refunds = append(p.refunds, rf)
	s.refunds = append(s.refunds, rf)
	s.made++
	s.event("refund.created", now, rf.object(), reqID, key)
	s.event("charge.refunded", now, s.chargeObject(p), reqID, key)
	return ok(rf.object(), true)
}

// FailRefund fails a refund as a customer's bank does when it cannot take
// the money (a closed card account): the refund is failed, its amount is
// the charge's again, and the itemized report takes the money back into
// the balance (refund_failure).
func (s *Server) FailRefund(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rf := range s.refunds {
		if rf.ID == id && rf.Status == "succeeded" {
			rf.Status, rf.failed, rf.failure = "failed", s.now().UTC(), newID("txn_")
			s.charges[rf.Charge].Refunded -= rf.Amount
			s.event("charge.refund.updated", rf.failed, rf.object(), "", "")
			return nil
		}
	}
	return fmt.Errorf("no succeeded refund %s to fail", id)
}

// refundTarget finds the succeeded payment a refund request names.
func (s *Server) refundTarget(form url.Values) (*payment, response, bool) {
	ch, pi := form.Get("charge"), form.Get("payment_intent")
	var p *payment
	switch {
	case ch != "":
		if p = s.charges[ch]; p == nil {
			return nil, invalid("resource_missing", "charge", "No such charge: '%s'", ch), true
		}
		if pi != "" && pi != p.ID {
			return nil, invalid("", "payment_intent", "Charge %s does not belong to PaymentIntent %s.", ch, pi), true
		}
	case pi != "":
		if p = s.intents[pi]; p == nil {
			return nil, invalid("resource_missing", "payment_intent", "No such payment_intent: '%s'", pi), true
		}
		if p.ChargeID == "" {
			return nil, invalid("", "payment_intent", "This PaymentIntent (%s) does not have a successful charge to refund.", pi), true
		}
	default:
		return nil, invalid("parameter_missing", "", "One of the following params should be provided for this request: charge or payment_intent."), true
	}
	return p, response{}, false
}

// listRefunds is GET /v1/refunds, newest first, filtered by charge or
// payment_intent and paged with limit, starting_after and ending_before.
func (s *Server) listRefunds(r *http.Request, form url.Values, key, reqID string) response {
	limit, resp, bad := limitParam(form)
	if bad {
		return resp
	}
	ch, pi := form.Get("charge"), form.Get("payment_intent")
	var all []*refund
	for _, rf := range slices.Backward(s.refunds) {
		if (ch == "" || rf.Charge == ch) && (pi == "" || rf.PaymentIntent == pi) {
			all = append(all, rf)
		}
	}
	from, to := 0, min(limit, len(all))
	after, before := form.Get("starting_after"), form.Get("ending_before")
	if after != "" || before != "" {
		cursor, name := after, "starting_after"
		if after == "" {
			cursor, name = before, "ending_before"
		}
		i := slices.IndexFunc(all, func(rf *refund) bool { return rf.ID == cursor })
		if i < 0 {
			return invalid("resource_missing", name, "No such refund: '%s'", cursor)
		}
		if after != "" {
			from, to = i+1, min(i+1+limit, len(all))
		} else {
			from, to = max(0, i-limit), i
		}
	}
	list := refundList{Object: "list", URL: "/v1/refunds", Data: []refundObject{}}
	for _, rf := range all[from:to] {
		list.Data = append(list.Data, rf.object())
	}
	if after == "" && before != "" {
		list.HasMore = from > 0
	} else {
		list.HasMore = to < len(all)
	}
	return ok(list, false)
}

type refundList struct {
	Object  string         `json:"object"`
	URL     string         `json:"url"`
	HasMore bool           `json:"has_more"`
	Data    []refundObject `json:"data"`
}

// refundObject is a refund as the API writes it.
type refundObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Amount             int64             `json:"amount"`
	BalanceTransaction string            `json:"balance_transaction"`
	Charge             string            `json:"charge"`
	Created            int64             `json:"created"`
	Currency           string            `json:"currency"`
	Metadata           map[string]string `json:"metadata"`
	PaymentIntent      string            `json:"payment_intent"`
	Reason             *string           `json:"reason"`
	Status             string            `json:"status"`
}

func (rf *refund) object() refundObject {
	o := refundObject{
		ID:                 rf.ID,
		Object:             "refund",
		Amount:             rf.Amount,
		BalanceTransaction: rf.txn,
		Charge:             rf.Charge,
		Created:            rf.Created.Unix(),
		Currency:           rf.Currency,
		Metadata:           rf.Metadata,
		PaymentIntent:      rf.PaymentIntent,
		Status:             rf.Status,
	}
	if rf.Reason != "" {
		o.Reason = &rf.Reason
	}
	return o
}
