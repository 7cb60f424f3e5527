package stripe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"reconcile"
)

// EventsOptions configures ParseEvents. It has no settings yet; the zero
// value is the one to pass.
type EventsOptions struct{}

// event is a Stripe Event object, or a webhook log's wrapper around one
// ({"received_at": ..., "body": ...}), as far as we read it. data.object is
// decoded in the same pass as the event, as an object: a field of the wrong
// type there is only an error for the event types we read.
type event struct {
	ID      string  `json:"id"`
	Object  string  `json:"object"`
	Type    string  `json:"type"`
	Created jsonInt `json:"created"`
	Data    struct {
		Object *object `json:"object"`
	} `json:"data"`
	Request request         `json:"request"`
	Body    json.RawMessage `json:"body"`

	// objectErr is the first field of data.object that had the wrong type.
	objectErr *json.UnmarshalTypeError
}

// object is the union of the fields we read from the objects events carry:
// payment_intent, charge, refund, dispute and payout.
type object struct {
	ID                 string               `json:"id"`
	Object             string               `json:"object"`
	Amount             jsonInt              `json:"amount"`
	AmountReceived     jsonInt              `json:"amount_received"`
	AmountCaptured     jsonInt              `json:"amount_captured"`
	Currency           string               `json:"currency"`
	Status             string               `json:"status"`
	Captured           *bool                `json:"captured"`
	Description        string               `json:"description"`
	Reason             string               `json:"reason"`
	Metadata           map[string]metaValue `json:"metadata"`
	Charge             ref                  `json:"charge"`
	PaymentIntent      ref                  `json:"payment_intent"`
	LatestCharge       ref                  `json:"latest_charge"`
	BalanceTransaction balanceTransaction   `json:"balance_transaction"`
	// Charges is how payment intents listed their charges before API
	// version 2022-11-15 introduced latest_charge.
	Charges *struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	} `json:"charges"`
	Refunds *struct {
		Data []object `json:"data"`
	} `json:"refunds"`
}

// jsonInt is an integer field that notes, rather than fails on, a value
// that is not one, so that the rest of the event still decodes and the
// rejection can name the value.
type jsonInt struct {
	v   int64
	set bool   // present and not null
	bad string // the JSON text, when it is not an integer
}

// UnmarshalJSON never fails.
func (n *jsonInt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		*n = jsonInt{set: true, bad: string(b)}
		return nil
	}
	*n = jsonInt{v: v, set: true}
	return nil
}

// The types below, like jsonInt, never fail to decode: an error from an
// UnmarshalJSON method would stop the whole event's decoding, and an event
// of a type we do not read must be ignored whatever its object holds.

// ref is a reference to another object: its id, or the object expanded.
type ref struct {
	id  string
	bad bool // neither a string nor an object with a string id
}

// UnmarshalJSON never fails.
func (r *ref) UnmarshalJSON(b []byte) error {
	*r = ref{}
	switch b[0] {
	case 'n':
	case '"':
		var ok bool
		r.id, ok = unquote(b)
		r.bad = !ok
	case '{':
		var v struct {
			ID string `json:"id"`
		}
		r.bad = json.Unmarshal(b, &v) != nil
		r.id = v.ID
	default:
		r.bad = true
	}
	return nil
}

// metaValue is a metadata value. Stripe's are strings; anything else a
// hand-made dump holds is kept as its JSON text.
type metaValue string

// UnmarshalJSON never fails.
func (m *metaValue) UnmarshalJSON(b []byte) error {
	if s, ok := unquote(b); ok {
		*m = metaValue(s)
	} else if string(b) != "null" {
		*m = metaValue(b)
	}
	return nil
}

// request is an event's request: {"id", "idempotency_key"} since API
// version 2017-05-25, a bare request id before.
type request struct{ idempotencyKey string }

