package stripeapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"reconcile"
	"reconcile/stripeapi"
	"reconcile/stripeapi/sandbox"
)

func eur(minor int64) reconcile.Money { return reconcile.Money{Minor: minor, Currency: "EUR"} }

// ignoreResponse leaves the raw answers out of a comparison; tests check
// them apart.
var ignoreResponse = cmp.Options{
	cmpopts.IgnoreFields(reconcile.Charge{}, "Response"),
	cmpopts.IgnoreFields(reconcile.Made{}, "Response"),
}

func TestRetrieveChargeByChargeAndByPaymentIntent(t *testing.T) {
	for _, live := range []bool{false, true} {
		_, c := setup(t, sandbox.Options{Livemode: live}, stripeapi.Config{})
		ctx := context.Background()
		p, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 1000))
		if err != nil {
			t.Fatal(err)
		}
		want := &reconcile.Charge{ID: p.ChargeID, PaymentIntent: p.ID, Amount: eur(1000), Status: "succeeded", EffectKey: "k1", Livemode: live}
		for _, id := range []string{p.ChargeID, p.ID} {
			got, err := c.RetrieveCharge(ctx, id)
			if err != nil {
				t.Fatalf("RetrieveCharge(%s): %v", id, err)
			}
			if diff := cmp.Diff(want, got, ignoreResponse); diff != "" {
				t.Errorf("RetrieveCharge(%s), livemode %v (-want +got):\n%s", id, live, diff)
			}
			var body struct {
				ID       string `json:"id"`
				Livemode bool   `json:"livemode"`
			}
			if err := json.Unmarshal(got.Response, &body); err != nil || body.ID != id || body.Livemode != live {
				t.Errorf("RetrieveCharge(%s).Response = %s, want the retrieved object as it came", id, got.Response)
			}
		}
	}
}

func TestRetrieveChargeTakesTheEffectKeyFromItsPaymentIntent(t *testing.T) {
	s := sandbox.New(sandbox.Options{})
	// The same sandbox, once as it is and once behind a proxy that drops
	// every query (expand included), as a provider that ignores expand.
	direct, noExpand := httptest.NewServer(s), httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.RawQuery = ""
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(direct.Close)
	t.Cleanup(noExpand.Close)
	h := plain{t, direct.URL}
	// A payment made without metadata, whose intent is given its key
	// later: Stripe copies an intent's metadata to its charge only when it
	// is confirmed, so the charge has none.
	h.post("/v1/payment_intents", "app-1", url.Values{"amount": {"700"}, "currency": {"eur"}, "confirm": {"true"}, "payment_method": {"pm_card_visa"}})
	h.post("/v1/payment_intents", "app-2", url.Values{"amount": {"800"}, "currency": {"eur"}, "confirm": {"true"}, "payment_method": {"pm_card_visa"},
		"metadata[effect_key]": {"k2"}})
	ps := s.Payments()
	if err := s.SetIntentMetadata(ps[0].ID, map[string]string{"effect_key": "k1"}); err != nil {
		t.Fatal(err)
	}
	// The charge's own key wins over a later one on its intent.
	if err := s.SetIntentMetadata(ps[1].ID, map[string]string{"effect_key": "k2-later"}); err != nil {
		t.Fatal(err)
	}
	for _, base := range []string{direct.URL, noExpand.URL} {
		c := stripeapi.New(stripeapi.Config{BaseURL: base, APIKey: testKey})
		for _, tc := range []struct{ id, want string }{
			{ps[0].ChargeID, "k1"}, {ps[0].ID, "k1"}, {ps[1].ChargeID, "k2"}, {ps[1].ID, "k2"},
		} {
			ch, err := c.RetrieveCharge(context.Background(), tc.id)
			if err != nil || ch.EffectKey != tc.want || ch.Amount.Minor == 0 || ch.PaymentIntent == "" {
				t.Errorf("RetrieveCharge(%s) via %s = %+v, %v, want effect key %s", tc.id, base, ch, err, tc.want)
			}
		}
	}
}

