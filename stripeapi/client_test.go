package stripeapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/stripeapi"
	"reconcile/stripeapi/sandbox"
)

const testKey = "sk_test_reconcile_secret"

// setup serves a sandbox over real HTTP and returns a client for it.
func setup(t *testing.T, opt sandbox.Options, cfg stripeapi.Config) (*sandbox.Server, *stripeapi.Client) {
	t.Helper()
	s := sandbox.New(opt)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	cfg.BaseURL, cfg.APIKey = ts.URL, testKey
	return s, stripeapi.New(cfg)
}

// recorded is a charge as an application records it in effect.request.
func recorded(key string, amount int) json.RawMessage {
	return json.RawMessage(`{"amount": ` + itoa(amount) + `, "currency": "EUR", "customer": "cus_Qa01",
		"payment_method": "pm_card_visa", "description": "Order 1001, two items",
		"payment_method_types": ["card"],
		"shipping": {"name": "Ana", "address": {"line1": "1 Rue X", "city": "Paris", "country": "FR"}},
		"metadata": {"effect_key": ` + jsonText(key) + `, "order_ref": "A-1001"}}`)
}

func itoa(n int) string { return jsonText(n) }

func jsonText(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestRedeliverMakesOnePaymentAndTheSameKeyReplays(t *testing.T) {
	s, c := setup(t, sandbox.Options{}, stripeapi.Config{})
	ctx := context.Background()
	key := "run_8f3c1a:charge:0"
	m, err := c.CreatePaymentIntent(ctx, key, recorded(key, 1420000))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.ID, "pi_") || !strings.HasPrefix(m.ChargeID, "ch_") || m.PaymentIntent != m.ID || m.Status != "succeeded" ||
		m.Amount != (reconcile.Money{Minor: 1420000, Currency: "EUR"}) || m.EffectKey != key || m.Replayed || !json.Valid(m.Response) {
		t.Errorf("CreatePaymentIntent = %+v, want a new succeeded payment of 14200.00 EUR under %s", m, key)
	}
	// The wire carried exactly the recorded fields, confirm and the key.
	want := url.Values{
		"amount": {"1420000"}, "currency": {"EUR"}, "customer": {"cus_Qa01"}, "payment_method": {"pm_card_visa"},
		"description": {"Order 1001, two items"}, "payment_method_types[0]": {"card"},
		"shipping[name]": {"Ana"}, "shipping[address][line1]": {"1 Rue X"}, "shipping[address][city]": {"Paris"},
		"shipping[address][country]": {"FR"}, "metadata[effect_key]": {key}, "metadata[order_ref]": {"A-1001"},
		"confirm": {"true"},
	}
	if diff := cmp.Diff(want, s.Payments()[0].Params); diff != "" {
		t.Errorf("parameters the sandbox received (-want +got):\n%s", diff)
	}

	again, err := c.CreatePaymentIntent(ctx, key, recorded(key, 1420000))
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.ID != m.ID || again.ChargeID != m.ChargeID {
		t.Errorf("second CreatePaymentIntent = %+v, want a replay of %s", again, m.ID)
	}
	if n := len(s.Payments()); n != 1 || s.Requests() != 1 {
		t.Errorf("sandbox made %d payments in %d requests, want 1", n, s.Requests())
	}
}

func TestSameKeyWithAChangedAmountIsRefused(t *testing.T) {
	s, c := setup(t, sandbox.Options{}, stripeapi.Config{})
	ctx := context.Background()
	if _, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 1000)); err != nil {
		t.Fatal(err)
	}
	_, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 1001))
	var pe *reconcile.ProviderError
	if !errors.Is(err, reconcile.ErrRefused) || !errors.As(err, &pe) || pe.Status != 400 || pe.Type != "idempotency_error" {
		t.Errorf("same key, other amount: %v, want ErrRefused from a 400 idempotency_error", err)
	}
	if n := len(s.Payments()); n != 1 {
		t.Errorf("sandbox made %d payments, want 1", n)
	}
}

