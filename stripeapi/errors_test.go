package stripeapi_test

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
	"reconcile/stripeapi"
)

func TestAnswersMapToTheRightSentinel(t *testing.T) {
	stripeErr := func(typ, code string) string {
		return `{"error":{"type":"` + typ + `","code":"` + code + `","message":"m"}}`
	}
	type call int
	const (
		create   call = iota // a write: CreatePaymentIntent
		search               // a lookup: FindPayment
		retrieve             // a retrieval: RetrieveCharge
		refund               // a write: CreateRefund
	)
	for _, tc := range []struct {
		name   string
		status int
		body   string
		call   call
		want   error // nil: a definitive answer that nothing was made
		typ    string
	}{
		{"500", 500, stripeErr("api_error", ""), create, reconcile.ErrInDoubt, "api_error"},
		{"502 from a proxy, not JSON", 502, "<html>Bad Gateway</html>", create, reconcile.ErrInDoubt, ""},
		{"503", 503, stripeErr("api_error", ""), create, reconcile.ErrInDoubt, "api_error"},
		{"409 key in flight", 409, stripeErr("idempotency_error", "idempotency_key_in_use"), create, reconcile.ErrInDoubt, "idempotency_error"},
		{"409 as api_error", 409, stripeErr("api_error", ""), create, reconcile.ErrInDoubt, "api_error"},
		{"400 idempotency_error", 400, stripeErr("idempotency_error", ""), create, reconcile.ErrRefused, "idempotency_error"},
		{"429", 429, stripeErr("invalid_request_error", "rate_limit"), create, reconcile.ErrUnavailable, "invalid_request_error"},
		{"402 card declined", 402, stripeErr("card_error", "card_declined"), create, nil, "card_error"},
		{"400 invalid request", 400, stripeErr("invalid_request_error", "parameter_unknown"), create, nil, "invalid_request_error"},
		{"401 bad key", 401, stripeErr("invalid_request_error", ""), create, nil, "invalid_request_error"},
		{"404 not JSON", 404, "not found", create, nil, ""},
		{"200 not JSON", 200, "garbage", create, reconcile.ErrInDoubt, ""},
		{"lookup 400", 400, stripeErr("invalid_request_error", ""), search, reconcile.ErrUnavailable, "invalid_request_error"},
		{"lookup 404 resource_missing", 404, stripeErr("invalid_request_error", "resource_missing"), search, reconcile.ErrNotFound, "invalid_request_error"},
		{"retrieval 404 resource_missing", 404, stripeErr("invalid_request_error", "resource_missing"), retrieve, reconcile.ErrNotFound, "invalid_request_error"},
		{"retrieval 404 unrecognized URL", 404, stripeErr("invalid_request_error", ""), retrieve, reconcile.ErrUnavailable, "invalid_request_error"},
		{"retrieval 404 not JSON", 404, "not found", retrieve, reconcile.ErrUnavailable, ""},
		{"retrieval 500", 500, stripeErr("api_error", ""), retrieve, reconcile.ErrUnavailable, "api_error"},
		{"retrieval 429", 429, stripeErr("invalid_request_error", "rate_limit"), retrieve, reconcile.ErrUnavailable, "invalid_request_error"},
		{"retrieval 200 not JSON", 200, "garbage", retrieve, reconcile.ErrUnavailable, ""},
		{"write 404 resource_missing", 404, stripeErr("invalid_request_error", "resource_missing"), create, nil, "invalid_request_error"},
		{"refund redelivery 404 resource_missing", 404, stripeErr("invalid_request_error", "resource_missing"), refund, nil, "invalid_request_error"},
		{"refund redelivery 500", 500, stripeErr("api_error", ""), refund, reconcile.ErrInDoubt, "api_error"},
		{"refund redelivery 400 idempotency_error", 400, stripeErr("idempotency_error", ""), refund, reconcile.ErrRefused, "idempotency_error"},
		{"lookup 500", 500, stripeErr("api_error", ""), search, reconcile.ErrUnavailable, "api_error"},
		{"lookup 200 not JSON", 200, "garbage", search, reconcile.ErrUnavailable, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer ts.Close()
			c := stripeapi.New(stripeapi.Config{BaseURL: ts.URL, APIKey: testKey})
			var err error
			switch ctx := context.Background(); tc.call {
			case create:
				_, err = c.CreatePaymentIntent(ctx, "k1", recorded("k1", 100))
			case search:
				_, err = c.FindPayment(ctx, "k1")
			case retrieve:
				_, err = c.RetrieveCharge(ctx, "ch_1")
			case refund:
				_, err = c.CreateRefund(ctx, "c1", json.RawMessage(`{"charge":"ch_1","amount":100}`))
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
			c := stripeapi.New(stripeapi.Config{BaseURL: tc.url, APIKey: testKey, Timeout: 100 * time.Millisecond})
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
			if !tc.write {
				_, err = c.RetrieveCharge(ctx, "pi_1")
				if !errors.As(err, &pe) || pe.Err != tc.want || pe.Status != 0 {
					t.Errorf("RetrieveCharge error = %v, want a ProviderError with no status wrapping %v", err, tc.want)
				}
			}
		})
	}
}

