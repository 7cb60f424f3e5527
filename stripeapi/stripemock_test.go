package stripeapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/build"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"reconcile"
	"reconcile/stripeapi"
	"reconcile/stripeapi/sandbox"
)

// recording is a transport that keeps a copy of every request it carries.
type recording struct {
	mu   sync.Mutex
	reqs []recordedRequest
}

type recordedRequest struct {
	method, uri string
	header      http.Header
	body        []byte
}

func (rt *recording) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	rt.mu.Lock()
	rt.reqs = append(rt.reqs, recordedRequest{req.Method, req.URL.RequestURI(), req.Header.Clone(), body})
	rt.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// TestRequestsValidateAgainstStripeMock records the exact requests the
// client sends for each call (against the sandbox, so that the calls
// succeed and refer to real ids) and replays them against stripe-mock,
// which checks each one against Stripe's OpenAPI spec: an unknown or
// malformed parameter fails.
func TestRequestsValidateAgainstStripeMock(t *testing.T) {
	mock := startStripeMock(t)

	rec := &recording{}
	s, c := setup(t, sandbox.Options{}, stripeapi.Config{HTTPClient: &http.Client{Transport: rec}})
	ctx := context.Background()
	key := "run_8f3c1a:charge:0"
	p1, err := c.CreatePaymentIntent(ctx, key, recorded(key, 1420000))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := c.CreatePaymentIntent(ctx, "run_8f3c1a:charge:1", json.RawMessage(`{"amount": 5000, "currency": "jpy",
		"customer": "cus_Qa02", "payment_method": "pm_card_visa", "description": "Tokyo order",
		"metadata": {"order_ref": "B-7", "channel": "web"}}`))
	if err != nil {
		t.Fatal(err)
	}
	part := reconcile.Money{Minor: 400000, Currency: "EUR"}
	if _, err := c.Refund(ctx, &reconcile.RefundRequest{Key: key + ":compensate:" + p1.ChargeID, Target: p1.ChargeID, Amount: part, Compensates: key}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Refund(ctx, &reconcile.RefundRequest{Key: "run_8f3c1a:charge:1:compensate:" + p2.ChargeID, Target: p2.ID, Amount: p2.Amount, Compensates: "run_8f3c1a:charge:1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FindPayment(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FindRefund(ctx, p1.ChargeID, key+":compensate:"+p1.ChargeID); err != nil {
		t.Fatal(err)
	}
	if m, err := c.FindRefund(ctx, p2.ID, "run_8f3c1a:charge:1:compensate:"+p2.ChargeID); err != nil || m == nil {
		t.Fatalf("FindRefund by payment intent = %v, %v", m, err)
	}
	// Both retrievals list refunds too: each charge is refunded in part or in full.
	if ch, err := c.RetrieveCharge(ctx, p1.ChargeID); err != nil || len(ch.Refunds) != 1 {
		t.Fatalf("RetrieveCharge(%s) = %+v, %v", p1.ChargeID, ch, err)
	}
	if ch, err := c.RetrieveCharge(ctx, p2.ID); err != nil || len(ch.Refunds) != 1 {
		t.Fatalf("RetrieveCharge(%s) = %+v, %v", p2.ID, ch, err)
	}
	// A recorded refund effect, redelivered with its currency and reason.
	rk := "run_8f3c1a:refund:0"
	if _, err := c.CreateRefund(ctx, rk, json.RawMessage(`{"charge": `+jsonText(p1.ChargeID)+`, "amount": 1000,
		"currency": "eur", "reason": "requested_by_customer", "metadata": {"effect_key": `+jsonText(rk)+`}}`)); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Payments()) + len(s.Refunds()); n != 5 {
		t.Fatalf("sandbox made %d objects, want 5", n)
	}

	rec.mu.Lock()
	reqs := rec.reqs
	rec.mu.Unlock()
	if len(reqs) != 12 {
		t.Fatalf("recorded %d requests, want 12", len(reqs))
	}
	for _, r := range reqs {
		req, err := http.NewRequest(r.method, mock+r.uri, bytes.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{"Content-Type", "Idempotency-Key", "Stripe-Version"} {
			if v := r.header.Get(h); v != "" {
				req.Header.Set(h, v)
			}
		}
		req.Header.Set("Authorization", "Bearer sk_test_123") // the key stripe-mock expects
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Errorf("stripe-mock refused %s %s\n%s\n=> %d %s", r.method, r.uri, r.body, resp.StatusCode, answer)
		}
	}
}

// startStripeMock starts stripe-mock on a free port and returns its URL. It
// is found from $STRIPE_MOCK, then PATH, then $(go env GOPATH)/bin. Without
// it the test is skipped, or fails when RECONCILE_REQUIRE_TOOLS=1.
func startStripeMock(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("STRIPE_MOCK")
	if bin == "" {
		bin, _ = exec.LookPath("stripe-mock")
	}
	if bin == "" {
		gopath := build.Default.GOPATH
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil && len(bytes.TrimSpace(out)) > 0 {
			gopath = string(bytes.TrimSpace(out))
		}
		if p := filepath.Join(filepath.SplitList(gopath)[0], "bin", "stripe-mock"); fileExists(p) {
			bin = p
		}
	}
	if bin == "" {
		msg := "stripe-mock not found ($STRIPE_MOCK, PATH, $(go env GOPATH)/bin); install it with: go install github.com/stripe/stripe-mock@v0.203.0"
		if os.Getenv("RECONCILE_REQUIRE_TOOLS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logPath := filepath.Join(t.TempDir(), "stripe-mock.log")
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	logged := func() string { b, _ := os.ReadFile(logPath); return strings.TrimSpace(string(b)) }
	// stripe-mock also serves HTTPS, on :12112 unless told otherwise: a
	// port of the system's choosing lets two test runs share the machine.
	cmd := exec.Command(bin, "-http-addr", addr, "-https-addr", "127.0.0.1:")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("stripe-mock exited: %v\n%s", err, logged())
		default:
		}
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return fmt.Sprintf("http://%s", addr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("stripe-mock did not listen on %s within 30s\n%s", addr, logged())
		}
	}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
