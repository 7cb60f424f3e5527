package stripe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"reconcile/ingest/ingesttest"
)

// decodeSlow decodes an event with encoding/json alone, as decodeOne does
// when decodeFast gives up.
func decodeSlow(data string) (*event, error) {
	ev := new(event)
	if err := json.Unmarshal([]byte(data), ev); err != nil {
		return nil, err
	}
	ev.body = string(ev.Body)
	ev.Data.Object.listMeta()
	return ev, nil
}

// sameEvent compares events field by field, metadata as a map would hold
// it, leaving out the fields only encoding/json fills.
var sameEvent = []cmp.Option{
	cmp.Exporter(func(reflect.Type) bool { return true }),
	cmpopts.IgnoreFields(event{}, "Body"),
	cmpopts.IgnoreFields(object{}, "Metadata"),
	cmp.Transformer("meta", func(meta []metaPair) map[string]string {
		m := map[string]string{}
		for _, p := range meta {
			m[p.key] = p.value
		}
		return m
	}),
}

// checkFast fails t unless decodeFast either gives up on data or decodes it
// exactly as encoding/json does, without error.
func checkFast(t *testing.T, data string) {
	t.Helper()
	fast, ok := decodeFast(data)
	if !ok {
		return
	}
	if !json.Valid([]byte(data)) {
		t.Fatalf("decodeFast read invalid JSON %q", data)
	}
	slow, err := decodeSlow(data)
	if err != nil {
		t.Fatalf("decodeFast read %q, which encoding/json fails on: %v", data, err)
	}
	if diff := cmp.Diff(slow, fast, sameEvent...); diff != "" {
		t.Fatalf("decodeFast(%q) differs from encoding/json (-slow +fast):\n%s", data, diff)
	}
}

