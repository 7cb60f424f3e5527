package sandbox

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"reconcile"
)

// Payment is a payment intent the sandbox made, with its charge when it
// succeeded.
type Payment struct {
	ID       string // pi_…
	ChargeID string // ch_…, empty unless it succeeded
	Key      string // the Idempotency-Key it was created under
	Amount   int64  // minor units
	Currency string // lower case, as Stripe writes it
	Status   string // succeeded, processing, requires_confirmation, requires_payment_method, requires_action
	Refunded int64  // minor units refunded so far
	Disputed bool   // its cardholder's bank took it back (Dispute)
	Metadata map[string]string
	// Params holds every form parameter of the request that created it.
	Params  url.Values
	Created time.Time
}

// payment is a Payment and what the sandbox keeps alongside it.
type payment struct {
	Payment
	txn string // the charge's balance transaction
	// chargeMeta is the charge's metadata: the intent's, copied once when
	// it was confirmed, as Stripe does.
	chargeMeta map[string]string
	refunds    []*refund // oldest first
	// returned is when its bank debit failed (Return), and failure the
	// balance transaction that gave the money back.
	returned time.Time
	failure  string
}

// chargeStatus is the status of the payment's charge.
func (p *payment) chargeStatus() string {
	switch {
	case !p.returned.IsZero():
		return "failed"
	case p.Status == "processing":
		return "pending"
	}
	return "succeeded"
}

// declinedMethods are Stripe's test payment methods whose charge is
// declined: a way to make the sandbox answer a card error.
var declinedMethods = map[string]bool{"pm_card_chargeDeclined": true, "pm_card_visa_chargeDeclined": true}

// authenticationMethods are Stripe's test payment methods whose payment
// waits for the customer to authenticate (3D Secure): confirmed, the intent
// answers requires_action and nothing is charged.
var authenticationMethods = map[string]bool{"pm_card_authenticationRequired": true, "pm_card_threeDSecure2Required": true}

// debitMethods are the sandbox's bank debits (SEPA, ACH): confirmed, the
// intent is processing and its charge pending until the bank settles it
// (Settle) or returns it (Return), days later.
var debitMethods = map[string]bool{"pm_sepa_debit": true, "pm_us_bank_account": true}

// Payments returns the payment intents the sandbox made, oldest first.
func (s *Server) Payments() []Payment {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Payment, len(s.payments))
	for i, p := range s.payments {
		out[i] = p.Payment
		out[i].Metadata = maps.Clone(p.Metadata)
		out[i].Params = url.Values(maps.Clone(map[string][]string(p.Params)))
	}
	return out
}

// createPaymentIntent is POST /v1/payment_intents. With confirm=true the
// intent succeeds at once with a charge, unless its payment method is one
// of Stripe's declined test cards, or one that wants the customer to
// authenticate first.
func (s *Server) createPaymentIntent(r *http.Request, form url.Values, key, reqID string) response {
	amount, resp, bad := amountParam(form, "amount", true)
	if bad {
		return resp
	}
	cur, resp, bad := currencyParam(form)
	if bad {
		return resp
	}
	confirm := form.Get("confirm")
	if confirm != "" && confirm != "true" && confirm != "false" {
		return invalid("parameter_invalid_boolean", "confirm", "Invalid boolean: %s", confirm)
	}
	now := s.now().UTC()
	p := &payment{Payment: Payment{
		ID:       newID("pi_"),
		Key:      key,
		Amount:   amount,
		Currency: cur,
		Status:   "requires_payment_method",
		Metadata: metadata(form),
		Params:   url.Values(maps.Clone(map[string][]string(form))),
		Created:  now,
	}}
	if form.Get("payment_method") != "" {
		p.Status = "requires_confirmation"
	}
	s.payments = append(s.payments, p)
	s.intents[p.ID] = p
	s.made++
	if confirm == "true" {
		if declinedMethods[form.Get("payment_method")] {
			p.Status = "requires_payment_method"
			pi, _ := json.Marshal(s.intentObject(p))
			return errorResponse(http.StatusPaymentRequired, apiError{Type: "card_error", Code: "card_declined",
				DeclineCode: "generic_decline", Message: "Your card was declined.", PaymentIntent: pi}, true)
		}
		if authenticationMethods[form.Get("payment_method")] {
			p.Status = "requires_action"
			return ok(s.intentObject(p), true)
		}
		p.Status = "succeeded"
		p.ChargeID = newID("ch_")
		p.txn = newID("txn_")
		p.chargeMeta = maps.Clone(p.Metadata)
		s.charges[p.ChargeID] = p
		if debitMethods[form.Get("payment_method")] {
			p.Status = "processing"
			s.event("charge.pending", now, s.chargeObject(p), reqID, key)
			return ok(s.intentObject(p), true)
		}
		s.event("payment_intent.succeeded", now, s.intentObject(p), reqID, key)
		s.event("charge.succeeded", now, s.chargeObject(p), reqID, key)
	}
	return ok(s.intentObject(p), true)
}

