package stripeapi

import (
	"context"
	"errors"
	"net"
	"net/http"

	stripe "github.com/stripe/stripe-go/v82"

	"reconcile"
)

// call sends one request through stripe-go and returns the answer's body
// and headers. A key is sent as the Idempotency-Key. Errors are mapped to
// ProviderErrors: a POST is a write, anything else a read.
//
// It uses the backend's CallRaw, not RawRequest: in stripe-go v82.5.1
// RawRequest dereferences a nil response on a connection error
// (stripe/stripe-go#2211, fixed in v83).
func (c *Client) call(ctx context.Context, op, method, path, body, key string) ([]byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ex := &exchange{}
	p := &stripe.Params{Context: context.WithValue(ctx, exchangeKey{}, ex)}
	if key != "" {
		p.IdempotencyKey = stripe.String(key)
	}
	var a answer
	if err := c.backend.CallRaw(method, path, c.key, []byte(body), p, &a); err != nil {
		return nil, nil, classify(op, method == http.MethodPost, ex, err)
	}
	return a.resp.RawJSON, a.resp.Header, nil
}

// answer receives a response from stripe-go as it is: its body is read
// from the APIResponse, not decoded into a type.
type answer struct{ resp *stripe.APIResponse }

// UnmarshalJSON accepts any JSON: the body is kept in the APIResponse.
func (a *answer) UnmarshalJSON([]byte) error { return nil }

// SetLastResponse keeps the response.
func (a *answer) SetLastResponse(r *stripe.APIResponse) { a.resp = r }

// exchange is what the wire saw of one call: whether a request went out,
// whether the connection could not even be made, and the answer's status.
// stripe-go only says so for answers with a Stripe error body.
type exchange struct {
	sent   bool
	dialed bool // false when the connection failed before any byte was sent
	status int
}

type exchangeKey struct{}

// wire is the client's transport: it notes each call's exchange, and sends
// every POST exactly once. net/http would resend a POST that carries an
// Idempotency-Key when a reused connection drops before the answer; safe
// under the key, but it would turn a doubt into a replay the caller never
// sees, and the caller decides what to do with doubt.
type wire struct{ next http.RoundTripper }

// RoundTrip sends req on the next transport.
func (t *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if req.Method == http.MethodPost && req.GetBody != nil {
		req = req.Clone(req.Context())
		req.GetBody = nil
	}
	if ex != nil {
		ex.sent, ex.dialed = true, true
	}
	resp, err := t.next.RoundTrip(req)
	if ex != nil {
		var op *net.OpError
		if err != nil && errors.As(err, &op) && op.Op == "dial" {
			ex.dialed = false
		}
		if resp != nil {
			ex.status = resp.StatusCode
		}
	}
	return resp, err
}

// classify turns a failed call into a ProviderError whose sentinel says
// what the caller may conclude.
func classify(op string, write bool, ex *exchange, err error) *reconcile.ProviderError {
	pe := &reconcile.ProviderError{Op: op, Status: ex.status, Message: err.Error()}
	var se *stripe.Error
	if errors.As(err, &se) {
		pe.Status, pe.Type, pe.Code, pe.Message = se.HTTPStatusCode, string(se.Type), string(se.Code), se.Msg
	}
	switch {
	case !write && pe.Status == http.StatusNotFound && pe.Code == "resource_missing":
		// The object the URL names does not exist. A 404 without the code
		// is an unrecognized URL (a wrong base URL, say), which says
		// nothing about the object: that stays unavailable.
		pe.Err = reconcile.ErrNotFound
	case !write:
		// A lookup that failed found nothing out: never in doubt.
		pe.Err = reconcile.ErrUnavailable
	case !ex.sent || !ex.dialed:
		// Nothing left this machine: nothing was made.
		pe.Err = reconcile.ErrUnavailable
	case pe.Status == 0:
		// Sent, and no answer: a timeout, a reset, a connection closed.
		pe.Err = reconcile.ErrInDoubt
	case pe.Status == http.StatusTooManyRequests:
		pe.Err = reconcile.ErrUnavailable
	case pe.Status == http.StatusConflict, pe.Status >= 500:
		// A 409 is the key still in flight: the first request may yet
		// make the effect. Checked before the error type, since Stripe
		// writes it as an idempotency_error too.
		pe.Err = reconcile.ErrInDoubt
	case pe.Status == http.StatusBadRequest && pe.Type == string(stripe.ErrorTypeIdempotency):
		pe.Err = reconcile.ErrRefused
	case pe.Status >= 400:
		// Any other 4xx is a definitive answer that nothing was made.
	default:
		// A 2xx whose body could not be read: something was made.
		pe.Err = reconcile.ErrInDoubt
	}
	return pe
}

// unreadable is the error for a 2xx answer whose body could not be read.
func unreadable(op string, sentinel, err error) *reconcile.ProviderError {
	return &reconcile.ProviderError{Op: op, Message: "unreadable answer: " + err.Error(), Err: sentinel}
}
