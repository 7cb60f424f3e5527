package stripe

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ingest/ingesttest"
)

// evt writes one event as a JSON line; obj is the data.object's JSON.
func evt(id, typ, obj string, extra ...string) string {
	s := fmt.Sprintf(`{"id":%q,"object":"event","created":1740820500,"type":%q,"data":{"object":%s}`, id, typ, obj)
	for _, x := range extra {
		s += "," + x
	}
	return s + "}"
}

// idem is an event's request with an idempotency key.
func idem(key string) string {
	return fmt.Sprintf(`"request":{"id":"req_1","idempotency_key":%q}`, key)
}

// parseEventLines parses JSON lines and returns the calls.
func parseEventLines(t *testing.T, lines ...string) []ingesttest.Call {
	t.Helper()
	calls, err := run(events, []byte(strings.Join(lines, "\n")+"\n"))
	if err != nil {
		t.Fatalf("ParseEvents: %v", err)
	}
	return calls
}

func oneEvidence(t *testing.T, lines ...string) *reconcile.Evidence {
	t.Helper()
	calls := parseEventLines(t, lines...)
	if len(calls) != 1 {
		t.Fatalf("got %d calls, want 1: %+v", len(calls), calls)
	}
	return mustEvidence(t, calls[0])
}

// summary is the part of a record the mapping tests compare.
type summary struct {
	TxID, ParentTxID, PaymentIntent string
	Kind                            reconcile.Kind
	Amount                          reconcile.Money
	Pending, Failed                 bool
	EffectKey, ParentEffectKey      string
}

func summarize(e *reconcile.Evidence) summary {
	return summary{e.TxID, e.ParentTxID, e.PaymentIntent, e.Kind, e.Amount, e.Pending, e.Failed, e.EffectKey, e.ParentEffectKey}
}

func usd(minor int64) reconcile.Money { return reconcile.Money{Minor: minor, Currency: "USD"} }