// fastInputs are events decodeFast must read, and text it must give up on
// or read exactly as encoding/json does.
var fastInputs = []string{
	`{"id":"evt_1","object":"event","type":"charge.succeeded","created":1,"data":{"object":{"id":"ch_1","amount":5,"currency":"usd","captured":true,"metadata":{"a":"1","b":null,"c":2,"d":{"x": [1, 2]},"a":""}}},"request":{"id":"req_1","idempotency_key":"k"}}`,
	" { \"id\" : \"evt_1\" , \"type\" : \"x\" , \"data\" : { \"object\" : { } } } ",
	`{"id":"evt_1","type":"charge.refunded","created":-0,"data":{"object":{"refunds":{"data":[null,{"id":"re_1","metadata":{"effect_key":"e"}},{}]},"charges":{"data":[{"id":"ch_1"},null]}}}}`,
	`{"id":"evt_1","type":"x","data":{"object":{"refunds":{"data":[]},"charges":{"data":null},"captured":null,"latest_charge":{"id":"ch_1"},"balance_transaction":{"fee":12}}}}`,
	`{"received_at":1,"body":{"id":"evt_1","type":"x","data":{"object":{}}}}`,
	`{"received_at":1,"body":"{\"id\":\"evt_1\"}"}`,
	`{"body":null}`,
	`{"id":"evt_\u00e9","type":"caf\u00e9","data":{"object":{"description":"caf\u00e9 \"x\"","metadata":{"k\u00e9y":"v\"","\u00e9":"é"}}}}`,
	"{\"id\":\"evt_\xff\",\"data\":{\"object\":{\"id\":\"ch_\xff\",\"metadata\":{\"\xff\":\"\xff\"},\"charge\":\"ch_\xff\"}}}",
	`{"id":"evt_1","created":1.5e3,"data":{"object":{"amount":"10","amount_received":[1],"amount_captured":{"a":1}}}}`,
	`{"id":"evt_1","request":"req_1"}`,
	`{"id":"evt_1","data":{"object":{"balance_transactions":[{"id":"txn_1","amount":-5,"fee":2,"currency":"usd","created":3,"fee_details":[{"amount":2}]},{"ID":"txn_2","Amount":1.5,"id":"txn_3"},null]}}}`,
	`{"id":"evt_1","data":{"object":{"balance_transactions":null}}}`,
	`{"id":"evt_1","data":{"object":{"balance_transactions":[{"currency":7}]}}}`,
	`{"id":"evt_1","data":{"object":{"balance_transactions":"txn_1"}}}`,
	`{"id":"evt_1","data":{"object":{"balance_transactions":[],"balance_transactions":[{"id":"x"}]}}}`,
	`{"id":"evt_1","data":{"object":{"balance_transactions":[{"id":"x",}]}}}`,
	`{"id":"evt_1","request":{"idempotency_key":null}}`,
	`{"id":"evt_1","request":{"idempotency_key":5}}`,
	`{"id":"evt_1","request":{"Idempotency_Key":"k"}}`,
	`{"id":"evt_1","request":{"idempotency_key":"a","idempotency_key":"b"}}`,
	`{"id":"evt_1","ID":"evt_2"}`,
	`{"id":"evt_1","id":null}`,
	`{"i\u0064":"evt_1"}`,
	`{"id":"evt_1","data":{"object":{"metadata":{}}},"data":{"object":{"id":"x"}}}`,
	`{"id":"evt_1","data":{"object":{"captured":"yes"}}}`,
	`{"id":"evt_1","data":{"object":[1]}}`,
	`{"id":"evt_1","data":[]}`,
	`{"id":7}`,
	`{"id":"evt_1","data":{"object":{"id":"ch_1",}}}`,
	`{"id":"evt_1"} {"id":"evt_2"}`,
	`{"id":"evt_1","x":[1,]}`,
	`{"id":"evt_1","x":01}`,
	`{"id":"evt_1","x":-}`,
	`{"id":"evt_1","x":1.}`,
	`{"id":"evt_1","x":1e}`,
	`{"id":"evt_1","x":tru}`,
	`{"id":"evt_1","x":"\x"}`,
	`{"id":"evt_1","x":"\u12"}`,
	"{\"id\":\"evt_1\",\"x\":\"\t\"}",
	`{"id":"evt_1"`,
	`{"id":"evt_1",`,
	strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200),
	`{"a":` + strings.Repeat(`[`, 50) + strings.Repeat(`]`, 50) + `}`,
}

func TestDecodeFastAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range fastInputs {
		checkFast(t, in)
	}
	for _, in := range eventLines(t) {
		checkFast(t, in)
	}
}

// TestDecodeFastReadsStripe checks that decodeFast reads every event
// Stripe could send, and not only gives up.
func TestDecodeFastReadsStripe(t *testing.T) {
	for _, in := range strings.Split(strings.TrimSpace(string(benchEvents(20))), "\n") {
		if _, ok := decodeFast(in); !ok {
			t.Errorf("decodeFast gave up on %s", in)
		}
	}
	for _, in := range fastInputs[:10] {
		if _, ok := decodeFast(in); !ok {
			t.Errorf("decodeFast gave up on %s", in)
		}
	}
	for _, in := range strings.Split(string(ingesttest.ReadFile(t, "testdata/events.jsonl")), "\n") {
		if !strings.HasPrefix(in, "{") || !json.Valid([]byte(in)) {
			continue
		}
		if _, ok := decodeFast(in); !ok {
			t.Errorf("decodeFast gave up on %s", in)
		}
	}
}

// eventLines returns the lines of the JSON Lines fixtures.
func eventLines(t testing.TB) []string {
	var lines []string
	for _, data := range ingesttest.Inputs(t, "testdata/events*") {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, maxLine)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}

func FuzzDecodeFast(f *testing.F) {
	for _, in := range fastInputs {
		f.Add(in)
	}
	for _, in := range eventLines(f) {
		f.Add(in)
	}
	f.Add(strings.TrimSpace(string(benchEvents(10))))
	f.Fuzz(func(t *testing.T, data string) {
		checkFast(t, data)
	})
}
