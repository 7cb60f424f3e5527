package sandbox_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"reconcile/stripeapi/sandbox"
)

// arm posts faults as JSON, as another process would.
func arm(t *testing.T, base, body string) int {
	t.Helper()
	resp, err := http.Post(base+"/_sandbox/faults", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestFaultsArmedOverHTTPHitTheirCountThenStop(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	if code := arm(t, base, `{"op":"create_payment_intent","kind":"rate_limit","times":2}`); code != 204 {
		t.Fatalf("arming a fault = %d, want 204", code)
	}
	for i, want := range []int{429, 429, 200} {
		if a := do(t, "POST", base+"/v1/payment_intents", "k1", charge("100", "eur", "k1")); a.status != want {
			t.Errorf("request %d = %d %s, want %d", i+1, a.status, a.raw, want)
		}
	}
	if n := len(s.Payments()); n != 1 {
		t.Errorf("sandbox made %d payments, want 1: a rate-limited request makes nothing", n)
	}

	if code := arm(t, base, `[{"op":"search","kind":"unavailable"},{"kind":"error_500","key":"k2"}]`); code != 204 {
		t.Fatalf("arming two faults = %d, want 204", code)
	}
	for range 2 {
		if a := do(t, "GET", base+"/v1/payment_intents/search", "", url.Values{"query": {"status:'succeeded'"}}); a.status != 503 {
			t.Errorf("search with an unavailable fault = %d, want 503", a.status)
		}
	}
	if a := do(t, "POST", base+"/v1/payment_intents", "k2", charge("100", "eur", "k2")); a.status != 500 || a.str("error", "type") != "api_error" {
		t.Errorf("create with an error_500 fault = %d %s, want 500 api_error", a.status, a.raw)
	}
	if a := do(t, "POST", base+"/v1/payment_intents", "k3", charge("100", "eur", "k3")); a.status != 200 {
		t.Errorf("a fault aimed at key k2 hit k3: %d", a.status)
	}
	req, _ := http.NewRequest("DELETE", base+"/_sandbox/faults", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 204 {
		t.Fatalf("DELETE /_sandbox/faults = %v %v", resp, err)
	}
	if a := do(t, "POST", base+"/v1/payment_intents", "k2", charge("100", "eur", "k2")); a.status != 200 {
		t.Errorf("after clearing, the key a 500 made nothing for = %d %s, want 200", a.status, a.raw)
	}
	if n := len(s.Payments()); n != 3 {
		t.Errorf("sandbox made %d payments, want 3", n)
	}

	for _, bad := range []string{`{"kind":"explode"}`, `{"op":"charge","kind":"hang"}`, `{"kind":"hang","delay":"soon"}`, `not json`} {
		if code := arm(t, base, bad); code != 400 {
			t.Errorf("arming %s = %d, want 400", bad, code)
		}
	}
}

func TestDropAfterMakesThePaymentThenClosesTheConnection(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	s.Inject(sandbox.Fault{Kind: sandbox.FaultDropAfter, Key: "k1", Times: 1})
	if _, err := send("POST", base+"/v1/payment_intents", "k1", charge("100", "eur", "k1")); err == nil {
		t.Fatal("a dropped request got an answer")
	}
	if n := len(s.Payments()); n != 1 {
		t.Fatalf("sandbox made %d payments, want 1 before dropping", n)
	}
	a := do(t, "POST", base+"/v1/payment_intents", "k1", charge("100", "eur", "k1"))
	if a.header.Get("Idempotent-Replayed") != "true" || a.str("id") != s.Payments()[0].ID {
		t.Errorf("retry after the drop = %s, want the stored answer replayed", a.raw)
	}
}

func TestHangDoesTheWorkAfterTheCallerLeft(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	arm(t, base, `{"op":"refund","kind":"hang","delay":"150ms"}`)
	ch := do(t, "POST", base+"/v1/payment_intents", "k1", charge("100", "eur", "k1")).str("latest_charge")
	c := &http.Client{Timeout: 20 * time.Millisecond}
	req, _ := http.NewRequest("POST", base+"/v1/refunds", strings.NewReader(url.Values{"charge": {ch}}.Encode()))
	req.Header.Set("Authorization", "Bearer sk_test_sandbox")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", "r1")
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("a hanging request answered before the caller's timeout")
	}
	waitFor(t, func() bool { return len(s.Refunds()) == 1 })
}

// Arrived closes when a hung call reaches the sandbox, before it makes
// anything, and Landed when its work is done; a replay arrives but does not
// land, and a request under another key closes neither.
func TestArrivedAndLandedSeeAHungCall(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	s.Inject(sandbox.Fault{Op: sandbox.OpCreatePaymentIntent, Key: "k1", Kind: sandbox.FaultHang, Times: 1, Delay: 300 * time.Millisecond})
	arrived, landed := s.Arrived("k1"), s.Landed("k1")
	do(t, "POST", base+"/v1/payment_intents", "k2", charge("100", "eur", "k2"))
	select {
	case <-arrived:
		t.Fatal("a request under k2 closed Arrived(k1)")
	case <-landed:
		t.Fatal("a request under k2 closed Landed(k1)")
	default:
	}
	done := make(chan answer, 1)
	go func() {
		a, err := send("POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1"))
		if err != nil {
			t.Error(err)
		}
		done <- a
	}()
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the hung request did not arrive within 5s")
	}
	select {
	case <-landed:
		t.Fatal("Landed closed while the request hangs")
	default:
	}
	if n := len(s.Payments()); n != 1 {
		t.Errorf("sandbox holds %d payments while the call hangs, want only k2's", n)
	}
	select {
	case <-landed:
	case <-time.After(5 * time.Second):
		t.Fatal("the hung request did not land within 5s")
	}
	if n := len(s.Payments()); n != 2 {
		t.Errorf("sandbox holds %d payments once the call landed, want 2", n)
	}
	<-done
	arrived, landed = s.Arrived("k1"), s.Landed("k1")
	if a := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1420", "eur", "k1")); a.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the retry = %s, want a replay", a.raw)
	}
	select {
	case <-arrived:
	default:
		t.Error("the replay was answered without Arrived closing")
	}
	select {
	case <-landed:
		t.Error("a replay landed")
	default:
	}
}

func TestLatencyBeyondTheCallersPatienceMakesNothing(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	s.Inject(sandbox.Fault{Kind: sandbox.FaultLatency, Delay: 100 * time.Millisecond})
	c := &http.Client{Timeout: 20 * time.Millisecond}
	req, _ := http.NewRequest("POST", base+"/v1/payment_intents", strings.NewReader(charge("100", "eur", "k1").Encode()))
	req.Header.Set("Authorization", "Bearer sk_test_sandbox")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("a slow request answered before the caller's timeout")
	}
	time.Sleep(200 * time.Millisecond) // past the delay: nothing may appear
	if n := len(s.Payments()); n != 0 {
		t.Errorf("sandbox made %d payments for a caller that left during the latency, want 0", n)
	}
	s.ClearFaults()
	s.Inject(sandbox.Fault{Kind: sandbox.FaultLatency, Delay: 10 * time.Millisecond, Times: 1})
	if a := do(t, "POST", base+"/v1/payment_intents", "k2", charge("100", "eur", "k2")); a.status != 200 {
		t.Errorf("a short latency = %d, want 200", a.status)
	}
}