func TestRetrieveChargeListsItsRefundsNewestFirst(t *testing.T) {
	s, c := setup(t, sandbox.Options{}, stripeapi.Config{})
	ctx := context.Background()
	p, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 1000))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := c.Refund(ctx, &reconcile.RefundRequest{Key: "c1", Target: p.ChargeID, Amount: eur(300), Compensates: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	byHand, err := s.RefundByHand(p.ChargeID, 200)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.RetrieveCharge(ctx, p.ChargeID)
	if err != nil {
		t.Fatal(err)
	}
	want := &reconcile.Charge{ID: p.ChargeID, PaymentIntent: p.ID, Amount: eur(1000), Refunded: 500, Status: "succeeded", EffectKey: "k1",
		Refunds: []reconcile.Made{
			{ID: byHand.ID, ChargeID: p.ChargeID, PaymentIntent: p.ID, Status: "succeeded", Amount: eur(200)},
			{ID: ours.ID, ChargeID: p.ChargeID, PaymentIntent: p.ID, Status: "succeeded", Amount: eur(300), EffectKey: "c1"},
		}}
	if diff := cmp.Diff(want, got, ignoreResponse); diff != "" {
		t.Errorf("partly refunded charge (-want +got):\n%s", diff)
	}

	// The rest, by hand in many small refunds: more than a page of 100.
	for range 100 {
		if _, err := s.RefundByHand(p.ChargeID, 5); err != nil {
			t.Fatal(err)
		}
	}
	got, err = c.RetrieveCharge(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		LatestCharge struct {
			Refunded bool `json:"refunded"`
		} `json:"latest_charge"`
	}
	json.Unmarshal(got.Response, &body)
	if got.Refunded != 1000 || len(got.Refunds) != 102 || got.Refunds[101].ID != ours.ID || got.Refunds[0].Amount != eur(5) || !body.LatestCharge.Refunded {
		t.Errorf("fully refunded charge: refunded %d in %d refunds (oldest %+v), refunded flag %v; want 1000 in 102, ours last",
			got.Refunded, len(got.Refunds), got.Refunds[len(got.Refunds)-1], body.LatestCharge.Refunded)
	}
}

func TestRetrieveChargeErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		fault *sandbox.Fault
		id    func(p *reconcile.Made, unconfirmed string) string
		want  error
	}{
		{"unknown charge", nil, func(*reconcile.Made, string) string { return "ch_doesnotexist" }, reconcile.ErrNotFound},
		{"unknown payment intent", nil, func(*reconcile.Made, string) string { return "pi_doesnotexist" }, reconcile.ErrNotFound},
		{"payment intent without a charge", nil, func(_ *reconcile.Made, pi string) string { return pi }, reconcile.ErrNotFound},
		{"error_500 on the charge", &sandbox.Fault{Op: sandbox.OpGetCharge, Kind: sandbox.FaultError500}, chargeOf, reconcile.ErrUnavailable},
		{"unavailable on the charge", &sandbox.Fault{Op: sandbox.OpGetCharge, Kind: sandbox.FaultUnavailable}, chargeOf, reconcile.ErrUnavailable},
		{"rate_limit on the charge", &sandbox.Fault{Op: sandbox.OpGetCharge, Kind: sandbox.FaultRateLimit}, chargeOf, reconcile.ErrUnavailable},
		{"latency beyond the timeout", &sandbox.Fault{Op: sandbox.OpGetCharge, Kind: sandbox.FaultLatency, Delay: 300 * time.Millisecond}, chargeOf, reconcile.ErrUnavailable},
		{"drop_after on the charge", &sandbox.Fault{Op: sandbox.OpGetCharge, Kind: sandbox.FaultDropAfter}, chargeOf, reconcile.ErrUnavailable},
		{"error_500 on the payment intent", &sandbox.Fault{Op: sandbox.OpGetPaymentIntent, Kind: sandbox.FaultError500}, intentOf, reconcile.ErrUnavailable},
		{"unavailable listing its refunds", &sandbox.Fault{Op: sandbox.OpListRefunds, Kind: sandbox.FaultUnavailable}, chargeOf, reconcile.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := setup(t, sandbox.Options{}, stripeapi.Config{Timeout: 100 * time.Millisecond})
			p, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 1000))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.RefundByHand(p.ChargeID, 1); err != nil { // so that its refunds are listed
				t.Fatal(err)
			}
			h := sandboxHTTP(t, s)
			h.post("/v1/payment_intents", "k2", url.Values{"amount": {"500"}, "currency": {"eur"}})
			if tc.fault != nil {
				s.Inject(*tc.fault)
			}
			ch, err := c.RetrieveCharge(ctx, tc.id(p, s.Payments()[1].ID))
			var pe *reconcile.ProviderError
			if !errors.Is(err, tc.want) || !errors.As(err, &pe) || ch != nil {
				t.Errorf("RetrieveCharge = %+v, %v, want a ProviderError wrapping %v", ch, err, tc.want)
			}
			if tc.fault == nil && tc.want == reconcile.ErrNotFound && pe != nil && pe.Status == 404 && pe.Code != "resource_missing" {
				t.Errorf("404 without resource_missing: %+v", pe)
			}
		})
	}
}