func TestBadRequestsAreRefusedBeforeSending(t *testing.T) {
	var hits atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer ts.Close()
	c := stripeapi.New(stripeapi.Config{BaseURL: ts.URL, APIKey: testKey})
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
		"refund of nothing": func() error {
			_, err := c.Refund(ctx, &reconcile.RefundRequest{Key: "k1", Amount: reconcile.Money{Minor: 1, Currency: "EUR"}})
			return err
		},
		"refund without a key": func() error {
			_, err := c.Refund(ctx, &reconcile.RefundRequest{Target: "ch_1", Amount: reconcile.Money{Minor: 1, Currency: "EUR"}})
			return err
		},
		"refund without an amount": func() error {
			_, err := c.Refund(ctx, &reconcile.RefundRequest{Key: "k1", Target: "ch_1"})
			return err
		},
		"refund of a negative amount": func() error {
			_, err := c.Refund(ctx, &reconcile.RefundRequest{Key: "k1", Target: "pi_1", Amount: reconcile.Money{Minor: -5, Currency: "EUR"}})
			return err
		},
		"redelivered refund, not an object": func() error {
			_, err := c.CreateRefund(ctx, "c1", json.RawMessage(`["ch_1"]`))
			return err
		},
		"redelivered refund, null": func() error { _, err := c.CreateRefund(ctx, "c1", json.RawMessage(`null`)); return err },
		"redelivered refund of nothing": func() error {
			_, err := c.CreateRefund(ctx, "c1", json.RawMessage(`{"amount":100,"currency":"eur"}`))
			return err
		},
		"redelivered refund, charge not a string": func() error {
			_, err := c.CreateRefund(ctx, "c1", json.RawMessage(`{"charge":12,"amount":100}`))
			return err
		},
		"redelivered refund, other effect key": func() error {
			_, err := c.CreateRefund(ctx, "c1", json.RawMessage(`{"charge":"ch_1","metadata":{"effect_key":"c2"}}`))
			return err
		},
		"redelivered refund without a key": func() error {
			_, err := c.CreateRefund(ctx, "", json.RawMessage(`{"charge":"ch_1"}`))
			return err
		},
		"retrieve an empty id":    func() error { _, err := c.RetrieveCharge(ctx, ""); return err },
		"retrieve a refund id":    func() error { _, err := c.RetrieveCharge(ctx, "re_1"); return err },
		"retrieve a bare prefix":  func() error { _, err := c.RetrieveCharge(ctx, "ch_"); return err },
		"retrieve a path":         func() error { _, err := c.RetrieveCharge(ctx, "ch_1/../../v1/balance"); return err },
		"find refunds of nothing": func() error { _, err := c.FindRefund(ctx, "", "k1"); return err },
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
	got := make(chan seen, 16)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key"), string(b)}
		switch {
		case r.URL.Path == "/v1/refunds" && r.Method == "POST":
			io.WriteString(w, `{"id":"re_1","object":"refund","amount":100,"currency":"usd","charge":"ch_1","status":"succeeded","metadata":{"effect_key":"c1"}}`)
		case r.URL.Path == "/v1/charges/ch_1":
			// A charge whose intent is not expanded, as from a provider
			// that ignores expand, and whose key is only on the intent.
			io.WriteString(w, `{"id":"ch_1","object":"charge","amount":100,"amount_refunded":40,"currency":"usd","status":"succeeded","payment_intent":"pi_1","metadata":{}}`)
		case r.URL.Path == "/v1/payment_intents/pi_1":
			io.WriteString(w, `{"id":"pi_1","object":"payment_intent","latest_charge":"ch_1","metadata":{"effect_key":"k1"}}`)
		case r.URL.Path == "/v1/payment_intents/pi_2":
			io.WriteString(w, `{"id":"pi_2","object":"payment_intent","latest_charge":{"id":"ch_2","object":"charge","amount":300,
				"amount_refunded":0,"currency":"eur","status":"succeeded","payment_intent":"pi_2","metadata":{"effect_key":"k2"}},"metadata":{"effect_key":"k2"}}`)
		default:
			io.WriteString(w, `{"object":"list","data":[],"has_more":false}`)
		}
	}))
	defer ts.Close()
	c := stripeapi.New(stripeapi.Config{BaseURL: ts.URL, APIKey: testKey})
	ctx := context.Background()
	if _, err := c.Refund(ctx, &reconcile.RefundRequest{Key: "c1", Target: "ch_1", Amount: reconcile.Money{Minor: 100, Currency: "USD"}, Compensates: "k1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FindPayment(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FindRefund(ctx, "ch_1", "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FindRefund(ctx, "pi_1", "c1"); err != nil {
		t.Fatal(err)
	}
	ch, err := c.RetrieveCharge(ctx, "ch_1")
	if err != nil || ch.EffectKey != "k1" || ch.PaymentIntent != "pi_1" || ch.Refunded != 40 {
		t.Errorf("RetrieveCharge(ch_1) = %+v, %v, want the key k1 from its payment intent", ch, err)
	}
	ch, err = c.RetrieveCharge(ctx, "pi_2")
	if err != nil || ch.ID != "ch_2" || ch.EffectKey != "k2" || ch.Amount != (reconcile.Money{Minor: 300, Currency: "EUR"}) {
		t.Errorf("RetrieveCharge(pi_2) = %+v, %v, want its charge ch_2", ch, err)
	}
	recordedRefund := json.RawMessage(`{"charge":"ch_1","amount":100,"currency":"usd","reason":"duplicate","metadata":{"compensates":"k1"}}`)
	if _, err := c.CreateRefund(ctx, "c1", recordedRefund); err != nil {
		t.Fatal(err)
	}
	auth := "Bearer " + testKey
	want := []seen{
		{"POST", "/v1/refunds", auth, "c1", "amount=100&charge=ch_1&metadata[compensates]=k1&metadata[effect_key]=c1"},
		{"GET", "/v1/payment_intents/search?limit=100&query=metadata%5B%27effect_key%27%5D%3A%27k1%27", auth, "", ""},
		{"GET", "/v1/refunds?charge=ch_1&limit=100", auth, "", ""},
		{"GET", "/v1/refunds?limit=100&payment_intent=pi_1", auth, "", ""},
		{"GET", "/v1/charges/ch_1?expand[]=payment_intent", auth, "", ""},
		{"GET", "/v1/payment_intents/pi_1", auth, "", ""},
		{"GET", "/v1/refunds?charge=ch_1&limit=100", auth, "", ""},
		{"GET", "/v1/payment_intents/pi_2?expand[]=latest_charge", auth, "", ""},
		{"POST", "/v1/refunds", auth, "c1", "amount=100&charge=ch_1&currency=usd&metadata[compensates]=k1&metadata[effect_key]=c1&reason=duplicate"},
	}
	for _, w := range want {
		if g := <-got; g != w {
			t.Errorf("request = %+v\nwant      %+v", g, w)
		}
	}
	if len(got) != 0 {
		t.Errorf("%d more requests than expected", len(got))
	}
}