func TestRefundThenFindRefundFindsIt(t *testing.T) {
	s, c := setup(t, sandbox.Options{}, stripeapi.Config{})
	ctx := context.Background()
	p1, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 1000))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := c.CreatePaymentIntent(ctx, "k2", recorded("k2", 2500))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*reconcile.RefundRequest{
		{Key: "k1:compensate:" + p1.ChargeID, Target: p1.ChargeID, Amount: reconcile.Money{Minor: 1000, Currency: "EUR"}, Compensates: "k1"},
		{Key: "k2:compensate:" + p2.ChargeID, Target: p2.ID, Amount: reconcile.Money{Minor: 2500, Currency: "EUR"}, Compensates: "k2"},
	} {
		wantCharge, wantIntent, wantAmount := p1.ChargeID, p1.ID, int64(1000)
		if r.Target == p2.ID {
			wantCharge, wantIntent, wantAmount = p2.ChargeID, p2.ID, 2500
		}
		m, err := c.Refund(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(m.ID, "re_") || m.ChargeID != wantCharge || m.PaymentIntent != wantIntent || m.Amount != (reconcile.Money{Minor: wantAmount, Currency: "EUR"}) ||
			m.EffectKey != r.Key || m.Status != "succeeded" || m.Replayed {
			t.Errorf("Refund(%+v) = %+v, want a full refund of %s under its key", r, m, wantCharge)
		}
		found, err := c.FindRefund(ctx, wantCharge, r.Key)
		if err != nil || found == nil || found.ID != m.ID {
			t.Errorf("FindRefund(%s, %s) = %+v, %v, want %s", wantCharge, r.Key, found, err, m.ID)
		}
		again, err := c.Refund(ctx, r)
		if err != nil || !again.Replayed || again.ID != m.ID {
			t.Errorf("Refund again = %+v, %v, want a replay of %s", again, err, m.ID)
		}
	}
	got := s.Refunds()
	if len(got) != 2 || got[0].Metadata["compensates"] != "k1" || got[1].Metadata["effect_key"] != "k2:compensate:"+p2.ChargeID {
		t.Errorf("sandbox refunds = %+v, want two with effect_key and compensates", got)
	}
	if m, err := c.FindRefund(ctx, p1.ChargeID, "someone-else"); m != nil || err != nil {
		t.Errorf("FindRefund for an unknown key = %+v, %v, want nil, nil", m, err)
	}
}

func TestFindRefundPagesThroughManyRefunds(t *testing.T) {
	s, c := setup(t, sandbox.Options{}, stripeapi.Config{})
	ctx := context.Background()
	p, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 100000))
	if err != nil {
		t.Fatal(err)
	}
	// 120 partial refunds over HTTP: more than one page of 100.
	h := sandboxHTTP(t, s)
	for i := range 120 {
		h.post("/v1/refunds", "r"+itoa(i), url.Values{"charge": {p.ChargeID}, "amount": {"1"}, "metadata[effect_key]": {"r" + itoa(i)}})
	}
	m, err := c.FindRefund(ctx, p.ChargeID, "r0") // the oldest: on the second page
	if err != nil || m == nil || m.EffectKey != "r0" {
		t.Errorf("FindRefund of the oldest of 120 = %+v, %v", m, err)
	}
}

func TestFindPaymentFindsByEffectKey(t *testing.T) {
	_, c := setup(t, sandbox.Options{}, stripeapi.Config{})
	ctx := context.Background()
	for _, key := range []string{"run_1:charge:0", `run_1:o'brien\charge`} {
		made, err := c.CreatePaymentIntent(ctx, key, recorded(key, 500))
		if err != nil {
			t.Fatal(err)
		}
		found, err := c.FindPayment(ctx, key)
		if err != nil || found == nil || found.ID != made.ID || found.ChargeID != made.ChargeID || found.EffectKey != key || found.Replayed {
			t.Errorf("FindPayment(%q) = %+v, %v, want %s", key, found, err, made.ID)
		}
	}
	if m, err := c.FindPayment(ctx, "run_1:charge:99"); m != nil || err != nil {
		t.Errorf("FindPayment of an unknown key = %+v, %v, want nil, nil", m, err)
	}
}