func TestEventMappings(t *testing.T) {
	const pi = `{"id":"pi_1","object":"payment_intent","currency":"usd","amount":1000,"amount_received":%d,"latest_charge":%s,"metadata":{%s}}`
	const ch = `{"id":"ch_1","object":"charge","currency":"usd","amount":1000,"amount_captured":%d,"captured":%s,"status":%q,"payment_intent":"pi_1","metadata":{%s}}`
	const re = `{"id":"re_1","object":"refund","currency":"usd","amount":400,"status":%q,"charge":"ch_1","payment_intent":"pi_1","metadata":{%s}}`
	const du = `{"id":"du_1","object":"dispute","currency":"usd","amount":1000,"status":%q,"charge":"ch_1","payment_intent":"pi_1","reason":"fraudulent","metadata":{}}`
	const po = `{"id":"po_1","object":"payout","currency":"usd","amount":5000,"status":"paid","metadata":{}}`
	for _, tc := range []struct {
		name string
		line string
		want summary
	}{
		{"payment intent with its charge", evt("evt_1", "payment_intent.succeeded", fmt.Sprintf(pi, 1000, `"ch_1"`, "")),
			summary{TxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindCharge, Amount: usd(1000)}},
		{"payment intent received less than asked", evt("evt_1", "payment_intent.succeeded", fmt.Sprintf(pi, 800, `"ch_1"`, "")),
			summary{TxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindCharge, Amount: usd(800)}},
		{"payment intent with nothing received falls back to amount", evt("evt_1", "payment_intent.succeeded", fmt.Sprintf(pi, 0, `"ch_1"`, "")),
			summary{TxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindCharge, Amount: usd(1000)}},
		{"payment intent with an expanded charge", evt("evt_1", "payment_intent.succeeded", fmt.Sprintf(pi, 1000, `{"id":"ch_9","object":"charge"}`, "")),
			summary{TxID: "ch_9", PaymentIntent: "pi_1", Kind: reconcile.KindCharge, Amount: usd(1000)}},
		{"payment intent without a charge", evt("evt_1", "payment_intent.succeeded", fmt.Sprintf(pi, 1000, `null`, "")),
			summary{PaymentIntent: "pi_1", Kind: reconcile.KindCharge, Amount: usd(1000)}},
		{"payment intent: metadata key beats the idempotency key", evt("evt_1", "payment_intent.succeeded", fmt.Sprintf(pi, 1000, `"ch_1"`, `"effect_key":"eff-m"`), idem("idem-1")),
			summary{TxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindCharge, Amount: usd(1000), EffectKey: "eff-m"}},
		{"payment intent: idempotency key when no metadata key", evt("evt_1", "payment_intent.succeeded", fmt.Sprintf(pi, 1000, `"ch_1"`, ""), idem("idem-1")),
			summary{TxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindCharge, Amount: usd(1000), EffectKey: "idem-1"}},
		{"payment intent: old API's bare request id", evt("evt_1", "payment_intent.succeeded", fmt.Sprintf(pi, 1000, `"ch_1"`, ""), `"request":"req_1"`),
			summary{TxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindCharge, Amount: usd(1000)}},
		{"charge captured in part", evt("evt_1", "charge.succeeded", fmt.Sprintf(ch, 600, "true", "succeeded", ""), idem("idem-c")),
			summary{TxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindCharge, Amount: usd(600), EffectKey: "idem-c"}},
		{"charge authorized only", evt("evt_1", "charge.succeeded", fmt.Sprintf(ch, 0, "false", "succeeded", "")),
			summary{TxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindCharge, Amount: usd(1000), Pending: true}},
		{"bank debit still clearing", evt("evt_1", "charge.succeeded", fmt.Sprintf(ch, 1000, "true", "pending", "")),
			summary{TxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindCharge, Amount: usd(1000), Pending: true}},
		{"capture's request did not create the charge", evt("evt_1", "charge.captured", fmt.Sprintf(ch, 1000, "true", "succeeded", ""), idem("idem-capture")),
			summary{TxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindCharge, Amount: usd(1000)}},
		{"refund created", evt("evt_1", "refund.created", fmt.Sprintf(re, "succeeded", ""), idem("idem-r")),
			summary{TxID: "re_1", ParentTxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindRefund, Amount: usd(-400), EffectKey: "idem-r"}},
		{"refund pending", evt("evt_1", "refund.created", fmt.Sprintf(re, "pending", `"effect_key":"eff-r"`)),
			summary{TxID: "re_1", ParentTxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindRefund, Amount: usd(-400), Pending: true, EffectKey: "eff-r"}},
		{"refund requires action", evt("evt_1", "refund.updated", fmt.Sprintf(re, "requires_action", "")),
			summary{TxID: "re_1", ParentTxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindRefund, Amount: usd(-400), Pending: true}},
		{"refund failed; the update's request created nothing", evt("evt_1", "refund.updated", fmt.Sprintf(re, "failed", ""), idem("idem-u")),
			summary{TxID: "re_1", ParentTxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindRefund, Amount: usd(-400), Failed: true}},
		{"refund canceled", evt("evt_1", "charge.refund.updated", fmt.Sprintf(re, "canceled", "")),
			summary{TxID: "re_1", ParentTxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindRefund, Amount: usd(-400), Failed: true}},
		{"dispute opened", evt("evt_1", "charge.dispute.created", disputeObj("needs_response", withdrawal)),
			summary{TxID: "du_1", ParentTxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindDispute, Amount: usd(-1000)}},
		{"dispute funds withdrawn", evt("evt_1", "charge.dispute.funds_withdrawn", fmt.Sprintf(du, "needs_response")),
			summary{TxID: "du_1", ParentTxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindDispute, Amount: usd(-1000)}},
		{"dispute funds reinstated", evt("evt_1", "charge.dispute.funds_reinstated", fmt.Sprintf(du, "won")),
			summary{TxID: "du_1", ParentTxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindDispute, Amount: usd(1000)}},
		{"inquiry", evt("evt_1", "charge.dispute.created", fmt.Sprintf(du, "warning_needs_response")),
			summary{TxID: "du_1", ParentTxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindDispute, Amount: usd(-1000), Pending: true}},
		{"inquiry closed", evt("evt_1", "charge.dispute.closed", fmt.Sprintf(du, "warning_closed")),
			summary{TxID: "du_1", ParentTxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindDispute, Amount: usd(-1000), Failed: true}},
		{"payout paid", evt("evt_1", "payout.paid", po),
			summary{TxID: "po_1", Kind: reconcile.KindPayout, Amount: usd(-5000)}},
		{"payout failed", evt("evt_1", "payout.failed", po),
			summary{TxID: "po_1", Kind: reconcile.KindPayout, Amount: usd(-5000), Failed: true}},
		{"wrapped event", fmt.Sprintf(`{"received_at":"2025-03-01T09:15:02Z","body":%s}`, evt("evt_1", "payout.paid", po)),
			summary{TxID: "po_1", Kind: reconcile.KindPayout, Amount: usd(-5000)}},
		{"wrapped event as a string", fmt.Sprintf(`{"received_at":1740820502,"body":%q}`, evt("evt_1", "payout.paid", po)),
			summary{TxID: "po_1", Kind: reconcile.KindPayout, Amount: usd(-5000)}},
	} {
		e := oneEvidence(t, tc.line)
		if diff := cmp.Diff(tc.want, summarize(e)); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.name, diff)
		}
		if e.RawKind == "" || e.Metadata["event_id"] != "evt_1" || e.Time.Unix() != 1740820500 || e.Line != 1 || e.Raw != tc.line {
			t.Errorf("%s: RawKind %q, event_id %q, time %v, line %d, raw %q", tc.name, e.RawKind, e.Metadata["event_id"], e.Time, e.Line, e.Raw)
		}
	}
}

