package driver

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"reconcile/matcher"
)

// decodedReduction is ReducedRequest as encoding/json alone makes it (a
// request already plain kept as it is): what the scanner in reduce.go
// must agree with on every input.
func decodedReduction(request []byte) []byte {
	if matcher.IsPlainRequest(request) {
		return request
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(request, &all) != nil || all == nil {
		return request
	}
	return plainOf(all["amount"], all["currency"])
}

// reductionCases are requests an application could have written, and
// texts that are not objects or not JSON at all.
var reductionCases = []string{
	`{"amount": 3047, "confirm": true, "currency": "eur", "metadata": {"effect_key": "run:charge:1"}}`,
	`{"amount":1,"amount":2,"currency":"usd","currency":"eur"}`,
	`{"currency": "eur", "nested": {"amount": 5, "currency": "usd"}, "list": [{"amount": 6}]}`,
	`{"amount": {"value": 100}, "currency": ["eur"]}`,
	`{"amount": null, "currency": null}`,
	`{"amount": -0.5e+10, "currency": "\u0065ur"}`,
	`{"am\u006funt": 7, "currency": "eur"}`,
	`{"description": "a \"quoted\" {brace} and \\ backslash", "amount": 8}`,
	`{"AMOUNT": 9, "Currency": "eur"}`,
	` { "amount" : 10 , "currency" : "eur" } `,
	"{\n\t\"amount\":\r11}",
	`{}`, `{ }`, `{} x`, `{ }}`, `[]`, `[{"amount": 1}]`, `null`, `12`, `"amount"`, `true`,
	`{"amount": 1,}`, `{"amount": 01}`, `{"amount": 1.}`, `{"amount": .5}`, `{"amount": 1e}`, `{"amount": +1}`,
	`{"amount": tru}`, `{"amount": truex}`, `{"amount": 1 2}`, `{"amount": 1} x`, `{"amount": 1}}`, `{"amount" 1}`,
	`{"amount": "\x"}`, `{"amount": "\u12g4"}`, "{\"amount\": \"a\x01b\"}", "{\"amount\": \"\xff\xfe\"}",
	`{"amount": 1`, `{"amount": "1`, `{"amount": [1, 2`, `{"amount":`, `{"amount"`, `{"`, `{`, ``, ` `,
	`{"a": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]], "amount": 3}`,
	`{"amount": 1, "a": {"b": }}`, `{"amount": 1, "a": [1,]}`, `{"amount": 1, "a": {"b" 1}}`, `{"amount": 1, "a": {1: 2}}`,
}

func TestReducedRequestAgreesWithDecoding(t *testing.T) {
	// encoding/json refuses nesting deeper than 10,000.
	deep := `{"a": ` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `, "amount": 1}`
	for _, c := range append(reductionCases, deep) {
		if got, want := ReducedRequest([]byte(c)), decodedReduction([]byte(c)); string(got) != string(want) {
			t.Errorf("ReducedRequest(%q) = %q, decoding gives %q", c, got, want)
		}
	}
	if got := string(ReducedRequest([]byte(reductionCases[1]))); got != `{"amount":2,"currency":"eur"}` {
		t.Errorf("a member named twice counts as its last: %s", got)
	}
}

// TestReducedRequestAgreesOnRandomRequests builds objects of random
// members (some named amount or currency, some twice), values and
// spacing, and breaks a fifth of them at a random byte.
func TestReducedRequestAgreesOnRandomRequests(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 3))
	names := []string{"amount", "currency", "metadata", "confirm", "amount", "customer", "AMOUNT", "am\\u006funt", ""}
	var value func(depth int) string
	value = func(depth int) string {
		switch n := r.IntN(10); {
		case n == 0 && depth < 3:
			var b strings.Builder
			b.WriteString("{")
			for i := range r.IntN(4) {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "%q:%s", names[r.IntN(len(names))], value(depth+1))
			}
			return b.String() + "}"
		case n == 1 && depth < 3:
			return "[" + value(depth+1) + "," + value(depth+1) + "]"
		case n == 2:
			return []string{"true", "false", "null"}[r.IntN(3)]
		case n < 6:
			return []string{"0", "-12", "1420000", "3.25", "1e3", "-0.5E-2", "92233720368547758071"}[r.IntN(7)]
		default:
			return []string{`"eur"`, `"e\"u\\r"`, `"\u00e9"`, `""`, `"{[,:]}"`, "\"\xe9\""}[r.IntN(6)]
		}
	}
	space := func() string { return []string{"", " ", "\n\t", " \r\n "}[r.IntN(4)] }
	for range 20000 {
		var b strings.Builder
		b.WriteString(space() + "{")
		for i := range r.IntN(6) {
			if i > 0 {
				b.WriteString("," + space())
			}
			b.WriteString(`"` + names[r.IntN(len(names))] + `"` + space() + ":" + space() + value(0) + space())
		}
		b.WriteString("}" + space())
		req := []byte(b.String())
		if r.IntN(5) == 0 && len(req) > 0 {
			breaks := "{}[],:\"\\x 0"
			req[r.IntN(len(req))] = breaks[r.IntN(len(breaks))]
		}
		if got, want := ReducedRequest(req), decodedReduction(req); string(got) != string(want) {
			t.Fatalf("ReducedRequest(%q) = %q, decoding gives %q", req, got, want)
		}
	}
}

func FuzzReducedRequest(f *testing.F) {
	for _, c := range reductionCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, req []byte) {
		if got, want := ReducedRequest(req), decodedReduction(req); string(got) != string(want) {
			t.Errorf("ReducedRequest(%q) = %q, decoding gives %q", req, got, want)
		}
	})
}

func BenchmarkReducedRequest(b *testing.B) {
	req := []byte(reductionCases[0])
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			ReducedRequest(req)
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			decodedReduction(req)
		}
	})
}