func TestFindPaymentPrefersTheSucceededOne(t *testing.T) {
	s, c := setup(t, sandbox.Options{}, stripeapi.Config{})
	ctx := context.Background()
	declined := json.RawMessage(`{"amount": 500, "currency": "usd", "payment_method": "pm_card_chargeDeclined"}`)
	_, err := c.CreatePaymentIntent(ctx, "k1", declined)
	var pe *reconcile.ProviderError
	if !errors.As(err, &pe) || pe.Err != nil || pe.Status != 402 || pe.Type != "card_error" || pe.Code != "card_declined" {
		t.Fatalf("declined card: %v, want a definitive 402 card_error (Err nil)", err)
	}
	s.ForgetKeys()
	ok, err := c.CreatePaymentIntent(ctx, "k1", json.RawMessage(`{"amount": 500, "currency": "usd", "payment_method": "pm_card_visa"}`))
	if err != nil {
		t.Fatal(err)
	}
	s.ForgetKeys()
	_, err = c.CreatePaymentIntent(ctx, "k1", declined) // the latest is declined again
	if !errors.As(err, &pe) || pe.Status != 402 {
		t.Fatalf("declined card: %v", err)
	}
	found, err := c.FindPayment(ctx, "k1")
	if err != nil || found == nil || found.ID != ok.ID || found.Status != "succeeded" {
		t.Errorf("FindPayment among three = %+v, %v, want the succeeded %s", found, err, ok.ID)
	}
}

func TestFaultsEndInTheRightSentinel(t *testing.T) {
	ctx := context.Background()
	create := func(c *stripeapi.Client) error {
		_, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 700))
		return err
	}
	for _, tc := range []struct {
		name  string
		fault sandbox.Fault
		call  func(c *stripeapi.Client) error
		want  error
		made  int // payments the sandbox must have made, eventually
	}{
		{"drop_after", sandbox.Fault{Kind: sandbox.FaultDropAfter, Times: 1}, create, reconcile.ErrInDoubt, 1},
		{"hang beyond the timeout", sandbox.Fault{Kind: sandbox.FaultHang, Times: 1, Delay: 300 * time.Millisecond}, create, reconcile.ErrInDoubt, 1},
		{"latency beyond the timeout", sandbox.Fault{Kind: sandbox.FaultLatency, Times: 1, Delay: 300 * time.Millisecond}, create, reconcile.ErrInDoubt, 0},
		{"error_500", sandbox.Fault{Kind: sandbox.FaultError500}, create, reconcile.ErrInDoubt, 0},
		{"rate_limit", sandbox.Fault{Kind: sandbox.FaultRateLimit}, create, reconcile.ErrUnavailable, 0},
		{"unavailable on search", sandbox.Fault{Op: sandbox.OpSearch, Kind: sandbox.FaultUnavailable},
			func(c *stripeapi.Client) error { _, err := c.FindPayment(ctx, "k1"); return err }, reconcile.ErrUnavailable, 0},
		{"drop_after on search", sandbox.Fault{Op: sandbox.OpSearch, Kind: sandbox.FaultDropAfter},
			func(c *stripeapi.Client) error { _, err := c.FindPayment(ctx, "k1"); return err }, reconcile.ErrUnavailable, 0},
		{"unavailable on list_refunds", sandbox.Fault{Op: sandbox.OpListRefunds, Kind: sandbox.FaultUnavailable},
			func(c *stripeapi.Client) error { _, err := c.FindRefund(ctx, "ch_x", "k1"); return err }, reconcile.ErrUnavailable, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := setup(t, sandbox.Options{}, stripeapi.Config{Timeout: 100 * time.Millisecond})
			s.Inject(tc.fault)
			err := tc.call(c)
			var pe *reconcile.ProviderError
			if !errors.Is(err, tc.want) || !errors.As(err, &pe) {
				t.Fatalf("%s: %v, want a ProviderError wrapping %v", tc.name, err, tc.want)
			}
			if tc.made > 0 {
				waitFor(t, func() bool { return len(s.Payments()) == tc.made })
			}
			if tc.fault.Delay > 0 {
				time.Sleep(tc.fault.Delay + 50*time.Millisecond) // let a late request finish before counting
			}
			if n := len(s.Payments()); n != tc.made {
				t.Errorf("%s: sandbox made %d payments, want %d", tc.name, n, tc.made)
			}
		})
	}
}

