package stripe

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// jsonScan reads one JSON value held in a string, for decodeFast. It checks
// the syntax as strictly as encoding/json does, or more so: once it meets
// anything it is unsure of, it sets failed and finds the end of the text
// wherever it reads next.
type jsonScan struct {
	s      string
	i      int // the next byte to read
	depth  int // objects and arrays open
	failed bool
}

// maxScanDepth bounds the nesting jsonScan reads, far below encoding/json's
// limit of 10000: deeper text is left to encoding/json.
const maxScanDepth = 100

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

func (d *jsonScan) fail() {
	d.failed = true
	d.i = len(d.s)
}

// peek skips white space and returns the next byte, 0 at the end.
func (d *jsonScan) peek() byte {
	for ; d.i < len(d.s); d.i++ {
		switch c := d.s[d.i]; c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// end checks that nothing but white space follows.
func (d *jsonScan) end() {
	if d.peek(); d.i != len(d.s) {
		d.fail()
	}
}

// open reads the '{' or '[' that starts an object or array and reports
// whether a member or element follows; of an empty one it reads the end
// too. A loop over the members reads each and calls next:
//
//	for more := d.open('{'); more; more = d.next('}') { d.key(); d.value() }
func (d *jsonScan) open(c byte) bool {
	if d.peek() != c {
		d.fail()
		return false
	}
	d.i++
	if d.depth++; d.depth > maxScanDepth {
		d.fail()
		return false
	}
	end := byte('}')
	if c == '[' {
		end = ']'
	}
	if d.peek() == end {
		d.i++
		d.depth--
		return false
	}
	return true
}

// next reads what follows a member or element: a comma, reporting true, or
// the end of the object or array, reporting false.
func (d *jsonScan) next(end byte) bool {
	switch d.peek() {
	case ',':
		d.i++
		return true
	case end:
		d.i++
		d.depth--
		return false
	}
	d.fail()
	return false
}

// key reads a member's key and the colon after it, and returns the key as
// written between its quotes.
func (d *jsonScan) key() string {
	k, _ := d.str()
	if d.peek() != ':' {
		d.fail()
		return ""
	}
	d.i++
	return k
}

// null reads a null, if that is what follows.
func (d *jsonScan) null() bool {
	if d.peek() != 'n' {
		return false
	}
	d.literal("null")
	return true
}

// value reads a value of any kind and returns its text.
func (d *jsonScan) value() string {
	c := d.peek()
	start := d.i
	switch {
	case c == '"':
		d.str()
	case c == '{':
		for more := d.open('{'); more; more = d.next('}') {
			d.key()
			d.value()
		}
	case c == '[':
		for more := d.open('['); more; more = d.next(']') {
			d.value()
		}
	case c == 't':
		d.literal("true")
	case c == 'f':
		d.literal("false")
	case c == 'n':
		d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		d.number()
	default:
		d.fail()
	}
	return d.s[start:d.i]
}

func (d *jsonScan) literal(word string) {
	if !strings.HasPrefix(d.s[d.i:], word) {
		d.fail()
		return
	}
	d.i += len(word)
}

// number reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *jsonScan) number() {
	s, i := d.s, d.i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = digits(s, i)
	default:
		d.fail()
		return
	}
	if i < len(s) && s[i] == '.' {
		if i++; i == len(s) || !isDigit(s[i]) {
			d.fail()
			return
		}
		i = digits(s, i)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		if i++; i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || !isDigit(s[i]) {
			d.fail()
			return
		}
		i = digits(s, i)
	}
	d.i = i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digits returns the index of the first byte from i on that is no digit.
func digits(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// str reads a string and returns the text between its quotes, and whether
// that is plain: ASCII without escapes, so the text is the string.
func (d *jsonScan) str() (string, bool) {
	if d.peek() != '"' {
		d.fail()
		return "", false
	}
	s := d.s
	start := d.i + 1
	plain := true
	for i := start; i < len(s); {
		if plainByte[s[i]] {
			i++
			continue
		}
		switch c := s[i]; {
		case c == '"':
			d.i = i + 1
			return s[start:i], plain
		case c == '\\':
			plain = false
			if i+1 == len(s) {
				d.fail()
				return "", false
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) || !isHex(s[i+5]) {
					d.fail()
					return "", false
				}
				i += 6
			default:
				d.fail()
				return "", false
			}
		case c < ' ':
			d.fail() // control characters must be escaped
			return "", false
		default: // the bytes of a multi-byte character, checked when decoded
			plain = false
			i++
		}
	}
	d.fail()
	return "", false
}

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// plainByte holds the bytes a string may hold as they are: printable ASCII
// but the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