// Settle ends a bank debit's processing as its bank does when it pays:
// the intent succeeds.
func (s *Server) Settle(pi string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.intents[pi]
	if p == nil || p.Status != "processing" {
		return fmt.Errorf("no processing payment %s to settle", pi)
	}
	p.Status = "succeeded"
	now := s.now().UTC()
	s.event("payment_intent.succeeded", now, s.intentObject(p), "", "")
	s.event("charge.succeeded", now, s.chargeObject(p), "", "")
	return nil
}

// Return fails a bank debit as its bank does when it returns it, while it
// is processing or after it settled: the charge fails, the intent wants
// another payment method, and the itemized report gives the money back
// (charge_failure).
func (s *Server) Return(pi string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.intents[pi]
	if p == nil || p.ChargeID == "" || !p.returned.IsZero() || !debitMethods[p.Params.Get("payment_method")] {
		return fmt.Errorf("no bank debit %s to return", pi)
	}
	p.Status, p.returned, p.failure = "requires_payment_method", s.now().UTC(), newID("txn_")
	s.event("charge.failed", p.returned, s.chargeObject(p), "", "")
	s.event("payment_intent.payment_failed", p.returned, s.intentObject(p), "", "")
	return nil
}

// getPaymentIntent is GET /v1/payment_intents/{id}, with its latest charge
// inline when asked with expand[]=latest_charge.
func (s *Server) getPaymentIntent(r *http.Request, form url.Values, key, reqID string) response {
	expand, resp, bad := expansions(form, "latest_charge")
	if bad {
		return resp
	}
	id := r.PathValue("id")
	p := s.intents[id]
	if p == nil {
		return errorResponse(http.StatusNotFound, apiError{Type: "invalid_request_error", Code: "resource_missing",
			Param: "intent", Message: "No such payment_intent: '" + id + "'"}, false)
	}
	o := s.intentObject(p)
	if expand["latest_charge"] && p.ChargeID != "" {
		o.LatestCharge = s.chargeObject(p)
	}
	return ok(o, false)
}

// searchPaymentIntents is GET /v1/payment_intents/search, newest first,
// paged with limit and page; what was made within the search lag is not
// found yet.
func (s *Server) searchPaymentIntents(r *http.Request, form url.Values, key, reqID string) response {
	q, err := parseQuery(form.Get("query"))
	if err != nil {
		return invalid("", "query", "%v", err)
	}
	limit, resp, bad := limitParam(form)
	if bad {
		return resp
	}
	offset := 0
	if page := form.Get("page"); page != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(page, "page_"))
		if err != nil || n < 0 || !strings.HasPrefix(page, "page_") {
			return invalid("", "page", "Invalid page: %s", page)
		}
		offset = n
	}
	var hits []*payment
	indexed := s.now().Add(-s.lag)
	for _, p := range slices.Backward(s.payments) {
		if q.matches(p) && !p.Created.After(indexed) {
			hits = append(hits, p)
		}
	}
	result := searchResult{Object: "search_result", URL: "/v1/payment_intents/search", Data: []intentObject{}}
	for i := offset; i < len(hits) && i < offset+limit; i++ {
		result.Data = append(result.Data, s.intentObject(hits[i]))
	}
	if offset+limit < len(hits) {
		next := "page_" + strconv.Itoa(offset+limit)
		result.HasMore, result.NextPage = true, &next
	}
	return ok(result, false)
}

type searchResult struct {
	Object   string         `json:"object"`
	URL      string         `json:"url"`
	HasMore  bool           `json:"has_more"`
	NextPage *string        `json:"next_page"`
	Data     []intentObject `json:"data"`
}

// intentObject is a payment intent as the API writes it.
type intentObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Amount             int64             `json:"amount"`
	AmountCapturable   int64             `json:"amount_capturable"`
	AmountReceived     int64             `json:"amount_received"`
	CaptureMethod      string            `json:"capture_method"`
	ConfirmationMethod string            `json:"confirmation_method"`
	Created            int64             `json:"created"`
	Currency           string            `json:"currency"`
	Customer           *string           `json:"customer"`
	Description        *string           `json:"description"`
	LatestCharge       any               `json:"latest_charge"` // nil, the ch_ id or the chargeObject
	Livemode           bool              `json:"livemode"`
	Metadata           map[string]string `json:"metadata"`
	PaymentMethod      *string           `json:"payment_method"`
	PaymentMethodTypes []string          `json:"payment_method_types"`
	Status             string            `json:"status"`
}