func chargeOf(p *reconcile.Made, _ string) string { return p.ChargeID }
func intentOf(p *reconcile.Made, _ string) string { return p.ID }

func TestRefundSendsTheAmount(t *testing.T) {
	s, c := setup(t, sandbox.Options{}, stripeapi.Config{})
	ctx := context.Background()
	p, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 1000))
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Refund(ctx, &reconcile.RefundRequest{Key: "c1", Target: p.ID, Amount: eur(400), Compensates: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Amount != eur(400) || m.PaymentIntent != p.ID || m.ChargeID != p.ChargeID {
		t.Errorf("Refund = %+v, want 4.00 EUR of %s", m, p.ChargeID)
	}
	want := url.Values{"payment_intent": {p.ID}, "amount": {"400"}, "metadata[effect_key]": {"c1"}, "metadata[compensates]": {"k1"}}
	if diff := cmp.Diff(want, s.Refunds()[0].Params); diff != "" {
		t.Errorf("parameters the sandbox received (-want +got):\n%s", diff)
	}
	if got := s.Payments()[0].Refunded; got != 400 {
		t.Errorf("charge refunded %d, want 400", got)
	}
}

func TestCreateRefundSendsExactlyTheRecordedRequest(t *testing.T) {
	s, c := setup(t, sandbox.Options{}, stripeapi.Config{})
	ctx := context.Background()
	p, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 1000))
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		key     string
		request string
		want    url.Values
	}{
		{"r1", `{"charge": ` + jsonText(p.ChargeID) + `, "amount": 600, "currency": "eur", "reason": "requested_by_customer",
			"metadata": {"effect_key": "r1", "ticket": "T-9"}}`,
			url.Values{"charge": {p.ChargeID}, "amount": {"600"}, "currency": {"eur"}, "reason": {"requested_by_customer"},
				"metadata[effect_key]": {"r1"}, "metadata[ticket]": {"T-9"}}},
		{"r2", `{"payment_intent": ` + jsonText(p.ID) + `, "amount": 400}`,
			url.Values{"payment_intent": {p.ID}, "amount": {"400"}, "metadata[effect_key]": {"r2"}}},
	} {
		m, err := c.CreateRefund(ctx, tc.key, json.RawMessage(tc.request))
		if err != nil {
			t.Fatal(err)
		}
		if m.EffectKey != tc.key || m.ChargeID != p.ChargeID || m.PaymentIntent != p.ID || m.Replayed {
			t.Errorf("CreateRefund(%s) = %+v", tc.key, m)
		}
		if diff := cmp.Diff(tc.want, s.Refunds()[i].Params); diff != "" {
			t.Errorf("CreateRefund(%s): parameters the sandbox received (-want +got):\n%s", tc.key, diff)
		}
		again, err := c.CreateRefund(ctx, tc.key, json.RawMessage(tc.request))
		if err != nil || !again.Replayed || again.ID != m.ID {
			t.Errorf("CreateRefund(%s) again = %+v, %v, want a replay of %s", tc.key, again, err, m.ID)
		}
	}
	if n := len(s.Refunds()); n != 2 {
		t.Errorf("sandbox made %d refunds, want 2", n)
	}
}

func TestFindRefundByPaymentIntent(t *testing.T) {
	s, c := setup(t, sandbox.Options{}, stripeapi.Config{})
	ctx := context.Background()
	p1, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 1000))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := c.CreatePaymentIntent(ctx, "k2", recorded("k2", 1000))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := c.Refund(ctx, &reconcile.RefundRequest{Key: "c1", Target: p1.ChargeID, Amount: eur(100), Compensates: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RefundByHand(p1.ChargeID, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Refund(ctx, &reconcile.RefundRequest{Key: "c2", Target: p2.ChargeID, Amount: eur(100), Compensates: "k2"}); err != nil {
		t.Fatal(err)
	}
	if m, err := c.FindRefund(ctx, p1.ID, "c1"); err != nil || m == nil || m.ID != ours.ID || m.PaymentIntent != p1.ID {
		t.Errorf("FindRefund(%s, c1) = %+v, %v, want %s", p1.ID, m, err, ours.ID)
	}
	if m, err := c.FindRefund(ctx, p1.ID, "c2"); err != nil || m != nil {
		t.Errorf("FindRefund(%s, c2) = %+v, %v, want nil: c2 refunds another payment", p1.ID, m, err)
	}
}
