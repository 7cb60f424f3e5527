package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/stripeapi"
	"reconcile/stripeapi/sandbox"
)

// shop is the demo's payment application. It charges through the sandbox
// and records each charge in the ledger before the call and confirms it
// after, as applications should, and it has the faults real ones have.
type shop struct {
	store  ledgerdb.Store
	client *stripeapi.Client
	sb     *sandbox.Server
	url    string
	// happened counts each fault, for the demo's story.
	happened map[string]int
	// inDoubt is the compensation the demo's provider will fail: the extra
	// charge of the first duplicate made by a worker that outlived its lease.
	inDoubt string
	// moved is the effect whose price the application changed after
	// recording it.
	moved string
}

// The faults of the demo's application, in the words the demo prints.
const (
	faultCrashAfterCall  = "crashed after the provider charged, before confirming in the ledger"
	faultCrashBeforeCall = "crashed after recording the charge, before calling the provider"
	faultDropRetried     = "lost the connection after the charge and retried under the same key (no harm)"
	faultStaleWorker     = "a worker outlived its lease; a second worker charged again under a fresh key"
	faultForgotKey       = "lost the connection, and the provider forgot the key before the retry"
	faultMovedPrice      = "sent another price than the one it recorded"
	faultDashboard       = "someone charged a customer by hand in the provider's dashboard"
)

// order places the i-th order of the day.
func (s *shop) order(ctx context.Context, i int) error {
	key := reconcile.EffectKey("shop_20261129", "charge", i)
	cur, amount := "eur", 1000+int64(i*137%9000)
	switch i % 3 {
	case 1:
		cur, amount = "usd", 500+int64(i*91%7000)
	case 2:
		cur, amount = "jpy", 300+int64(i*53%20000)
	}
	req := func(amount int64) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"amount": %d, "currency": %q, "customer": "cus_%04d", "payment_method": "pm_card_visa",
			"description": "Order %d", "metadata": {"effect_key": %q, "order": "SO-%05d"}}`, amount, cur, i, i, key, i))
	}
	if _, err := s.store.EffectRecord(ctx, &ledgerdb.RecordParams{Key: key, RunID: "shop_20261129", Step: "charge", Provider: "stripe", Request: req(amount)}); err != nil {
		return err
	}
	fault := ""
	switch i % 50 {
	case 7:
		fault = faultCrashAfterCall
	case 13:
		fault = faultCrashBeforeCall
	case 21:
		fault = faultDropRetried
	case 29:
		fault = faultStaleWorker
	case 37:
		fault = faultForgotKey
	case 45:
		if s.moved == "" {
			fault, s.moved = faultMovedPrice, key
		}
	}
	if fault != "" {
		s.happened[fault]++
	}
	switch fault {
	case faultCrashBeforeCall:
		return nil
	case faultDropRetried, faultForgotKey:
		s.sb.Inject(sandbox.Fault{Op: sandbox.OpCreatePaymentIntent, Key: key, Kind: sandbox.FaultDropAfter, Times: 1})
	case faultMovedPrice:
		sent := json.RawMessage(strings.Replace(string(req(amount)), fmt.Sprintf(`"amount": %d`, amount), fmt.Sprintf(`"amount": %d`, amount+500), 1))
		made, err := s.client.CreatePaymentIntent(ctx, key, sent)
		if err != nil {
			return err
		}
		_, err = s.store.EffectConfirm(ctx, &ledgerdb.ConfirmParams{Key: key, ExternalID: made.ID, Response: made.Response})
		return err
	}
	made, err := s.client.CreatePaymentIntent(ctx, key, req(amount))
	if errors.Is(err, reconcile.ErrInDoubt) { // the application retries under the same key
		if fault == faultForgotKey {
			s.sb.ForgetKeys()
		}
		made, err = s.client.CreatePaymentIntent(ctx, key, req(amount))
	}
	if err != nil {
		return err
	}
	if fault == faultCrashAfterCall {
		return nil
	}
	if _, err := s.store.EffectConfirm(ctx, &ledgerdb.ConfirmParams{Key: key, ExternalID: made.ID, Response: made.Response}); err != nil {
		return err
	}
	if fault == faultStaleWorker {
		extra, err := s.charge(ctx, "worker-b:"+key, amount, cur, key)
		if err != nil {
			return err
		}
		if s.inDoubt == "" {
			s.inDoubt = reconcile.CompensationKey(key, extra)
		}
	}
	return nil
}

// charge posts a payment the way a careless caller does: with its own key,
// whatever the metadata says. It returns the charge's id.
func (s *shop) charge(ctx context.Context, idemKey string, amount int64, cur, effectKey string) (string, error) {
	form := url.Values{"amount": {fmt.Sprint(amount)}, "currency": {cur}, "confirm": {"true"}, "payment_method": {"pm_card_visa"}}
	if effectKey != "" {
		form.Set("metadata[effect_key]", effectKey)
	}
	var out struct {
		LatestCharge string `json:"latest_charge"`
	}
	return out.LatestCharge, s.post(ctx, "/v1/payment_intents", idemKey, form, &out)
}

// refundByHand is what a person does in the dashboard: refund a charge,
// noting which compensation it stands for.
func (s *shop) refundByHand(ctx context.Context, compensation, charge string) (string, error) {
	form := url.Values{"charge": {charge}, "metadata[effect_key]": {compensation}, "metadata[note]": {"refunded by hand"}}
	var out struct{ ID string }
	return out.ID, s.post(ctx, "/v1/refunds", "dashboard:"+compensation, form, &out)
}

func (s *shop) post(ctx context.Context, path, idemKey string, form url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+path, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer sk_test_shop")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", idemKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: HTTP %d", path, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
