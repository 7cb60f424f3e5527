package stripeapi_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/stripeapi"
)

// The compensation a ledger records must be the same bytes on every run
// and replica: its key is claimed with it, and a request recorded
// differently would be refused as the key reused with other parameters.
func TestCompensationRequestNamesWhatItRefunds(t *testing.T) {
	c := stripeapi.New(stripeapi.Config{})
	for _, tc := range []struct{ target, want string }{
		{"ch_1", `{"amount":1000,"charge":"ch_1","currency":"eur","metadata":{"compensates":"k","effect_key":"k:compensate:ch_1"}}`},
		{"pi_1", `{"amount":1000,"currency":"eur","metadata":{"compensates":"k","effect_key":"k:compensate:ch_1"},"payment_intent":"pi_1"}`},
	} {
		got := c.CompensationRequest(&reconcile.RefundRequest{Key: "k:compensate:ch_1", Target: tc.target, Compensates: "k",
			Amount: reconcile.Money{Minor: 1000, Currency: "EUR"}})
		if string(got) != tc.want {
			t.Errorf("CompensationRequest(%s) = %s, want %s", tc.target, got, tc.want)
		}
		terms, err := c.Terms(got)
		if err != nil || terms.Target != tc.target || terms.Amount == nil || *terms.Amount != 1000 || terms.Currency != "eur" {
			t.Errorf("Terms of its own compensation request %s = %+v, %v", got, terms, err)
		}
	}
}

func TestTermsOfRecordedRequests(t *testing.T) {
	c := stripeapi.New(stripeapi.Config{})
	n := int64(500)
	for _, tc := range []struct {
		request string
		want    reconcile.Terms
	}{
		{`{"amount": 500, "currency": "usd", "customer": "cus_1"}`, reconcile.Terms{Amount: &n, Currency: "usd"}},
		{`{"charge": "ch_9", "payment_intent": "pi_9"}`, reconcile.Terms{Target: "ch_9"}},
		{`{"payment_intent": "pi_9", "amount": 500}`, reconcile.Terms{Amount: &n, Target: "pi_9"}},
	} {
		got, err := c.Terms(json.RawMessage(tc.request))
		if err != nil {
			t.Fatalf("Terms(%s): %v", tc.request, err)
		}
		if diff := cmp.Diff(tc.want, *got); diff != "" {
			t.Errorf("Terms(%s) (-want +got):\n%s", tc.request, diff)
		}
	}
	if _, err := c.Terms(json.RawMessage(`[1]`)); err == nil {
		t.Error("Terms of a request that is not an object: no error")
	}
	for step, want := range map[string]bool{"charge": true, "refund": true, "compensate": false, "payout": false} {
		if c.Redelivers(step) != want {
			t.Errorf("Redelivers(%s) = %v, want %v", step, !want, want)
		}
	}
}
