// Package stripeapi calls Stripe for reconcile: it redelivers a missing
// charge under its original idempotency key, refunds a duplicate under a
// compensation key, redelivers a missing refund under its own key, retrieves
// a charge to check it before acting on it, and looks up what a key made.
// It speaks to Stripe, or to anything that answers like it (the sandbox,
// stripe-mock), through stripe-go.
//
// Every error is a *reconcile.ProviderError, and says by its sentinel what
// the caller may conclude: ErrInDoubt (the call may have made its effect),
// ErrRefused (the key was used before with other parameters), ErrUnavailable
// (nothing was made, try later), ErrNotFound (a retrieval found no such
// object), or none (a definitive answer that nothing was made, such as a
// declined card).
package stripeapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	stripe "github.com/stripe/stripe-go/v82"

	"reconcile"
)

// Config configures a Client.
type Config struct {
	// BaseURL is the API's address; empty means https://api.stripe.com.
	BaseURL string
	// APIKey is the secret key, sent as a Bearer token. The caller reads it
	// from STRIPE_API_KEY; it is never logged or printed.
	APIKey string
	// Timeout bounds each request; 0 means 30s. A write that times out is
	// in doubt.
	Timeout time.Duration
	// HTTPClient carries the requests; nil means a plain http.Client. It
	// is copied, not changed.
	HTTPClient *http.Client
}

// Client calls Stripe's API. It is safe for concurrent use.
type Client struct {
	backend stripe.Backend
	key     string
	timeout time.Duration
}

// New returns a client for cfg. stripe-go's own retries and telemetry are
// off: whether and when to try again after a doubt is the caller's decision.
func New(cfg Config) *Client {
	base := cmp.Or(cfg.BaseURL, stripe.APIURL)
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = &wire{next: next}
	b := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL:               &base,
		HTTPClient:        hc,
		MaxNetworkRetries: stripe.Int64(0),
		EnableTelemetry:   stripe.Bool(false),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	return &Client{
		backend: b,
		key:     cfg.APIKey,
		timeout: cmp.Or(cfg.Timeout, 30*time.Second),
	}
}

// The operations, as ProviderError.Op names them.
const (
	opCreate    = "create payment intent"
	opRefund    = "refund"
	opRedeliver = "redeliver refund"
	opSearch    = "search payment intents"
	opList      = "list refunds"
	opGetCharge = "retrieve charge"
	opGetIntent = "retrieve payment intent"
)

// CreatePaymentIntent redelivers a charge: POST /v1/payment_intents under
// Idempotency-Key key, with the recorded request (a Stripe-style JSON
// object) form-encoded exactly as recorded, plus confirm=true and
// metadata[effect_key]=key. Nothing else is added or recomputed, so the
// same key always carries the same parameters.
func (c *Client) CreatePaymentIntent(ctx context.Context, key string, request json.RawMessage) (*reconcile.Made, error) {
	if err := checkKey(opCreate, key); err != nil {
		return nil, err
	}
	body, err := paymentForm(key, request)
	if err != nil {
		return nil, &reconcile.ProviderError{Op: opCreate, Message: err.Error()}
	}
	return c.write(ctx, opCreate, "/v1/payment_intents", key, body)
}

// Refund compensates: POST /v1/refunds under Idempotency-Key r.Key, for
// r.Target (a charge, or a payment intent: pi_…), with amount=r.Amount.Minor,
// metadata[effect_key]=r.Key and metadata[compensates]=r.Compensates. The
// amount is always sent, so that what the blast radius counted is what
// moves, never "the rest of the charge"; a request without a positive
// amount is refused before anything is sent. No currency is sent: a refund
// is in its charge's currency, and the caller checks the answer's.
func (c *Client) Refund(ctx context.Context, r *reconcile.RefundRequest) (*reconcile.Made, error) {
	if err := checkKey(opRefund, r.Key); err != nil {
		return nil, err
	}
	if r.Target == "" {
		return nil, &reconcile.ProviderError{Op: opRefund, Message: "refund " + r.Key + " names neither a charge nor a payment intent"}
	}
	f := url.Values{}
	f.Set(targetParam(r.Target), r.Target)
	if r.Amount.Minor <= 0 {
		return nil, &reconcile.ProviderError{Op: opRefund, Message: fmt.Sprintf("refund %s states no positive amount (%d)", r.Key, r.Amount.Minor)}
	}
	f.Set("amount", strconv.FormatInt(r.Amount.Minor, 10))
	f.Set("metadata[effect_key]", r.Key)
	if r.Compensates != "" {
		f.Set("metadata[compensates]", r.Compensates)
	}
	return c.write(ctx, opRefund, "/v1/refunds", r.Key, encode(f))
}