func TestEventMinorUnits(t *testing.T) {
	for _, tc := range []struct {
		currency string
		amount   int64
		want     reconcile.Money
	}{
		{"usd", 1099, usd(1099)},
		{"jpy", 1099, reconcile.Money{Minor: 1099, Currency: "JPY"}},
		{"KWD", 1099, reconcile.Money{Minor: 1099, Currency: "KWD"}},
		{"huf", 100000, reconcile.Money{Minor: 100000, Currency: "HUF"}},
	} {
		obj := fmt.Sprintf(`{"id":"ch_1","object":"charge","currency":%q,"amount":%d,"amount_captured":%d}`, tc.currency, tc.amount, tc.amount)
		if e := oneEvidence(t, evt("evt_1", "charge.succeeded", obj)); e.Amount != tc.want {
			t.Errorf("%d %s: Amount = %v, want %v", tc.amount, tc.currency, e.Amount, tc.want)
		}
	}
}

func TestChargeRefundedGivesOneRecordPerRefund(t *testing.T) {
	obj := `{"id":"ch_1","object":"charge","currency":"usd","amount":1000,"payment_intent":"pi_1","metadata":{"effect_key":"eff-c"},
		"refunds":{"data":[{"id":"re_1","amount":100,"currency":"usd","status":"succeeded","metadata":{"effect_key":"eff-r1"}},
		{"id":"re_2","amount":200,"currency":"usd","status":"pending","charge":"ch_1","payment_intent":"pi_1"}]}}`
	calls := parseEventLines(t, evt("evt_1", "charge.refunded", strings.ReplaceAll(obj, "\n", "")))
	var got []summary
	for _, c := range calls {
		got = append(got, summarize(mustEvidence(t, c)))
	}
	want := []summary{
		{TxID: "re_1", ParentTxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindRefund, Amount: usd(-100), EffectKey: "eff-r1", ParentEffectKey: "eff-c"},
		{TxID: "re_2", ParentTxID: "ch_1", PaymentIntent: "pi_1", Kind: reconcile.KindRefund, Amount: usd(-200), Pending: true, ParentEffectKey: "eff-c"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestEventIgnores(t *testing.T) {
	charge := `{"id":"ch_1","object":"charge","currency":"usd","amount":1000}`
	for _, tc := range []struct {
		name   string
		lines  []string
		reason string
	}{
		{"unknown type", []string{evt("evt_1", "invoice.paid", `{"id":"in_1"}`)}, "event type invoice.paid does not move money we track"},
		{"unknown object shaped unlike ours", []string{evt("evt_1", "credit_note.created", `{"id":"cn_1","object":"credit_note","amount":"x","refunds":[{"refund":"re_1"}],"captured":1}`)},
			"event type credit_note.created does not move money we track"},
		{"failed payment", []string{evt("evt_1", "payment_intent.payment_failed", `{"id":"pi_1"}`)}, "event type payment_intent.payment_failed does not move money we track"},
		{"charge.refunded without refunds", []string{evt("evt_1", "charge.refunded", charge)},
			"charge.refunded for ch_1 lists no refunds: the refund.created and refund.updated events carry them"},
		{"redelivery", []string{evt("evt_1", "charge.succeeded", charge), evt("evt_1", "charge.succeeded", charge)}, "duplicate of event evt_1 (line 1)"},
		{"redelivery in a wrapper", []string{evt("evt_1", "charge.succeeded", charge), `{"body":` + evt("evt_1", "charge.succeeded", charge) + `}`}, "duplicate of event evt_1 (line 1)"},
	} {
		calls := parseEventLines(t, tc.lines...)
		last := calls[len(calls)-1]
		if len(calls) != len(tc.lines) || last.Call != "ignore" || last.Reason != tc.reason || last.Line != len(tc.lines) {
			t.Errorf("%s: got %+v, want the last line ignored with %q", tc.name, calls, tc.reason)
		}
	}
}

func TestEventRejections(t *testing.T) {
	charge := func(fields string) string {
		return evt("evt_1", "charge.succeeded", `{"id":"ch_1","object":"charge",`+fields+`}`)
	}
	for _, tc := range []struct {
		name, line, reason string
	}{
		{"text", `hello`, "malformed JSON: invalid character 'h' looking for beginning of value"},
		{"not JSON", `{"id": "evt_1", "type":`, "malformed JSON: unexpected end of JSON input (at byte 23)"},
		{"two values on a line", `{"id": "evt_1"} {"id": "evt_2"}`, "malformed JSON: invalid character '{' after top-level value (at byte 17)"},
		{"array", `[{"id":"evt_1"}]`, "not a Stripe event: JSON array, not an object"},
		{"another object", `{"id":"ch_1","object":"charge"}`, `not a Stripe event: a JSON charge object`},
		{"no type", `{"id":"evt_1","object":"event"}`, "not a Stripe event: no id or no type"},
		{"id of the wrong type", `{"id":7,"object":"event","type":"charge.succeeded"}`, "not a Stripe event: field id is a JSON number"},
		{"no data.object", `{"id":"evt_1","object":"event","type":"charge.succeeded","created":1,"data":{}}`, "event evt_1 has no data.object"},
		{"no created", `{"id":"evt_1","object":"event","type":"charge.succeeded","data":{"object":{}}}`, "event evt_1 has no created time"},
		{"created in milliseconds", `{"id":"evt_1","object":"event","type":"charge.succeeded","created":1740820500.5,"data":{"object":{}}}`, "event evt_1: created 1740820500.5 is not a unix time in seconds"},
		{"wrong object", evt("evt_1", "payout.paid", `{"id":"ch_1","object":"charge"}`), "event evt_1 (payout.paid) carries a charge object, not a payout"},
		{"no object id", evt("evt_1", "refund.created", `{"object":"refund","amount":1,"currency":"usd"}`), "event evt_1: a refund has no id"},
		{"no amount", charge(`"currency":"usd"`), "event evt_1: charge ch_1 has no amount"},
		{"amount with a fraction", charge(`"currency":"usd","amount":10.5`), "event evt_1: charge ch_1: amount 10.5 is not a whole number of minor units"},
		{"amount beyond int64", charge(`"currency":"usd","amount":92233720368547758070`), "event evt_1: charge ch_1: amount 92233720368547758070 is not a whole number of minor units"},
		{"amount as text", charge(`"currency":"usd","amount":"ten"`), `event evt_1: charge ch_1: amount "ten" is not a whole number of minor units`},
		{"field of the wrong type", charge(`"currency":"usd","amount":1,"captured":"yes"`), "event evt_1: data.object is not a charge: field data.object.captured is a JSON string"},
		{"data.object not an object", evt("evt_1", "payout.paid", `[1]`), "not a Stripe event: field data.object is a JSON array"},
		{"unknown currency", charge(`"currency":"usx","amount":1`), `event evt_1: charge ch_1: currency: unknown currency "usx"`},
		{"no currency", charge(`"amount":1`), "event evt_1: charge ch_1: currency: empty currency"},
		{"reference neither id nor object", charge(`"currency":"usd","amount":1,"payment_intent":7`), "event evt_1: payment_intent is neither an id nor an object with one"},
		{"wrapper around nothing", `{"received_at":"x","body":null}`, "body: not a Stripe event: JSON null, not an object"},
		{"wrapper around bad JSON", `{"received_at":"x","body":"{\"id\""}`, "body: malformed JSON: unexpected end of JSON input"},
	} {
		// A good first line, so that the line under test cannot decide
		// which form the input is in.
		calls := parseEventLines(t, evt("evt_0", "customer.created", "{}"), tc.line)
		if len(calls) != 2 || calls[1].Call != "reject" || !strings.HasPrefix(calls[1].Reason, tc.reason) || calls[1].Raw != tc.line || calls[1].Line != 2 {
			t.Errorf("%s: got %+v, want a rejection of line 2 with %q", tc.name, calls, tc.reason)
		}
	}
}

// TestEventLinesAreIndependent checks that in JSON Lines a broken line is
// rejected on its own and the lines around it still parse.
func TestEventLinesAreIndependent(t *testing.T) {
	po := `{"id":"po_1","object":"payout","currency":"usd","amount":1}`
	calls := parseEventLines(t, evt("evt_1", "payout.paid", po), `hello`, `{"id":"evt_2",`, evt("evt_3", "payout.paid", po))
	want := []string{"evidence@1", "reject@2", "reject@3", "evidence@4"}
	if diff := cmp.Diff(want, ingesttest.Summary(calls)); diff != "" {
		t.Errorf("outcomes (-want +got)\n%s", diff)
	}
}

func TestEventLines(t *testing.T) {
	payout := func(id string) string {
		return evt(id, "payout.paid", `{"id":"po_`+id+`","object":"payout","currency":"usd","amount":1}`)
	}
	for _, tc := range []struct {
		name  string
		input string
		lines []int
	}{
		{"JSON lines with blank lines and CRLF", "\r\n" + payout("a") + "\r\n\r\n" + payout("b") + "\r\n", []int{2, 4}},
		{"byte-order mark", "\xEF\xBB\xBF" + payout("a") + "\n" + payout("b"), []int{1, 2}},
		{"array on one line", "[" + payout("a") + "," + payout("b") + "]", []int{1, 1}},
		{"array one per line", "[\n" + payout("a") + ",\n" + payout("b") + "\n]\n", []int{2, 3}},
		{"array with blank lines", "\n\n[\n\n" + payout("a") + "\n\n,\n" + payout("b") + "]", []int{5, 8}},
		{"pretty events one after another", pretty(payout("a")) + "\n" + pretty(payout("b")), []int{1, 1 + strings.Count(pretty(payout("a")), "\n") + 1}},
	} {
		calls, err := run(events, []byte(tc.input))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got []int
		for _, c := range calls {
			if c.Evidence == nil {
				t.Errorf("%s: %s on line %d: %s", tc.name, c.Call, c.Line, c.Reason)
			}
			got = append(got, c.Line)
		}
		if diff := cmp.Diff(tc.lines, got); diff != "" {
			t.Errorf("%s: lines (-want +got)\n%s", tc.name, diff)
		}
	}
}

func pretty(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func TestEventsFatal(t *testing.T) {
	ok := evt("evt_1", "payout.paid", `{"id":"po_1","object":"payout","currency":"usd","amount":1}`)
	for _, tc := range []struct {
		name, input, want string
	}{
		{"not JSON at all", "id,amount\n1,2\n", `line 1: not a Stripe event dump: it starts with 'i', not a JSON object or array`},
		{"array cut off", "[\n" + ok + ",\n" + ok[:40], "line 3: the event starting here is cut off; the file looks truncated: unexpected EOF"},
		{"array not closed", "[\n" + ok + "\n", "line 2: the array of events is not closed with ']': the file looks truncated"},
		{"syntax error in an array", "[\n" + ok + ",\n{\n\"id\": \"evt_2\",\n\"type\" \"x\"\n}]", `line 5: malformed JSON in the event starting on line 3: invalid character '"' after object key`},
		{"missing comma in an array", "[\n" + ok + "\n" + ok + "]", "line 3: malformed JSON: expected comma after array element"},
		{"data after the array", "[" + ok + "]\n{}", "line 2: unexpected { after the events"},
		{"syntax error in pretty events", "{\n \"id\": \"evt_1\",\n \"type\": x\n}\n", `line 3: malformed JSON in the event starting on line 1: invalid character 'x' looking for beginning of value`},
	} {
		_, err := run(events, []byte(tc.input))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestEventsEmptyInput(t *testing.T) {
	for _, in := range []string{"", "\n\n  \n", "\xEF\xBB\xBF", "[]", "[\n]\n"} {
		calls, err := run(events, []byte(in))
		if err != nil || len(calls) != 0 {
			t.Errorf("ParseEvents(%q) = %+v, %v; want nothing", in, calls, err)
		}
	}
}

func TestDetectEvents(t *testing.T) {
	for _, tc := range []struct {
		head string
		want bool
	}{
		{`{"id":"evt_1","object":"event","type":"charge.succeeded"}`, true},
		{"\xEF\xBB\xBF\n  [\n  {\n    \"id\": \"evt_1\",\n    \"object\": \"event\",", true},
		{`{"received_at":"2025-03-01T00:00:00Z","body" : "{\"id\":\"evt_1\"}"}`, true},
		{`{"id":"ch_1","object":"charge"}`, false},
		{`{"bodyguard":1}`, false},
		{`balance_transaction_id,"object":"event"`, false},
		{``, false},
	} {
		if got := DetectEvents("dump.jsonl", []byte(tc.head)); got != tc.want {
			t.Errorf("DetectEvents(%q) = %v, want %v", tc.head, got, tc.want)
		}
	}
}
