package stripeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"reconcile"
)

// RetrieveCharge retrieves a charge as the provider shows it now: what the
// job checks before it refunds a transaction or keeps one. id is a charge
// (ch_, or py_ for Stripe's non-card charges), read with
// GET /v1/charges/{id}?expand[]=payment_intent, or a payment intent (pi_),
// read with GET /v1/payment_intents/{id}?expand[]=latest_charge and
// answered with its latest charge. Response is the body of that retrieval.
//
// The effect key is the charge's metadata[effect_key], else its payment
// intent's: Stripe copies an intent's metadata to its charge once, when it
// is confirmed, so a key set on the intent later is only there. When some of
// the charge is refunded, its refunds are listed into Refunds, newest first.
//
// Errors: an id of any other shape is refused before anything is sent
// (Err nil); a charge or payment intent that does not exist (404
// resource_missing), or a payment intent without a charge, is ErrNotFound;
// any other failure (timeout, 5xx, 429, an unreadable answer, a failed
// listing of the refunds) is ErrUnavailable.
func (c *Client) RetrieveCharge(ctx context.Context, id string) (*reconcile.Charge, error) {
	if !plainID(id) {
		return nil, &reconcile.ProviderError{Op: opGetCharge, Message: fmt.Sprintf("%q is not a charge (ch_, py_) or payment intent (pi_) id", id)}
	}
	if strings.HasPrefix(id, "pi_") {
		return c.chargeOfIntent(ctx, id)
	}
	body, err := c.get(ctx, opGetCharge, "/v1/charges/"+id, "payment_intent")
	if err != nil {
		return nil, err
	}
	return c.readCharge(ctx, body, body, nil)
}

// chargeOfIntent retrieves a payment intent with its latest charge.
func (c *Client) chargeOfIntent(ctx context.Context, id string) (*reconcile.Charge, error) {
	body, err := c.get(ctx, opGetIntent, "/v1/payment_intents/"+id, "latest_charge")
	if err != nil {
		return nil, err
	}
	var pi intentMeta
	if err := json.Unmarshal(body, &pi); err != nil {
		return nil, unreadable(opGetIntent, reconcile.ErrUnavailable, err)
	}
	latest := bytes.TrimSpace(pi.LatestCharge)
	switch {
	case len(latest) == 0 || string(latest) == "null":
		return nil, &reconcile.ProviderError{Op: opGetIntent,
			Message: fmt.Sprintf("payment intent %s (%s) has no charge", id, pi.Status), Err: reconcile.ErrNotFound}
	case latest[0] == '"':
		// Not expanded (a provider that ignores expand): read the charge.
		ch := refID(latest)
		if !plainID(ch) {
			return nil, unreadable(opGetIntent, reconcile.ErrUnavailable, fmt.Errorf("latest_charge %s", latest))
		}
		if body, err = c.get(ctx, opGetCharge, "/v1/charges/"+ch, ""); err != nil {
			return nil, notFoundIsUnavailable(err)
		}
		return c.readCharge(ctx, body, body, &pi)
	}
	return c.readCharge(ctx, latest, body, &pi)
}

// intentMeta is what we read of a payment intent for its charge.
type intentMeta struct {
	ID           string            `json:"id"`
	Status       string            `json:"status"`
	LatestCharge json.RawMessage   `json:"latest_charge"`
	Metadata     map[string]string `json:"metadata"`
}

// chargeJSON is what we read of a charge.
type chargeJSON struct {
	ID             string            `json:"id"`
	Amount         int64             `json:"amount"`
	AmountRefunded int64             `json:"amount_refunded"`
	Disputed       bool              `json:"disputed"`
	Currency       string            `json:"currency"`
	Status         string            `json:"status"`
	Livemode       bool              `json:"livemode"`
	Metadata       map[string]string `json:"metadata"`
	PaymentIntent  json.RawMessage   `json:"payment_intent"` // an id, expanded, or null
}

// readCharge reads raw, a charge, as a Charge answered by response. pi is
// its payment intent when the caller has it; otherwise the charge's
// expanded one is used, or, when the effect key is needed and the intent
// was not expanded, it is retrieved.
func (c *Client) readCharge(ctx context.Context, raw, response []byte, pi *intentMeta) (*reconcile.Charge, error) {
	var o chargeJSON
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, unreadable(opGetCharge, reconcile.ErrUnavailable, err)
	}
	if o.ID == "" {
		return nil, unreadable(opGetCharge, reconcile.ErrUnavailable, errors.New("the charge has no id"))
	}
	ch := &reconcile.Charge{
		ID:            o.ID,
		PaymentIntent: refID(o.PaymentIntent),
		Amount:        reconcile.Money{Minor: o.Amount, Currency: strings.ToUpper(o.Currency)},
		Refunded:      o.AmountRefunded,
		Disputed:      o.Disputed,
		Status:        o.Status,
		EffectKey:     o.Metadata["effect_key"],
		Livemode:      o.Livemode,
		Response:      json.RawMessage(bytes.Clone(response)),
	}
	if ch.PaymentIntent == "" && pi != nil {
		ch.PaymentIntent = pi.ID
	}
	if ch.EffectKey == "" && ch.PaymentIntent != "" {
		if pi == nil {
			pi = &intentMeta{}
			if bytes.HasPrefix(bytes.TrimSpace(o.PaymentIntent), []byte("{")) {
				json.Unmarshal(o.PaymentIntent, pi) // an id was read from it, so it is an object
			} else if err := c.getInto(ctx, opGetIntent, "/v1/payment_intents/"+ch.PaymentIntent, pi); err != nil {
				// The charge exists; what is missing is its key.
				return nil, notFoundIsUnavailable(err)
			}
		}
		ch.EffectKey = pi.Metadata["effect_key"]
	}
	if ch.Refunded > 0 {
		err := c.listRefunds(ctx, url.Values{"charge": {ch.ID}}, func(m *reconcile.Made) bool {
			ch.Refunds = append(ch.Refunds, *m)
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return ch, nil
}

// get retrieves one object, expanding expand when it is not empty.
func (c *Client) get(ctx context.Context, op, path, expand string) ([]byte, error) {
	if expand != "" {
		path += "?" + encode(url.Values{"expand[]": {expand}})
	}
	body, _, err := c.call(ctx, op, http.MethodGet, path, "", "")
	return body, err
}

// getInto retrieves one object into v.
func (c *Client) getInto(ctx context.Context, op, path string, v any) error {
	body, err := c.get(ctx, op, path, "")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return unreadable(op, reconcile.ErrUnavailable, err)
	}
	return nil
}

// notFoundIsUnavailable turns a secondary retrieval's ErrNotFound into
// ErrUnavailable: the object asked for was found, and an error saying it
// was not would mislead.
func notFoundIsUnavailable(err error) error {
	var pe *reconcile.ProviderError
	if errors.As(err, &pe) && errors.Is(pe.Err, reconcile.ErrNotFound) {
		pe.Err = reconcile.ErrUnavailable
	}
	return err
}

// plainID reports whether id is a charge or payment intent id made only of
// the characters Stripe's ids use, so that it is safe in a URL path.
func plainID(id string) bool {
	rest, ok := strings.CutPrefix(id, "ch_")
	if !ok {
		rest, ok = strings.CutPrefix(id, "py_")
	}
	if !ok {
		rest, ok = strings.CutPrefix(id, "pi_")
	}
	if !ok || rest == "" {
		return false
	}
	for _, r := range rest {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}