// CreateRefund redelivers a recorded refund effect: POST /v1/refunds under
// Idempotency-Key key, with the recorded request (a Stripe-style JSON
// object naming a charge or a payment_intent) form-encoded exactly as
// recorded, the way CreatePaymentIntent encodes a payment's, plus
// metadata[effect_key]=key, and nothing else. A request that is not an
// object, or names neither a charge nor a payment intent, is refused before
// anything is sent.
//
// A recorded currency is sent as recorded: currency is a parameter of
// Stripe's create-refund API (stripe-mock accepts it next to charge and
// amount), and the key's first use carried it, so dropping it would make
// Stripe refuse the key as reused with other parameters. Whether it matches
// the charge's is for the caller to compare in the answer.
func (c *Client) CreateRefund(ctx context.Context, key string, request json.RawMessage) (*reconcile.Made, error) {
	if err := checkKey(opRedeliver, key); err != nil {
		return nil, err
	}
	body, err := refundForm(key, request)
	if err != nil {
		return nil, &reconcile.ProviderError{Op: opRedeliver, Message: err.Error()}
	}
	return c.write(ctx, opRedeliver, "/v1/refunds", key, body)
}

// FindPayment looks up the payment intents whose metadata[effect_key] is
// effectKey with Stripe's search API. It returns nil, nil when there is
// none; when there are several, the earliest that succeeded, else the
// latest. Any failure is ErrUnavailable: a lookup that fails is no answer.
func (c *Client) FindPayment(ctx context.Context, effectKey string) (*reconcile.Made, error) {
	q := url.Values{"query": {SearchQuery(effectKey)}, "limit": {"100"}}
	var best *reconcile.Made
	var bestAt int64
	for {
		body, _, err := c.call(ctx, opSearch, http.MethodGet, "/v1/payment_intents/search?"+encode(q), "", "")
		if err != nil {
			return nil, err
		}
		var page struct {
			Data     []json.RawMessage `json:"data"`
			HasMore  bool              `json:"has_more"`
			NextPage *string           `json:"next_page"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, unreadable(opSearch, reconcile.ErrUnavailable, err)
		}
		for _, raw := range page.Data {
			m, o, err := made(raw, nil)
			if err != nil {
				return nil, unreadable(opSearch, reconcile.ErrUnavailable, err)
			}
			if m.EffectKey == effectKey && (best == nil || better(m, o.Created, best, bestAt)) {
				best, bestAt = m, o.Created
			}
		}
		if !page.HasMore || page.NextPage == nil || *page.NextPage == "" {
			return best, nil
		}
		q.Set("page", *page.NextPage)
	}
}

// better reports whether payment a, created at aAt, is a better answer to
// "what did this key make" than b: one that succeeded over one that did
// not, then the earliest success (the original; later ones are
// duplicates), or the latest attempt when none succeeded. Ids break ties.
func better(a *reconcile.Made, aAt int64, b *reconcile.Made, bAt int64) bool {
	as, bs := a.Status == "succeeded", b.Status == "succeeded"
	switch {
	case as != bs:
		return as
	case aAt != bAt && as:
		return aAt < bAt
	case aAt != bAt:
		return aAt > bAt
	}
	return a.ID < b.ID
}

// SearchQuery is the search query that finds a payment intent by its
// metadata[effect_key]. The key is quoted for Stripe's search query
// language: a backslash escapes quotes and backslashes inside the value.
func SearchQuery(effectKey string) string {
	return `metadata['effect_key']:'` + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(effectKey) + `'`
}

// FindRefund lists the refunds of target, a charge (ch_, py_) or a payment
// intent (pi_), page by page, and returns the one whose
// metadata[effect_key] is key, or nil, nil. An empty target is refused
// before anything is sent; any other failure is ErrUnavailable.
func (c *Client) FindRefund(ctx context.Context, target, key string) (*reconcile.Made, error) {
	q := url.Values{}
	switch {
	case target == "":
		return nil, &reconcile.ProviderError{Op: opList, Message: "no charge or payment intent to list the refunds of"}
	case strings.HasPrefix(target, "pi_"):
		q.Set("payment_intent", target)
	default:
		q.Set("charge", target)
	}
	var found *reconcile.Made
	err := c.listRefunds(ctx, q, func(m *reconcile.Made) bool {
		if m.EffectKey == key {
			found = m
		}
		return found == nil
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}

// listRefunds lists the refunds that match q, newest first as Stripe lists
// them, following every page, and gives each to visit until it returns
// false.
func (c *Client) listRefunds(ctx context.Context, q url.Values, visit func(*reconcile.Made) bool) error {
	q.Set("limit", "100")
	for {
		body, _, err := c.call(ctx, opList, http.MethodGet, "/v1/refunds?"+encode(q), "", "")
		if err != nil {
			return err
		}
		var page struct {
			Data    []json.RawMessage `json:"data"`
			HasMore bool              `json:"has_more"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return unreadable(opList, reconcile.ErrUnavailable, err)
		}
		var last string
		for _, raw := range page.Data {
			m, _, err := made(raw, nil)
			if err != nil {
				return unreadable(opList, reconcile.ErrUnavailable, err)
			}
			if !visit(m) {
				return nil
			}
			last = m.ID
		}
		if !page.HasMore || last == "" {
			return nil
		}
		q.Set("starting_after", last)
	}
}

