package stripeapi

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"reconcile"
)

// The rules of Stripe's API that the actions need and that are not calls:
// what the ledger records of a compensation, how a recorded request reads,
// and which steps can be made again.

// Redelivers reports whether an effect of step can be made again: a charge
// as a payment intent, and a refund.
func (c *Client) Redelivers(step string) bool { return step == "charge" || step == "refund" }

// Redeliver makes a missing effect's work again under its own key with
// exactly its recorded request: a charge as a payment intent
// (CreatePaymentIntent), a refund as a refund (CreateRefund).
func (c *Client) Redeliver(ctx context.Context, e *reconcile.Effect) (*reconcile.Made, error) {
	switch e.Step {
	case "charge":
		return c.CreatePaymentIntent(ctx, e.Key, e.Request)
	case "refund":
		return c.CreateRefund(ctx, e.Key, e.Request)
	}
	return nil, &reconcile.ProviderError{Op: opRedeliver, Message: "no redelivery for a " + e.Step}
}

// Terms reads a recorded request, a JSON object of Stripe's parameters:
// amount, currency, and for a refund its charge, else its payment_intent.
func (c *Client) Terms(request json.RawMessage) (*reconcile.Terms, error) {
	var q struct {
		Amount        *int64 `json:"amount"`
		Currency      string `json:"currency"`
		Charge        string `json:"charge"`
		PaymentIntent string `json:"payment_intent"`
	}
	if err := json.Unmarshal(request, &q); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	return &reconcile.Terms{Amount: q.Amount, Currency: q.Currency, Target: cmp.Or(q.Charge, q.PaymentIntent)}, nil
}

// CompensationRequest is the request a compensation records as its own
// effect row, and that Refund then makes: its amount, currency, metadata
// and what it refunds, a charge or a payment intent.
func (c *Client) CompensationRequest(r *reconcile.RefundRequest) json.RawMessage {
	body := map[string]any{
		"amount":   r.Amount.Minor,
		"currency": strings.ToLower(r.Amount.Currency),
		"metadata": map[string]string{"effect_key": r.Key, "compensates": r.Compensates},
	}
	body[targetParam(r.Target)] = r.Target
	b, _ := json.Marshal(body)
	return b
}

// targetParam is the parameter a refund of id is sent in: payment_intent
// for a payment intent (pi_…), charge for anything else.
func targetParam(id string) string {
	if strings.HasPrefix(id, "pi_") {
		return "payment_intent"
	}
	return "charge"
}
