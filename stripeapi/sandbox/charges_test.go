package sandbox_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"reconcile"
	"reconcile/stripeapi/sandbox"
)

func TestGetChargeAnswersTheChargeWithItsIntentOnRequest(t *testing.T) {
	_, base := start(t, sandbox.Options{})
	pi := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1000", "eur", "k1"))
	ch := pi.str("latest_charge")

	a := do(t, "GET", base+"/v1/charges/"+ch, "", nil)
	if a.status != 200 || a.str("id") != ch || a.str("object") != "charge" || a.str("payment_intent") != pi.str("id") ||
		a.body["amount"] != 1000.0 || a.body["amount_refunded"] != 0.0 || a.str("currency") != "eur" || a.str("status") != "succeeded" ||
		a.body["livemode"] != false || a.str("metadata", "effect_key") != "k1" {
		t.Errorf("GET charge = %d %s", a.status, a.raw)
	}
	for _, name := range []string{"expand[]", "expand[0]"} {
		a := do(t, "GET", base+"/v1/charges/"+ch, "", url.Values{name: {"payment_intent"}})
		if a.status != 200 || a.str("payment_intent", "id") != pi.str("id") || a.str("payment_intent", "object") != "payment_intent" ||
			a.str("payment_intent", "metadata", "effect_key") != "k1" {
			t.Errorf("GET charge with %s=payment_intent = %d %s, want the intent inline", name, a.status, a.raw)
		}
	}
	if a := do(t, "GET", base+"/v1/charges/"+ch, "", url.Values{"expand[]": {"customer"}}); a.status != 400 || a.str("error", "type") != "invalid_request_error" {
		t.Errorf("GET charge with expand[]=customer = %d %s, want 400", a.status, a.raw)
	}
	a = do(t, "GET", base+"/v1/charges/ch_nope", "", nil)
	if a.status != 404 || a.str("error", "type") != "invalid_request_error" || a.str("error", "code") != "resource_missing" ||
		a.str("error", "message") != "No such charge: 'ch_nope'" || a.str("error", "param") != "id" {
		t.Errorf("GET unknown charge = %d %s, want Stripe's 404 resource_missing", a.status, a.raw)
	}
}

func TestGetPaymentIntentExpandsItsLatestCharge(t *testing.T) {
	_, base := start(t, sandbox.Options{})
	pi := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1000", "eur", "k1"))
	id, ch := pi.str("id"), pi.str("latest_charge")
	if a := do(t, "GET", base+"/v1/payment_intents/"+id, "", nil); a.str("latest_charge") != ch {
		t.Errorf("GET intent = %s, want latest_charge %s", a.raw, ch)
	}
	a := do(t, "GET", base+"/v1/payment_intents/"+id, "", url.Values{"expand[]": {"latest_charge"}})
	if a.status != 200 || a.str("latest_charge", "id") != ch || a.str("latest_charge", "object") != "charge" || a.str("latest_charge", "payment_intent") != id {
		t.Errorf("GET intent with expand[]=latest_charge = %d %s, want the charge inline", a.status, a.raw)
	}
	open := do(t, "POST", base+"/v1/payment_intents", "k2", url.Values{"amount": {"500"}, "currency": {"eur"}})
	if a := do(t, "GET", base+"/v1/payment_intents/"+open.str("id"), "", url.Values{"expand[]": {"latest_charge"}}); a.status != 200 || a.body["latest_charge"] != nil {
		t.Errorf("GET unconfirmed intent with expand = %d %s, want latest_charge null", a.status, a.raw)
	}
}

