package stripe

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// event is a Stripe Event object, or a webhook log's wrapper around one
// ({"received_at": ..., "body": ...}), as far as we read it. data.object is
// decoded in the same pass as the event, as an object: a field of the wrong
// type there is only an error for the event types we read.
//
// Events are decoded by decodeFast and, when it gives up, by encoding/json
// into the same struct: the json tags are encoding/json's, and the
// unexported fields below are filled in by both.
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
	// Livemode is false for the events of Stripe's test mode, nil when
	// the event does not say.
	Livemode *bool `json:"livemode"`

	// body is the text of Body, which is where decodeEvent reads it.
	body string
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
	Metadata           map[string]metaValue `json:"metadata"` // set by encoding/json only: read meta
	Charge             ref                  `json:"charge"`
	PaymentIntent      ref                  `json:"payment_intent"`
	LatestCharge       ref                  `json:"latest_charge"`
	BalanceTransaction balanceTransaction   `json:"balance_transaction"`
	// Charges is how payment intents listed their charges before API
	// version 2022-11-15 introduced latest_charge.
	Charges *chargeList `json:"charges"`
	Refunds *refundList `json:"refunds"`
	// BalanceTransactions are a dispute's: see disputeTxn.
	BalanceTransactions []disputeTxn `json:"balance_transactions"`

	// meta is the metadata in the order given, repeated keys and all.
	meta []metaPair
}

type chargeList struct {
	Data []chargeRef `json:"data"`
}

type chargeRef struct {
	ID string `json:"id"`
}

type refundList struct {
	Data []object `json:"data"`
}

// metaPair is one metadata entry.
type metaPair struct{ key, value string }

// metaOf returns the value of a metadata key: the last one given, as
// decoding into a map keeps.
func metaOf(meta []metaPair, key string) string {
	for i := len(meta) - 1; i >= 0; i-- {
		if meta[i].key == key {
			return meta[i].value
		}
	}
	return ""
}

// listMeta sets meta from the map encoding/json decoded, for o and the
// refunds it lists. The map's keys are unique, so their order is no matter.
func (o *object) listMeta() {
	if o == nil {
		return
	}
	for k, v := range o.Metadata {
		o.meta = append(o.meta, metaPair{k, string(v)})
	}
	if o.Refunds != nil {
		for i := range o.Refunds.Data {
			o.Refunds.Data[i].listMeta()
		}
	}
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
	n.read(string(b))
	return nil
}

// read reads the JSON text of the value.
func (n *jsonInt) read(text string) {
	if text == "null" {
		return
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		*n = jsonInt{set: true, bad: text}
		return
	}
	*n = jsonInt{v: v, set: true}
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
	*r = refOf(string(b))
	return nil
}

// refOf reads a reference from the JSON text of its value.
func refOf(text string) ref {
	var r ref
	switch firstByte(text) {
	case 'n':
	case '"':
		var ok bool
		r.id, ok = unquote(text)
		r.bad = !ok
	case '{':
		var v struct {
			ID string `json:"id"`
		}
		r.bad = json.Unmarshal([]byte(text), &v) != nil
		r.id = v.ID
	default:
		r.bad = true
	}
	return r
}

// firstByte returns the first byte of text, 0 when it is empty.
func firstByte(text string) byte {
	if text == "" {
		return 0
	}
	return text[0]
}

// metaValue is a metadata value. Stripe's are strings; anything else a
// hand-made dump holds is kept as its JSON text.
type metaValue string

// UnmarshalJSON never fails. encoding/json gives it a zeroed value for
// each map entry.
func (m *metaValue) UnmarshalJSON(b []byte) error {
	*m = metaValue(metaText(string(b)))
	return nil
}

// metaText reads a metadata value from the JSON text of the value.
func metaText(text string) string {
	if s, ok := unquote(text); ok {
		return s
	} else if text != "null" {
		return text
	}
	return ""
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
func unquote(text string) (string, bool) {
	if len(text) >= 2 && text[0] == '"' && text[len(text)-1] == '"' && strings.IndexByte(text, '\\') < 0 {
		return text[1 : len(text)-1], true
	}
	var s string
	err := json.Unmarshal([]byte(text), &s)
	return s, err == nil
}

// decodeEvent reads an event, unwrapping a webhook log's wrapper, and
// rejects what is not JSON or not an event.
func decodeEvent(data string) (*event, error) {
	ev, err := decodeOne(data)
	if err != nil {
		return nil, err
	}
	if ev.Type == "" && ev.Object == "" && len(ev.body) > 0 {
		body := ev.body
		if body[0] == '"' {
			var s string
			if err := json.Unmarshal([]byte(body), &s); err != nil {
				return nil, reject("body: %v", err)
			}
			body = s
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
//
// decodeFast decodes the events Stripe sends; what it gives up on is
// decoded with encoding/json, whose errors make the rejections.
func decodeOne(data string) (*event, error) {
	data = strings.TrimSpace(data)
	if (len(data) == 0 || data[0] != '{') && json.Valid([]byte(data)) {
		return nil, reject("not a Stripe event: JSON %s, not an object", jsonKind(data))
	}
	if ev, ok := decodeFast(data); ok {
		return ev, nil
	}
	ev := new(event)
	err := json.Unmarshal([]byte(data), ev)
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
	ev.body = string(ev.Body)
	ev.Data.Object.listMeta()
	return ev, nil
}

// jsonKind names the kind of JSON value data holds.
func jsonKind(data string) string {
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

// decodeFast decodes an event as decodeOne's json.Unmarshal would, in one
// pass over the text and without reflection; the strings it gives are
// substrings of data where no unescaping is needed. It gives up, reporting
// false, on what it would not decode exactly alike: text that is not valid
// JSON, keys that are escaped or not lower case (encoding/json matches
// fields ignoring case), a field given twice (encoding/json merges them), a
// field of the wrong type (encoding/json's error names it) and deep
// nesting. Stripe sends none of these.
func decodeFast(data string) (*event, bool) {
	d := jsonScan{s: data}
	ev := new(event)
	d.event(ev)
	d.end()
	return ev, !d.failed
}