func (s *Server) intentObject(p *payment) intentObject {
	o := intentObject{
		ID:                 p.ID,
		Object:             "payment_intent",
		Amount:             p.Amount,
		CaptureMethod:      "automatic",
		ConfirmationMethod: "automatic",
		Created:            p.Created.Unix(),
		Currency:           p.Currency,
		Customer:           param(p.Params, "customer"),
		Description:        param(p.Params, "description"),
		Metadata:           p.Metadata,
		PaymentMethod:      param(p.Params, "payment_method"),
		PaymentMethodTypes: []string{"card"},
		Livemode:           s.livemode,
		Status:             p.Status,
	}
	if p.ChargeID != "" {
		o.LatestCharge = p.ChargeID
	}
	if p.Status == "succeeded" {
		o.AmountReceived = p.Amount
	}
	return o
}

// chargeObject is a charge as the API writes it, with its refunds.
type chargeObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Amount             int64             `json:"amount"`
	AmountCaptured     int64             `json:"amount_captured"`
	AmountRefunded     int64             `json:"amount_refunded"`
	BalanceTransaction string            `json:"balance_transaction"`
	Captured           bool              `json:"captured"`
	Created            int64             `json:"created"`
	Currency           string            `json:"currency"`
	Customer           *string           `json:"customer"`
	Description        *string           `json:"description"`
	Livemode           bool              `json:"livemode"`
	Metadata           map[string]string `json:"metadata"`
	Paid               bool              `json:"paid"`
	PaymentIntent      any               `json:"payment_intent"` // the pi_ id or the intentObject
	Refunded           bool              `json:"refunded"`
	Disputed           bool              `json:"disputed"`
	Refunds            refundList        `json:"refunds"`
	Status             string            `json:"status"`
}

func (s *Server) chargeObject(p *payment) chargeObject {
	o := chargeObject{
		ID:                 p.ChargeID,
		Object:             "charge",
		Amount:             p.Amount,
		AmountCaptured:     p.Amount,
		AmountRefunded:     p.Refunded,
		BalanceTransaction: p.txn,
		Captured:           true,
		Created:            p.Created.Unix(),
		Currency:           p.Currency,
		Customer:           param(p.Params, "customer"),
		Description:        param(p.Params, "description"),
		Livemode:           s.livemode,
		Metadata:           p.chargeMeta,
		Paid:               p.chargeStatus() == "succeeded",
		PaymentIntent:      p.ID,
		Refunded:           p.Refunded == p.Amount,
		Disputed:           p.Disputed,
		Refunds:            refundList{Object: "list", URL: "/v1/charges/" + p.ChargeID + "/refunds", Data: []refundObject{}},
		Status:             p.chargeStatus(),
	}
	for _, rf := range slices.Backward(p.refunds) {
		o.Refunds.Data = append(o.Refunds.Data, rf.object())
	}
	return o
}

// param returns a form parameter, or nil when it was not sent.
func param(form url.Values, name string) *string {
	if v, ok := form[name]; ok && len(v) > 0 && v[0] != "" {
		return &v[0]
	}
	return nil
}

// amountParam reads a positive integer amount in minor units. The third
// result says the request is to be answered with the second.
func amountParam(form url.Values, name string, required bool) (int64, response, bool) {
	v := form.Get(name)
	if v == "" {
		if required {
			return 0, invalid("parameter_missing", name, "Missing required param: %s.", name), true
		}
		return 0, response{}, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, invalid("parameter_invalid_integer", name, "Invalid integer: %s", v), true
	}
	if n < 1 {
		return 0, invalid("amount_too_small", name, "Amount must be at least 1 (minor unit)."), true
	}
	return n, response{}, false
}

// currencyParam reads a currency Stripe knows, in lower case.
func currencyParam(form url.Values) (string, response, bool) {
	v := form.Get("currency")
	if v == "" {
		return "", invalid("parameter_missing", "currency", "Missing required param: currency."), true
	}
	c, err := reconcile.NormalizeCurrency(v)
	if err == nil {
		_, err = reconcile.Exponent("stripe", c)
	}
	if err != nil {
		return "", invalid("", "currency", "Invalid currency: %s.", v), true
	}
	return strings.ToLower(c), response{}, false
}

// limitParam reads a list's page size: 10 by default, 1 to 100.
func limitParam(form url.Values) (int, response, bool) {
	v := form.Get("limit")
	if v == "" {
		return 10, response{}, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 100 {
		return 0, invalid("parameter_invalid_integer", "limit", "Invalid limit: %s (an integer from 1 to 100).", v), true
	}
	return n, response{}, false
}