func TestAFaultedRefundIsInDoubtAndWasMade(t *testing.T) {
	s, c := setup(t, sandbox.Options{}, stripeapi.Config{})
	ctx := context.Background()
	p, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 700))
	if err != nil {
		t.Fatal(err)
	}
	s.Inject(sandbox.Fault{Op: sandbox.OpRefund, Kind: sandbox.FaultDropAfter, Times: 1})
	r := &reconcile.RefundRequest{Key: "k1:compensate:" + p.ChargeID, Target: p.ChargeID, Amount: p.Amount, Compensates: "k1"}
	if _, err := c.Refund(ctx, r); !errors.Is(err, reconcile.ErrInDoubt) {
		t.Fatalf("dropped refund: %v, want ErrInDoubt", err)
	}
	found, err := c.FindRefund(ctx, p.ChargeID, r.Key)
	if err != nil || found == nil {
		t.Fatalf("FindRefund after the drop = %v, %v, want the refund the sandbox made", found, err)
	}
	if again, err := c.Refund(ctx, r); err != nil || !again.Replayed || again.ID != found.ID {
		t.Errorf("Refund again after the drop = %+v, %v, want a replay of %s", again, err, found.ID)
	}
}

func TestAKeyPastItsTTLMakesASecondPayment(t *testing.T) {
	c := &clock{t: time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)}
	s, client := setup(t, sandbox.Options{KeyTTL: 24 * time.Hour, Now: c.Now}, stripeapi.Config{})
	ctx := context.Background()
	first, err := client.CreatePaymentIntent(ctx, "k1", recorded("k1", 700))
	if err != nil {
		t.Fatal(err)
	}
	c.Add(24*time.Hour - time.Second)
	if m, err := client.CreatePaymentIntent(ctx, "k1", recorded("k1", 700)); err != nil || !m.Replayed {
		t.Fatalf("within the TTL = %+v, %v, want a replay", m, err)
	}
	c.Add(time.Second)
	second, err := client.CreatePaymentIntent(ctx, "k1", recorded("k1", 700))
	if err != nil {
		t.Fatal(err)
	}
	if second.Replayed || second.ID == first.ID {
		t.Errorf("after the TTL = %+v, want a new payment", second)
	}
	if n := len(s.Payments()); n != 2 {
		t.Errorf("sandbox made %d payments, want 2", n)
	}
}

func TestAKeyInFlightIsInDoubt(t *testing.T) {
	s, c := setup(t, sandbox.Options{}, stripeapi.Config{})
	ctx := context.Background()
	s.Inject(sandbox.Fault{Key: "k1", Kind: sandbox.FaultHang, Times: 1, Delay: 300 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 700))
		done <- err
	}()
	waitFor(t, func() bool { return s.InFlight() == 1 })
	_, err := c.CreatePaymentIntent(ctx, "k1", recorded("k1", 700))
	var pe *reconcile.ProviderError
	if !errors.Is(err, reconcile.ErrInDoubt) || !errors.As(err, &pe) || pe.Status != 409 {
		t.Errorf("second call while the first runs: %v, want ErrInDoubt from a 409", err)
	}
	if err := <-done; err != nil {
		t.Errorf("first call: %v", err)
	}
	if n := len(s.Payments()); n != 1 {
		t.Errorf("sandbox made %d payments, want 1", n)
	}
}

// clock is a fake clock that tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// waitFor polls cond for up to five seconds: for work the server finishes
// after the client gave up.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
	}
}

// plain sends requests to a sandbox without the client.
type plain struct {
	t    *testing.T
	base string
}

func sandboxHTTP(t *testing.T, s *sandbox.Server) plain {
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return plain{t, ts.URL}
}

func (p plain) post(path, key string, form url.Values) {
	p.t.Helper()
	req, _ := http.NewRequest("POST", p.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		p.t.Fatalf("POST %s = %d", path, resp.StatusCode)
	}
}
