package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"reconcile"
	"reconcile/provider"
)

func TestAnswersMapToTheRightSentinel(t *testing.T) {
	stripeErr := func(typ, code string) string {
		return `{"error":{"type":"` + typ + `","code":"` + code + `","message":"m"}}`
	}
	for _, tc := range []struct {
		name   string
		status int
		body   string
		write  bool
		want   error // nil: a definitive answer that nothing was made
		typ    string
	}{
		{"500", 500, stripeErr("api_error", ""), true, reconcile.ErrInDoubt, "api_error"},
		{"502 from a proxy, not JSON", 502, "<html>Bad Gateway</html>", true, reconcile.ErrInDoubt, ""},
		{"503", 503, stripeErr("api_error", ""), true, reconcile.ErrInDoubt, "api_error"},
		{"409 key in flight", 409, stripeErr("idempotency_error", "idempotency_key_in_use"), true, reconcile.ErrInDoubt, "idempotency_error"},
		{"409 as api_error", 409, stripeErr("api_error", ""), true, reconcile.ErrInDoubt, "api_error"},
		{"400 idempotency_error", 400, stripeErr("idempotency_error", ""), true, reconcile.ErrRefused, "idempotency_error"},
		{"429", 429, stripeErr("invalid_request_error", "rate_limit"), true, reconcile.ErrUnavailable, "invalid_request_error"},
		{"402 card declined", 402, stripeErr("card_error", "card_declined"), true, nil, "card_error"},
		{"400 invalid request", 400, stripeErr("invalid_request_error", "parameter_unknown"), true, nil, "invalid_request_error"},
		{"401 bad key", 401, stripeErr("invalid_request_error", ""), true, nil, "invalid_request_error"},
		{"404 not JSON", 404, "not found", true, nil, ""},
		{"200 not JSON", 200, "garbage", true, reconcile.ErrInDoubt, ""},
		{"lookup 400", 400, stripeErr("invalid_request_error", ""), false, reconcile.ErrUnavailable, "invalid_request_error"},
		{"lookup 404", 404, stripeErr("invalid_request_error", "resource_missing"), false, reconcile.ErrUnavailable, "invalid_request_error"},
		{"lookup 500", 500, stripeErr("api_error", ""), false, reconcile.ErrUnavailable, "api_error"},
		{"lookup 200 not JSON", 200, "garbage", false, reconcile.ErrUnavailable, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer ts.Close()
			c := provider.New(provider.Config{BaseURL: ts.URL, APIKey: testKey})
			var err error
			if tc.write {
				_, err = c.CreatePaymentIntent(context.Background(), "k1", recorded("k1", 100))
			} else {
				_, err = c.FindPayment(context.Background(), "k1")
			}
			var pe *reconcile.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want a *reconcile.ProviderError", err, err)
			}
			if pe.Err != tc.want || pe.Status != tc.status || pe.Type != tc.typ {
				t.Errorf("error = %+v, want status %d, type %q, sentinel %v", pe, tc.status, tc.typ, tc.want)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error %q shows the API key", err)
			}
			if n := hits.Load(); n != 1 {
				t.Errorf("the server was called %d times, want once: the client must not retry", n)
			}
		})
	}
}

func TestConnectionFailuresMapToTheRightSentinel(t *testing.T) {
	ctx := context.Background()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	// hangup reads each request, then closes the connection unanswered.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Read(make([]byte, 64<<10))
			conn.Close()
		}
	}()

	stop := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-stop }))
	defer slow.Close()
	defer close(stop)

	for _, tc := range []struct {
		name  string
		url   string
		write bool
		want  error
	}{
		{"refused connection, write", closed.URL, true, reconcile.ErrUnavailable},
		{"refused connection, lookup", closed.URL, false, reconcile.ErrUnavailable},
		{"hangup after the request, write", "http://" + ln.Addr().String(), true, reconcile.ErrInDoubt},
		{"hangup after the request, lookup", "http://" + ln.Addr().String(), false, reconcile.ErrUnavailable},
		{"timeout, write", slow.URL, true, reconcile.ErrInDoubt},
		{"timeout, lookup", slow.URL, false, reconcile.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := provider.New(provider.Config{BaseURL: tc.url, APIKey: testKey, Timeout: 100 * time.Millisecond})
			var err error
			if tc.write {
				_, err = c.CreatePaymentIntent(ctx, "k1", recorded("k1", 100))
			} else {
				_, err = c.FindRefund(ctx, "ch_1", "k1")
			}
			var pe *reconcile.ProviderError
			if !errors.As(err, &pe) || pe.Err != tc.want || pe.Status != 0 {
				t.Errorf("error = %v, want a ProviderError with no status wrapping %v", err, tc.want)
			}
		})
	}
}

