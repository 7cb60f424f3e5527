package stripe

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"reconcile"
)

// EventsOptions configures ParseEvents. The zero value reads live events.
type EventsOptions struct {
	// TestMode takes the events of Stripe's test mode ("livemode": false)
	// as evidence and ignores live ones, rather than the other way round.
	TestMode bool
}

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

// eventParser turns decoded JSON values into outcomes, remembering which
// event ids it has seen so that a redelivered event counts once.
type eventParser struct {
	sink       reconcile.RowSink
	seen       map[string]int    // event id → line first seen
	currencies map[string]string // currency as written → its code, for those that passed
	testMode   bool              // read test-mode events, not live ones
	// cut says that the JSON Lines line being read ends the input without
	// a line terminator: an event on it must not be rejected, as it may be
	// cut off (see tabular.CutError).
	cut bool
}

// rejection is a row-level problem: the row is rejected with its text.
type rejection string

func (r rejection) Error() string { return string(r) }

func reject(format string, args ...any) error { return rejection(fmt.Sprintf(format, args...)) }

// value gives one JSON value, read from line, its outcome.
func (p *eventParser) value(line int, raw string) error {
	evs, ignore, err := p.outcome(line, raw)
	var rej rejection
	switch {
	case errors.As(err, &rej) && p.cut:
		return cutEvent(line, raw, rej)
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
func (p *eventParser) outcome(line int, raw string) ([]*reconcile.Evidence, string, error) {
	ev, err := decodeEvent(raw)
	if err != nil {
		return nil, "", err
	}
	// Stripe says livemode on every event: one that does not was written
	// by hand, and is taken for live, as an API call is unless told
	// otherwise.
	if live := ev.Livemode == nil || *ev.Livemode; live == p.testMode {
		if live {
			return nil, "live event (livemode true); this run reads test-mode events (--livemode=false)", nil
		}
		return nil, "test-mode event (livemode false); this run reads live events (--livemode=false reads test mode)", nil
	}
	if first, ok := p.seen[ev.ID]; ok {
		return nil, fmt.Sprintf("duplicate of event %s (line %d)", ev.ID, first), nil
	}
	// A copy, as the id may be a substring of the whole event's text.
	p.seen[strings.Clone(ev.ID)] = line
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

func (d *jsonScan) event(ev *event) {
	var seen fieldSet
	for more := d.open('{'); more; more = d.next('}') {
		switch key := d.key(); key {
		case "id":
			d.once(&seen, 0)
			ev.ID = d.text()
		case "object":
			d.once(&seen, 1)
			ev.Object = d.text()
		case "type":
			d.once(&seen, 2)
			ev.Type = d.text()
		case "created":
			d.once(&seen, 3)
			ev.Created.read(d.value())
		case "data":
			d.once(&seen, 4)
			if d.null() {
				continue
			}
			var seen fieldSet
			for more := d.open('{'); more; more = d.next('}') {
				switch key := d.key(); key {
				case "object":
					d.once(&seen, 0)
					if !d.null() {
						ev.Data.Object = new(object)
						d.object(ev.Data.Object)
					}
				default:
					d.other(key)
				}
			}
		case "request":
			d.once(&seen, 5)
			if v := d.value(); firstByte(v) == '{' {
				ev.Request.idempotencyKey = idempotencyKey(v)
			}
		case "body":
			d.once(&seen, 6)
			ev.body = d.value()
		case "livemode":
			d.once(&seen, 7)
			ev.Livemode = d.boolean()
		default:
			d.other(key)
		}
	}
}

func (d *jsonScan) object(o *object) {
	var seen fieldSet
	for more := d.open('{'); more; more = d.next('}') {
		switch key := d.key(); key {
		case "id":
			d.once(&seen, 0)
			o.ID = d.text()
		case "object":
			d.once(&seen, 1)
			o.Object = d.text()
		case "amount":
			d.once(&seen, 2)
			o.Amount.read(d.value())
		case "amount_received":
			d.once(&seen, 3)
			o.AmountReceived.read(d.value())
		case "amount_captured":
			d.once(&seen, 4)
			o.AmountCaptured.read(d.value())
		case "currency":
			d.once(&seen, 5)
			o.Currency = d.text()
		case "status":
			d.once(&seen, 6)
			o.Status = d.text()
		case "captured":
			d.once(&seen, 7)
			o.Captured = d.boolean()
		case "description":
			d.once(&seen, 8)
			o.Description = d.text()
		case "reason":
			d.once(&seen, 9)
			o.Reason = d.text()
		case "metadata":
			d.once(&seen, 10)
			o.meta = d.metadata()
		case "charge":
			d.once(&seen, 11)
			o.Charge = refOf(d.value())
		case "payment_intent":
			d.once(&seen, 12)
			o.PaymentIntent = refOf(d.value())
		case "latest_charge":
			d.once(&seen, 13)
			o.LatestCharge = refOf(d.value())
		case "balance_transaction":
			d.once(&seen, 14)
			if v := d.value(); firstByte(v) == '{' {
				o.BalanceTransaction.UnmarshalJSON([]byte(v))
			}
		case "charges":
			d.once(&seen, 15)
			o.Charges = d.charges()
		case "refunds":
			d.once(&seen, 16)
			o.Refunds = d.refunds()
		case "balance_transactions":
			// Only disputes list them, a few small objects: encoding/json
			// reads them, and a shape it fails on is left to it whole.
			d.once(&seen, 17)
			if v := d.value(); !d.failed && json.Unmarshal([]byte(v), &o.BalanceTransactions) != nil {
				d.fail()
			}
		default:
			d.other(key)
		}
	}
}

// metadata reads a metadata object into pairs, as encoding/json reads it
// into a map[string]metaValue.
func (d *jsonScan) metadata() []metaPair {
	if d.null() {
		return nil
	}
	var meta []metaPair
	for more := d.open('{'); more; more = d.next('}') {
		k := unescape(d.key())
		meta = append(meta, metaPair{k, metaText(d.value())})
	}
	return meta
}

func (d *jsonScan) charges() *chargeList {
	l := new(chargeList)
	present := d.list(func() {
		var c chargeRef
		if !d.null() {
			var seen fieldSet
			for more := d.open('{'); more; more = d.next('}') {
				switch key := d.key(); key {
				case "id":
					d.once(&seen, 0)
					c.ID = d.text()
				default:
					d.other(key)
				}
			}
		}
		l.Data = append(l.Data, c)
	}, func() { l.Data = []chargeRef{} })
	if !present {
		return nil
	}
	return l
}

func (d *jsonScan) refunds() *refundList {
	l := new(refundList)
	present := d.list(func() {
		l.Data = append(l.Data, object{})
		if !d.null() {
			d.object(&l.Data[len(l.Data)-1])
		}
	}, func() { l.Data = []object{} })
	if !present {
		return nil
	}
	return l
}

// list reads a Stripe list object ({"data": [...]}), or null, reporting
// whether it was there. A data array that is there, even empty, is first
// given to start (encoding/json makes it an empty slice, not nil), then
// each of its elements to item.
func (d *jsonScan) list(item, start func()) bool {
	if d.null() {
		return false
	}
	var seen fieldSet
	for more := d.open('{'); more; more = d.next('}') {
		switch key := d.key(); key {
		case "data":
			d.once(&seen, 0)
			if d.null() {
				continue
			}
			start()
			for more := d.open('['); more; more = d.next(']') {
				item()
			}
		default:
			d.other(key)
		}
	}
	return true
}

// idempotencyKey reads a request object's idempotency_key as request's
// UnmarshalJSON does, leaving the shapes the scanner gives up on to it.
func idempotencyKey(obj string) string {
	d := jsonScan{s: obj}
	key := ""
	var seen fieldSet
	for more := d.open('{'); more; more = d.next('}') {
		switch k := d.key(); k {
		case "idempotency_key":
			d.once(&seen, 0)
			key = d.text()
		default:
			d.other(k)
		}
	}
	if d.end(); d.failed {
		var r request
		r.UnmarshalJSON([]byte(obj))
		return r.idempotencyKey
	}
	return key
}

// text reads a string field: a string, or null for none.
func (d *jsonScan) text() string {
	if d.null() {
		return ""
	}
	s, plain := d.str()
	if plain {
		return s
	}
	return unescape(s)
}

// boolean reads a *bool field.
func (d *jsonScan) boolean() *bool {
	var b bool
	switch d.peek() {
	case 'n':
		d.literal("null")
		return nil
	case 't':
		d.literal("true")
		b = true
	case 'f':
		d.literal("false")
	default:
		d.fail()
	}
	return &b
}

// unescape returns the string the text between a JSON string's quotes
// stands for, as encoding/json decodes it: it replaces invalid UTF-8 with
// U+FFFD.
func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 && utf8.ValidString(s) {
		return s
	}
	var v string
	json.Unmarshal([]byte(`"`+s+`"`), &v) // s was read as a valid string
	return v
}

// other skips the value of a member that names no field we read. A key
// encoding/json could still match to a field, ignoring case or once
// unescaped, is left to encoding/json.
func (d *jsonScan) other(key string) {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c == '\\' || c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			d.fail()
			return
		}
	}
	d.value()
}

// fieldSet notes which fields of a struct have been read.
type fieldSet uint32

// once notes that field f is read, and gives up when it was read before.
func (d *jsonScan) once(seen *fieldSet, f int) {
	if *seen&(1<<f) != 0 {
		d.fail()
	}
	*seen |= 1 << f
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