func TestLivemodeIsOnEveryObjectAndEvent(t *testing.T) {
	for _, live := range []bool{false, true} {
		s, base := start(t, sandbox.Options{Livemode: live})
		pi := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1000", "eur", "k1"))
		do(t, "POST", base+"/v1/refunds", "r1", url.Values{"charge": {pi.str("latest_charge")}, "amount": {"100"}})
		for _, a := range []answer{
			pi,
			do(t, "GET", base+"/v1/payment_intents/"+pi.str("id"), "", url.Values{"expand[]": {"latest_charge"}}),
			do(t, "GET", base+"/v1/charges/"+pi.str("latest_charge"), "", url.Values{"expand[]": {"payment_intent"}}),
		} {
			inline, _ := a.body["latest_charge"].(map[string]any)
			if inline == nil {
				inline, _ = a.body["payment_intent"].(map[string]any)
			}
			if a.body["livemode"] != live || (a.str("object") != "payment_intent" && inline == nil) || (inline != nil && inline["livemode"] != live) {
				t.Errorf("Livemode %v: %s", live, a.raw)
			}
		}
		search := do(t, "GET", base+"/v1/payment_intents/search", "", url.Values{"query": {"status:'succeeded'"}})
		if data, _ := search.body["data"].([]any); len(data) != 1 || data[0].(map[string]any)["livemode"] != live {
			t.Errorf("Livemode %v: search = %s", live, search.raw)
		}
		var buf bytes.Buffer
		s.ExportEvents(&buf)
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 4 {
			t.Fatalf("%d events, want 4", len(lines))
		}
		for _, line := range lines {
			var ev struct {
				Type     string `json:"type"`
				Livemode *bool  `json:"livemode"`
				Data     struct {
					Object map[string]any `json:"object"`
				} `json:"data"`
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Livemode == nil || *ev.Livemode != live {
				t.Errorf("Livemode %v: event %s", live, line)
			}
			if obj := ev.Data.Object; obj["object"] != "refund" && obj["livemode"] != live {
				t.Errorf("Livemode %v: %s's object says livemode %v", live, ev.Type, obj["livemode"])
			}
		}
	}
}

func TestFaultsArmedOverHTTPHitChargeRetrievals(t *testing.T) {
	_, base := start(t, sandbox.Options{})
	pi := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1000", "eur", "k1"))
	ch := pi.str("latest_charge")
	if code := arm(t, base, `{"op":"get_charge","kind":"error_500","times":1}`); code != 204 {
		t.Fatalf("arming a fault on get_charge = %d, want 204", code)
	}
	if a := do(t, "GET", base+"/v1/payment_intents/"+pi.str("id"), "", nil); a.status != 200 {
		t.Errorf("a get_charge fault hit a payment intent retrieval: %d", a.status)
	}
	if a := do(t, "GET", base+"/v1/charges/"+ch, "", nil); a.status != 500 || a.str("error", "type") != "api_error" {
		t.Errorf("GET charge with an error_500 fault = %d %s, want 500", a.status, a.raw)
	}
	if a := do(t, "GET", base+"/v1/charges/"+ch, "", nil); a.status != 200 {
		t.Errorf("GET charge after the fault's one hit = %d, want 200", a.status)
	}
	if code := arm(t, base, `{"op":"get_charge","kind":"unavailable"}`); code != 204 {
		t.Fatalf("arming = %d", code)
	}
	if a := do(t, "GET", base+"/v1/charges/"+ch, "", nil); a.status != 503 {
		t.Errorf("GET charge with an unavailable fault = %d, want 503", a.status)
	}
}

func TestPartialAndKeylessRefundsUpdateTheCharge(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	pi := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1000", "eur", "k1"))
	ch := pi.str("latest_charge")
	do(t, "POST", base+"/v1/refunds", "r1", url.Values{"charge": {ch}, "amount": {"300"}})
	if a := do(t, "GET", base+"/v1/charges/"+ch, "", nil); a.body["amount_refunded"] != 300.0 || a.body["refunded"] != false {
		t.Errorf("after a partial refund = %s, want amount_refunded 300, refunded false", a.raw)
	}
	// A person refunding the rest in the dashboard: no Idempotency-Key.
	for range 2 {
		hand := do(t, "POST", base+"/v1/refunds", "", url.Values{"charge": {ch}, "amount": {"350"}})
		if hand.status != 200 || hand.body["amount"] != 350.0 || hand.str("id") == "" {
			t.Errorf("refund without a key = %d %s", hand.status, hand.raw)
		}
	}
	if a := do(t, "GET", base+"/v1/charges/"+ch, "", nil); a.body["amount_refunded"] != 1000.0 || a.body["refunded"] != true {
		t.Errorf("after refunds of all of it = %s, want amount_refunded 1000, refunded true", a.raw)
	}
	rs := s.Refunds()
	if len(rs) != 3 || rs[0].Key != "r1" || rs[1].Key != "" || rs[2].Key != "" || rs[1].ID == rs[2].ID {
		t.Errorf("refunds = %+v, want r1 and two keyless ones", rs)
	}
	var buf bytes.Buffer
	s.ExportEvents(&buf)
	if n := strings.Count(buf.String(), `"idempotency_key":null`); n != 4 {
		t.Errorf("%d events without an idempotency key, want 4 (refund.created and charge.refunded twice)", n)
	}
}

func TestRefundByHand(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	pi := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1000", "eur", "k1"))
	ch := pi.str("latest_charge")
	part, err := s.RefundByHand(ch, 250)
	if err != nil || part.Amount != 250 || part.Charge != ch || part.PaymentIntent != pi.str("id") || part.Key != "" || len(part.Metadata) != 0 {
		t.Errorf("RefundByHand(250) = %+v, %v", part, err)
	}
	rest, err := s.RefundByHand(ch, 0)
	if err != nil || rest.Amount != 750 {
		t.Errorf("RefundByHand(0) = %+v, %v, want the 750 left", rest, err)
	}
	if p := s.Payments()[0]; p.Refunded != 1000 {
		t.Errorf("payment refunded %d, want 1000", p.Refunded)
	}
	for _, tc := range []struct {
		charge string
		amount int64
	}{{ch, 1}, {"ch_nope", 1}, {ch, -1}} {
		if rf, err := s.RefundByHand(tc.charge, tc.amount); err == nil {
			t.Errorf("RefundByHand(%s, %d) = %+v, want an error", tc.charge, tc.amount, rf)
		}
	}
	if n := len(s.Refunds()); n != 2 {
		t.Errorf("sandbox made %d refunds, want 2", n)
	}
}

func TestSetIntentMetadataLeavesTheChargeAsConfirmed(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	pi := do(t, "POST", base+"/v1/payment_intents", "k1", charge("1000", "eur", "k1"))
	if err := s.SetIntentMetadata(pi.str("id"), map[string]string{"effect_key": "", "order": "A-1"}); err != nil {
		t.Fatal(err)
	}
	a := do(t, "GET", base+"/v1/charges/"+pi.str("latest_charge"), "", url.Values{"expand[]": {"payment_intent"}})
	if a.str("metadata", "effect_key") != "k1" || a.str("payment_intent", "metadata", "effect_key") != "" || a.str("payment_intent", "metadata", "order") != "A-1" {
		t.Errorf("after SetIntentMetadata = %s, want the charge's effect_key kept and the intent's unset", a.raw)
	}
	if err := s.SetIntentMetadata("pi_nope", map[string]string{"a": "b"}); err == nil {
		t.Error("SetIntentMetadata of an unknown intent: no error")
	}
}

// A charge its cardholder's bank took back shows disputed, cannot be
// refunded, and the itemized report lists the withdrawal, which our own
// ingest reads as a dispute of that charge.
func TestADisputedChargeCannotBeRefundedAndIsReported(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	pi := do(t, "POST", base+"/v1/payment_intents", "k1", charge("2500", "eur", "run_1:charge:0"))
	ch := pi.str("latest_charge")
	du, err := s.Dispute(ch)
	if err != nil {
		t.Fatal(err)
	}
	if a := do(t, "GET", base+"/v1/charges/"+ch, "", nil); a.body["disputed"] != true {
		t.Errorf("a disputed charge = %s, want disputed true", a.raw)
	}
	if a := do(t, "POST", base+"/v1/refunds", "r1", url.Values{"charge": {ch}}); a.status != 400 || !strings.Contains(a.raw, "charge_disputed") {
		t.Errorf("refund of a disputed charge = %d %s, want 400 charge_disputed", a.status, a.raw)
	}
	if _, err := s.Dispute(ch); err == nil {
		t.Error("a charge disputed twice")
	}
	var buf bytes.Buffer
	if err := s.ExportItemized(&buf); err != nil {
		t.Fatal(err)
	}
	got := itemized(t, buf.Bytes())
	if len(got.evidence) != 2 || len(got.rejected) > 0 {
		t.Fatalf("evidence %+v, rejected %q; want the charge and its dispute:\n%s", got.evidence, got.rejected, buf.String())
	}
	if e := got.evidence[1]; e.Kind != reconcile.KindDispute || e.TxID != du || e.ParentTxID != ch || e.Amount.Minor != -2500 {
		t.Errorf("the dispute row = %+v, want the withdrawal of %s as %s", e, ch, du)
	}
}

// A payment whose card wants its holder to authenticate waits for them:
// the intent answers requires_action, and nothing is charged.
func TestAPaymentThatWantsAuthenticationChargesNothing(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	f := charge("2500", "eur", "run_1:charge:0")
	f.Set("payment_method", "pm_card_authenticationRequired")
	a := do(t, "POST", base+"/v1/payment_intents", "k1", f)
	if a.status != 200 || a.str("status") != "requires_action" || a.body["latest_charge"] != nil {
		t.Errorf("payment = %d %s, want requires_action and no charge", a.status, a.raw)
	}
	if p := s.Payments(); len(p) != 1 || p[0].ChargeID != "" {
		t.Errorf("the sandbox holds %+v, want one intent and no charge", p)
	}
}

// A bank debit is processing, its charge pending, until its bank settles
// it or returns it; a returned debit's charge fails, cannot be refunded,
// and the itemized report gives its money back (charge_failure), which
// our ingest reads as the charge's failure.
func TestABankDebitIsProcessingUntilItSettlesOrIsReturned(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	debit := func(key string) (pi, ch string) {
		f := charge("2500", "eur", key)
		f.Set("payment_method", "pm_sepa_debit")
		a := do(t, "POST", base+"/v1/payment_intents", key, f)
		c := do(t, "GET", base+"/v1/charges/"+a.str("latest_charge"), "", nil)
		if a.status != 200 || a.str("status") != "processing" || a.body["amount_received"] != 0.0 || c.str("status") != "pending" || c.body["paid"] != false {
			t.Fatalf("debit = %d %s, charge %s; want processing, nothing received, its charge pending", a.status, a.raw, c.raw)
		}
		return a.str("id"), a.str("latest_charge")
	}
	paid, _ := debit("run_1:charge:0")
	returned, ch := debit("run_1:charge:1")
	if err := s.Settle(paid); err != nil {
		t.Fatal(err)
	}
	if err := s.Return(returned); err != nil {
		t.Fatal(err)
	}
	if err := s.Return(returned); err == nil {
		t.Error("a debit returned twice, want an error")
	}
	if a := do(t, "GET", base+"/v1/payment_intents/"+paid, "", nil); a.str("status") != "succeeded" || a.body["amount_received"] != 2500.0 {
		t.Errorf("settled debit = %s, want succeeded", a.raw)
	}
	if a := do(t, "GET", base+"/v1/payment_intents/"+returned, "", nil); a.str("status") != "requires_payment_method" {
		t.Errorf("returned debit = %s, want requires_payment_method", a.raw)
	}
	if c := do(t, "GET", base+"/v1/charges/"+ch, "", nil); c.str("status") != "failed" || c.body["paid"] != false {
		t.Errorf("returned debit's charge = %s, want failed", c.raw)
	}
	if a := do(t, "POST", base+"/v1/refunds", "r1", url.Values{"charge": {ch}}); a.status != 400 || !strings.Contains(a.raw, "charge_failed") {
		t.Errorf("refund of a failed charge = %d %s, want refused", a.status, a.raw)
	}
	var buf bytes.Buffer
	if err := s.ExportItemized(&buf); err != nil {
		t.Fatal(err)
	}
	got := itemized(t, buf.Bytes())
	if len(got.evidence) != 3 || len(got.rejected) > 0 {
		t.Fatalf("evidence %+v, rejected %q; want the two charges and a failure:\n%s", got.evidence, got.rejected, buf.String())
	}
	if e := got.evidence[2]; e.Kind != reconcile.KindCharge || !e.Failed || e.TxID != ch || e.Amount.Minor != -2500 {
		t.Errorf("the failure row = %+v, want %s failed", e, ch)
	}
}

// A refund the customer's bank cannot take fails: its money is the
// charge's again, and the itemized report takes it back into the balance
// (refund_failure), which our ingest reads as the refund's failure.
func TestARefundThatFailsGivesTheMoneyBack(t *testing.T) {
	s, base := start(t, sandbox.Options{})
	ch := do(t, "POST", base+"/v1/payment_intents", "k1", charge("2500", "eur", "run_1:charge:0")).str("latest_charge")
	re := do(t, "POST", base+"/v1/refunds", "r1", url.Values{"charge": {ch}, "amount": {"1000"}}).str("id")
	if err := s.FailRefund(re); err != nil {
		t.Fatal(err)
	}
	if err := s.FailRefund(re); err == nil {
		t.Error("a refund failed twice, want an error")
	}
	if c := do(t, "GET", base+"/v1/charges/"+ch, "", nil); c.body["amount_refunded"] != 0.0 {
		t.Errorf("charge after its refund failed = %s, want nothing refunded", c.raw)
	}
	if rs := s.Refunds(); len(rs) != 1 || rs[0].Status != "failed" {
		t.Errorf("refunds %+v, want one failed", rs)
	}
	var buf bytes.Buffer
	if err := s.ExportItemized(&buf); err != nil {
		t.Fatal(err)
	}
	got := itemized(t, buf.Bytes())
	if len(got.evidence) != 3 || len(got.rejected) > 0 {
		t.Fatalf("evidence %+v, rejected %q; want the charge, the refund and its failure:\n%s", got.evidence, got.rejected, buf.String())
	}
	if e := got.evidence[2]; e.Kind != reconcile.KindRefund || !e.Failed || e.TxID != re || e.Amount.Minor != 1000 {
		t.Errorf("the failure row = %+v, want %s failed", e, re)
	}
}