func TestBadRequestsAreRefusedBeforeSending(t *testing.T) {
	var hits atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer ts.Close()
	c := provider.New(provider.Config{BaseURL: ts.URL, APIKey: testKey})
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"not an object":    func() error { _, err := c.CreatePaymentIntent(ctx, "k1", json.RawMessage(`[1]`)); return err },
		"not JSON":         func() error { _, err := c.CreatePaymentIntent(ctx, "k1", json.RawMessage(`{`)); return err },
		"two objects":      func() error { _, err := c.CreatePaymentIntent(ctx, "k1", json.RawMessage(`{} {}`)); return err },
		"other effect key": func() error { _, err := c.CreatePaymentIntent(ctx, "k1", recorded("k2", 100)); return err },
		"metadata not object": func() error {
			_, err := c.CreatePaymentIntent(ctx, "k1", json.RawMessage(`{"metadata":"x"}`))
			return err
		},
		"empty key": func() error { _, err := c.CreatePaymentIntent(ctx, "", recorded("", 100)); return err },
		"key too long": func() error {
			_, err := c.CreatePaymentIntent(ctx, strings.Repeat("k", 256), json.RawMessage(`{}`))
			return err
		},
		"refund of nothing":    func() error { _, err := c.Refund(ctx, &reconcile.RefundRequest{Key: "k1"}); return err },
		"refund without a key": func() error { _, err := c.Refund(ctx, &reconcile.RefundRequest{Charge: "ch_1"}); return err },
	} {
		err := call()
		var pe *reconcile.ProviderError
		if !errors.As(err, &pe) || pe.Err != nil {
			t.Errorf("%s: %v, want a definitive ProviderError (Err nil)", name, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server was called %d times, want none", n)
	}
}

func TestRequestsCarryTheKeysAndTheAPIKey(t *testing.T) {
	type seen struct{ method, path, auth, idem, body string }
	got := make(chan seen, 4)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key"), string(b)}
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/refunds") && r.Method == "POST":
			io.WriteString(w, `{"id":"re_1","object":"refund","amount":100,"currency":"usd","charge":"ch_1","status":"succeeded","metadata":{"effect_key":"c1"}}`)
		default:
			io.WriteString(w, `{"object":"list","data":[],"has_more":false}`)
		}
	}))
	defer ts.Close()
	c := provider.New(provider.Config{BaseURL: ts.URL, APIKey: testKey})
	ctx := context.Background()
	if _, err := c.Refund(ctx, &reconcile.RefundRequest{Key: "c1", Charge: "ch_1", Compensates: "k1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FindPayment(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FindRefund(ctx, "ch_1", "c1"); err != nil {
		t.Fatal(err)
	}
	want := []seen{
		{"POST", "/v1/refunds", "Bearer " + testKey, "c1", "charge=ch_1&metadata[compensates]=k1&metadata[effect_key]=c1"},
		{"GET", "/v1/payment_intents/search?limit=100&query=metadata%5B%27effect_key%27%5D%3A%27k1%27", "Bearer " + testKey, "", ""},
		{"GET", "/v1/refunds?charge=ch_1&limit=100", "Bearer " + testKey, "", ""},
	}
	for _, w := range want {
		if g := <-got; g != w {
			t.Errorf("request = %+v\nwant      %+v", g, w)
		}
	}
}
