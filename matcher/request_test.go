package matcher

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// The fast reading of a plain request agrees with encoding/json on every
// request it accepts, and accepts what the ledgers hand over.
func TestPlainRequestAgreesWithTheDecoder(t *testing.T) {
	inputs := []string{
		`{"amount": 1420000, "currency": "eur"}`, `{"amount":1420000,"currency":"eur"}`, `{"currency": "jpy", "amount": 5}`,
		`{"amount": null, "currency": null}`, `{"amount": -0, "currency": " usd "}`, `{}`, ` { "amount" : 7 } trailing`,
		`{"amount": 14.20, "currency": "eur"}`, `{"amount": 1e3}`, `{"amount": "100"}`, `{"amount": 01}`, `{"amount": 99999999999999999999}`,
		`{"currency": "\u0065ur"}`, `{"currency": "é"}`, `{"amount": 1, "amount": 2}`, `{"amount": 1,}`, `{"charge": "ch_1"}`,
		`[1]`, `{"amount": nul}`, `{"amount": -}`, `{"amount": 5 "currency": "eur"}`, `{"currency": 5}`, `null`, ``,
	}
	r := rand.New(rand.NewPCG(5, 6))
	names := []string{`"amount"`, `"currency"`, `"charge"`, `"amount"`}
	values := []string{`12`, `-3`, `0`, `007`, `1.5`, `2e2`, `null`, `"eur"`, `" Usd"`, `"x\"y"`, `true`, `"12"`, `{}`, `[]`, `9223372036854775808`}
	space := []string{``, ``, ` `, "\n\t"}
	for range 20000 {
		var b strings.Builder
		b.WriteString(space[r.IntN(len(space))] + `{`)
		for i := range r.IntN(3) {
			if i > 0 {
				b.WriteString(`,` + space[r.IntN(len(space))])
			}
			b.WriteString(names[r.IntN(len(names))] + space[r.IntN(len(space))] + `:` + space[r.IntN(len(space))] + values[r.IntN(len(values))])
		}
		b.WriteString(space[r.IntN(len(space))] + `}`)
		in := b.String()
		if r.IntN(10) == 0 { // a byte lost
			i := r.IntN(len(in))
			in = in[:i] + in[i+1:]
		}
		inputs = append(inputs, in)
	}
	accepted := 0
	for _, in := range inputs {
		amount, has, cur, ok := plainRequest([]byte(in))
		if !ok {
			continue
		}
		accepted++
		wAmount, wHas, wCur, err := decodeRequest([]byte(in))
		if err != nil || amount != wAmount || has != wHas || cur != wCur {
			t.Errorf("plainRequest(%q) = %d %v %q; the decoder says %d %v %q, %v", in, amount, has, cur, wAmount, wHas, wCur, err)
		}
	}
	for _, in := range []string{`{"amount": 1420000, "currency": "eur"}`, `{"amount":1,"currency":"eur"}`, `{"amount": null, "currency": null}`} {
		if _, _, _, ok := plainRequest([]byte(in)); !ok {
			t.Errorf("plainRequest(%q) gave up on a plain request", in)
		}
	}
	if accepted < 100 {
		t.Errorf("only %d inputs took the fast path; the test says little", accepted)
	}
}