// write POSTs a form under an idempotency key and reads what it made.
func (c *Client) write(ctx context.Context, op, path, key, body string) (*reconcile.Made, error) {
	resp, header, err := c.call(ctx, op, http.MethodPost, path, body, key)
	if err != nil {
		return nil, err
	}
	m, _, err := made(resp, header)
	if err != nil {
		// It answered 2xx, so something was made, but we cannot tell what.
		return nil, unreadable(op, reconcile.ErrInDoubt, err)
	}
	return m, nil
}

// object is what we read of a payment intent or a refund.
type object struct {
	ID           string            `json:"id"`
	Object       string            `json:"object"`
	Status       string            `json:"status"`
	Amount       int64             `json:"amount"`
	Currency     string            `json:"currency"`
	Created      int64             `json:"created"`
	LatestCharge json.RawMessage   `json:"latest_charge"` // an id, an expanded charge or null
	Charge       json.RawMessage   `json:"charge"`
	Intent       json.RawMessage   `json:"payment_intent"` // a refund's: an id, expanded, or null
	Metadata     map[string]string `json:"metadata"`
}

// made reads a payment intent or refund as a Made.
func made(raw []byte, header http.Header) (*reconcile.Made, *object, error) {
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, nil, err
	}
	if o.ID == "" {
		return nil, nil, fmt.Errorf("the answer has no id")
	}
	charge, intent := o.LatestCharge, o.ID
	if o.Object == "refund" || strings.HasPrefix(o.ID, "re_") {
		charge, intent = o.Charge, refID(o.Intent)
	}
	m := &reconcile.Made{
		ID:            o.ID,
		ChargeID:      refID(charge),
		PaymentIntent: intent,
		Status:        o.Status,
		Amount:        reconcile.Money{Minor: o.Amount, Currency: strings.ToUpper(o.Currency)},
		EffectKey:     o.Metadata["effect_key"],
		Replayed:      header.Get("Idempotent-Replayed") == "true",
		Response:      json.RawMessage(bytes.Clone(raw)),
	}
	return m, &o, nil
}

// refID reads a reference to another object: its id, or the object
// expanded, or null.
func refID(raw json.RawMessage) string {
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id
	}
	var o struct {
		ID string `json:"id"`
	}
	json.Unmarshal(raw, &o)
	return o.ID
}

// checkKey refuses an idempotency key Stripe would not take, before
// anything is sent.
func checkKey(op, key string) error {
	switch {
	case strings.TrimSpace(key) == "":
		return &reconcile.ProviderError{Op: op, Message: "empty idempotency key"}
	case len(key) > 255:
		return &reconcile.ProviderError{Op: op, Message: fmt.Sprintf("idempotency key of %d bytes: Stripe takes at most 255", len(key))}
	case strings.TrimSpace(key) != key:
		return &reconcile.ProviderError{Op: op, Message: fmt.Sprintf("idempotency key %q has surrounding spaces, which would be trimmed", key)}
	}
	return nil
}