// UnmarshalJSON never fails.
func (r *request) UnmarshalJSON(b []byte) error {
	var v struct {
		IdempotencyKey string `json:"idempotency_key"`
	}
	if b[0] == '{' && json.Unmarshal(b, &v) == nil {
		r.idempotencyKey = v.IdempotencyKey
	}
	return nil
}

// balanceTransaction is a balance transaction's id or, expanded, its fee.
type balanceTransaction struct{ fee int64 }

// UnmarshalJSON never fails.
func (t *balanceTransaction) UnmarshalJSON(b []byte) error {
	var v struct {
		Fee int64 `json:"fee"`
	}
	if b[0] == '{' && json.Unmarshal(b, &v) == nil {
		t.fee = v.Fee
	}
	return nil
}

// unquote reads a JSON string, quickly when it has no escapes.
func unquote(b []byte) (string, bool) {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' && bytes.IndexByte(b, '\\') < 0 {
		return string(b[1 : len(b)-1]), true
	}
	var s string
	err := json.Unmarshal(b, &s)
	return s, err == nil
}

// eventParser turns decoded JSON values into outcomes, remembering which
// event ids it has seen so that a redelivered event counts once.
type eventParser struct {
	sink reconcile.RowSink
	seen map[string]int // event id → line first seen
}

// rejection is a row-level problem: the row is rejected with its text.
type rejection string

func (r rejection) Error() string { return string(r) }

func reject(format string, args ...any) error { return rejection(fmt.Sprintf(format, args...)) }

// value gives one JSON value, read from line, its outcome.
func (p *eventParser) value(line int, raw string, data []byte) error {
	evs, ignore, err := p.outcome(line, raw, data)
	var rej rejection
	switch {
	case errors.As(err, &rej):
		return p.sink.Reject(line, raw, string(rej))
	case err != nil:
		return err
	case ignore != "":
		return p.sink.Ignore(line, ignore)
	}
	for _, e := range evs {
		if err := p.sink.Evidence(e); err != nil {
			return err
		}
	}
	return nil
}

// outcome decodes one value: the evidence it gives, or why it is ignored,
// or a rejection.
func (p *eventParser) outcome(line int, raw string, data []byte) ([]*reconcile.Evidence, string, error) {
	ev, err := decodeEvent(data)
	if err != nil {
		return nil, "", err
	}
	if first, ok := p.seen[ev.ID]; ok {
		return nil, fmt.Sprintf("duplicate of event %s (line %d)", ev.ID, first), nil
	}
	p.seen[ev.ID] = line
	switch {
	case !ev.Created.set:
		return nil, "", reject("event %s has no created time", ev.ID)
	case ev.Created.bad != "":
		return nil, "", reject("event %s: created %s is not a unix time in seconds", ev.ID, ev.Created.bad)
	}
	h, ok := eventHandlers[ev.Type]
	if !ok && strings.HasPrefix(ev.Type, "charge.dispute.") {
		h, ok = eventHandler{"dispute", (*eventParser).dispute}, true
	}
	if !ok {
		return nil, fmt.Sprintf("event type %s does not move money we track", ev.Type), nil
	}
	o := ev.Data.Object
	if te := ev.objectErr; te != nil {
		return nil, "", reject("event %s: data.object is not a %s: field %s is a JSON %s", ev.ID, h.object, te.Field, te.Value)
	}
	if o.Object != "" && o.Object != h.object {
		return nil, "", reject("event %s (%s) carries a %s object, not a %s", ev.ID, ev.Type, o.Object, h.object)
	}
	o.Object = h.object // for messages, when the dump left it out
	base := reconcile.Evidence{
		Provider: provider,
		RawKind:  ev.Type,
		Time:     time.Unix(ev.Created.v, 0).UTC(),
		Line:     line,
		Raw:      raw,
	}
	return h.fn(p, ev, o, base)
}

