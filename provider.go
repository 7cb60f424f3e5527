package reconcile

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Made is what a provider call made or a lookup found: a payment intent
// with its charge, or a refund.
type Made struct {
	ID       string // pi_… for a payment, re_… for a refund
	ChargeID string // the payment's charge, or the charge a refund returns
	// PaymentIntent is the payment's own pi_ id, or the payment intent of
	// the charge a refund returns.
	PaymentIntent string
	Status        string // the provider's word: succeeded, pending, failed, requires_action, ...
	Amount        Money
	// EffectKey is the object's metadata[effect_key], when it has one.
	EffectKey string
	// Replayed is true when the provider answered from its idempotency
	// store: the call made nothing new.
	Replayed bool
	Response json.RawMessage // the provider's answer, as it came
}

// RefundRequest is a compensation's call: refund one extra transaction
// under the compensation key, for an amount stated in the request, so that
// what the blast radius counted is what is sent.
type RefundRequest struct {
	Key string // the compensation key, sent as the Idempotency-Key
	// Target is the extra transaction refunded: a charge, or a payment
	// intent; the provider's client knows which from the id.
	Target      string
	Amount      Money  // always sent; the currency is the charge's
	Compensates string // the original effect's key: metadata[compensates]
}

// Terms are what a recorded request asks for, as its provider reads it:
// the amount (nil when it states none) and currency, and for a refund the
// transaction it refunds. What a provider makes or a lookup finds is
// checked against them.
type Terms struct {
	Amount   *int64
	Currency string
	Target   string
}

// Charge is a charge as the provider shows it when it is retrieved: what
// the job checks before it refunds one, and before it keeps one.
type Charge struct {
	ID            string // ch_…
	PaymentIntent string // pi_…, when the charge belongs to one
	Amount        Money
	Refunded      int64  // minor units refunded so far, in part or in full
	Disputed      bool   // a chargeback or inquiry names it
	Status        string // succeeded, pending, failed
	// EffectKey is the charge's metadata[effect_key], else its payment
	// intent's.
	EffectKey string
	Livemode  bool
	// Refunds are the charge's refunds, newest first; listed only when
	// some of the charge is refunded.
	Refunds  []Made
	Response json.RawMessage // the provider's answer, as it came
}

// Errors a provider call ends with, for callers to branch on with errors.Is.
var (
	// ErrInDoubt means the call may or may not have made its effect: a
	// timeout, a dropped connection, a 5xx, a key still in flight. It is
	// never a failure: the next run looks up before acting again.
	ErrInDoubt = errors.New("provider call in doubt")
	// ErrRefused means the provider refused the key: it was used before
	// with other parameters. The action is never retried with new ones.
	ErrRefused = errors.New("provider refused the idempotency key")
	// ErrUnavailable means the provider did not act and said so (a lookup
	// that is down, a rate limit): nothing was made, try again later.
	ErrUnavailable = errors.New("provider unavailable")
)

// ProviderError is an answer from the provider that says the call was
// processed and made nothing: a declined card, a charge already refunded.
// It wraps ErrInDoubt, ErrRefused or ErrUnavailable when it is one of those,
// and ErrNotFound when a retrieval found no such object.
type ProviderError struct {
	Op      string // "create payment intent", "refund", "search", ...
	Status  int    // HTTP status, 0 when there was no answer
	Type    string // Stripe's error type: invalid_request_error, card_error, idempotency_error, ...
	Code    string // Stripe's error code, when given
	Message string
	Err     error // ErrInDoubt, ErrRefused, ErrUnavailable, ErrNotFound or nil
}

func (e *ProviderError) Error() string {
	s := e.Op
	if e.Status != 0 {
		s += fmt.Sprintf(": HTTP %d", e.Status)
	}
	if e.Type != "" {
		s += " " + e.Type
	}
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += " [" + e.Err.Error() + "]"
	}
	return s
}

// Unwrap gives the sentinel the error stands for.
func (e *ProviderError) Unwrap() error { return e.Err }