// decodeEvent reads an event, unwrapping a webhook log's wrapper, and
// rejects what is not JSON or not an event.
func decodeEvent(data []byte) (*event, error) {
	ev, err := decodeOne(data)
	if err != nil {
		return nil, err
	}
	if ev.Type == "" && ev.Object == "" && len(ev.Body) > 0 {
		body := ev.Body
		if body[0] == '"' {
			var s string
			if err := json.Unmarshal(body, &s); err != nil {
				return nil, reject("body: %v", err)
			}
			body = []byte(s)
		}
		if ev, err = decodeOne(body); err != nil {
			return nil, reject("body: %v", err)
		}
	}
	switch {
	case ev.Object != "" && ev.Object != "event":
		return nil, reject("not a Stripe event: a JSON %s object", ev.Object)
	case ev.ID == "" || ev.Type == "":
		return nil, reject("not a Stripe event: no id or no type")
	case ev.Data.Object == nil:
		return nil, reject("event %s has no data.object", ev.ID)
	}
	return ev, nil
}

// decodeOne decodes a JSON object as an event, saying what is wrong when
// the text is not JSON, not an object, or not shaped like an event. A
// wrong type inside data.object is kept for later.
func decodeOne(data []byte) (*event, error) {
	data = bytes.TrimSpace(data)
	if (len(data) == 0 || data[0] != '{') && json.Valid(data) {
		return nil, reject("not a Stripe event: JSON %s, not an object", jsonKind(data))
	}
	ev := new(event)
	err := json.Unmarshal(data, ev)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return nil, reject("malformed JSON: %v (at byte %d)", err, se.Offset)
	case errors.As(err, &te) && strings.HasPrefix(te.Field, "data.object."):
		ev.objectErr = te
	case errors.As(err, &te):
		return nil, reject("not a Stripe event: field %s is a JSON %s", te.Field, te.Value)
	case err != nil:
		return nil, reject("not a Stripe event: %v", err)
	}
	return ev, nil
}

// jsonKind names the kind of JSON value data holds.
func jsonKind(data []byte) string {
	switch data[0] {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

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
	return one(ev, o, e, amount, "")
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
	return one(ev, o, e, amount, "")
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
		e.ParentEffectKey = string(o.Metadata["effect_key"])
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
	return one(ev, o, e, -amount, o.Reason)
}

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
	if ev.Type != "charge.dispute.funds_reinstated" {
		amount = -amount
	}
	e.TxID, e.ParentTxID, e.PaymentIntent, e.Kind = o.ID, charge, pi, reconcile.KindDispute
	// An inquiry (warning_*) withdraws no funds; one closed as an inquiry
	// never will.
	switch {
	case o.Status == "warning_closed":
		e.Failed = true
	case strings.HasPrefix(o.Status, "warning_"):
		e.Pending = true
	}
	return one(ev, o, e, amount, o.Reason)
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
	return one(ev, o, e, -amount, "")
}

// one completes a record with what every object has: currency, description,
// metadata and the effect key.
func one(ev *event, o *object, e reconcile.Evidence, amount int64, fallbackDesc string) ([]*reconcile.Evidence, string, error) {
	cur, err := reconcile.NormalizeCurrency(o.Currency)
	if err == nil {
		_, err = reconcile.Exponent(provider, cur)
	}
	if err != nil {
		return nil, "", reject("event %s: %s %s: currency: %v", ev.ID, o.Object, o.ID, err)
	}
	e.Amount = reconcile.Money{Minor: amount, Currency: cur}
	e.Description = o.Description
	if e.Description == "" {
		e.Description = fallbackDesc
	}
	e.EffectKey = string(o.Metadata["effect_key"])
	if e.EffectKey == "" && createdByRequest(ev.Type) {
		e.EffectKey = ev.Request.idempotencyKey
	}
	e.Metadata = map[string]string{}
	for k, v := range o.Metadata {
		if v != "" {
			e.Metadata[k] = string(v)
		}
	}
	e.Metadata["event_id"] = ev.ID
	return []*reconcile.Evidence{&e}, "", nil
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
