package sandbox_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	stripeingest "reconcile/ingest/stripe"
	"reconcile/stripeapi/sandbox"
)

// sink keeps what a parser sends.
// itemized is what our ingest reads of an itemized report.
func itemized(t *testing.T, report []byte) *sink {
	t.Helper()
	var got sink
	if err := stripeingest.ParseItemized(context.Background(), bytes.NewReader(report), stripeingest.ItemizedOptions{}, &got); err != nil {
		t.Fatal(err)
	}
	return &got
}

type sink struct {
	evidence []*reconcile.Evidence
	rejected []string
	ignored  []string
}

func (s *sink) Evidence(e *reconcile.Evidence) error {
	s.evidence = append(s.evidence, e)
	return nil
}

func (s *sink) Reject(line int, raw, reason string) error {
	s.rejected = append(s.rejected, reason+": "+raw)
	return nil
}

func (s *sink) Ignore(line int, reason string) error {
	s.ignored = append(s.ignored, reason)
	return nil
}

// seen is what a test checks of one evidence record.
type seen struct {
	Kind                       reconcile.Kind
	TxID, ParentTxID           string
	Amount                     reconcile.Money
	EffectKey, ParentEffectKey string
}

// activity makes payments in a two-, a zero- and a three-decimal currency,
// a partial refund that compensates one and a full refund of another, and
// returns what the exports must describe.
func activity(t *testing.T, opt sandbox.Options) (*sandbox.Server, string, []seen) {
	s, base := start(t, opt)
	eur := charge("1420", "EUR", "run_1:charge:0")
	eur.Set("description", "Order 1001, two items")
	eur.Set("customer", "cus_1")
	eur.Set("metadata[order_ref]", "A-1")
	pe := do(t, "POST", base+"/v1/payment_intents", "run_1:charge:0", eur)
	pj := do(t, "POST", base+"/v1/payment_intents", "run_1:charge:1", charge("5000", "jpy", "run_1:charge:1"))
	pk := do(t, "POST", base+"/v1/payment_intents", "run_1:charge:2", charge("12345", "kwd", "run_1:charge:2"))
	do(t, "POST", base+"/v1/payment_intents", "run_1:charge:3", url.Values{"amount": {"700"}, "currency": {"eur"}}) // not confirmed: no charge
	comp := "run_1:charge:0:compensate:" + pe.str("latest_charge")
	re := do(t, "POST", base+"/v1/refunds", comp, url.Values{"charge": {pe.str("latest_charge")}, "amount": {"420"},
		"metadata[effect_key]": {comp}, "metadata[compensates]": {"run_1:charge:0"}})
	rj := do(t, "POST", base+"/v1/refunds", "run_1:refund:0", url.Values{"payment_intent": {pj.str("id")}, "metadata[effect_key]": {"run_1:refund:0"}})
	for _, a := range []answer{pe, pj, pk, re, rj} {
		if a.status != 200 {
			t.Fatalf("setting up: %d %s", a.status, a.raw)
		}
	}
	want := []seen{
		{reconcile.KindCharge, pe.str("latest_charge"), "", reconcile.Money{Minor: 1420, Currency: "EUR"}, "run_1:charge:0", ""},
		{reconcile.KindCharge, pj.str("latest_charge"), "", reconcile.Money{Minor: 5000, Currency: "JPY"}, "run_1:charge:1", ""},
		{reconcile.KindCharge, pk.str("latest_charge"), "", reconcile.Money{Minor: 12345, Currency: "KWD"}, "run_1:charge:2", ""},
		{reconcile.KindRefund, re.str("id"), pe.str("latest_charge"), reconcile.Money{Minor: -420, Currency: "EUR"}, comp, "run_1:charge:0"},
		{reconcile.KindRefund, rj.str("id"), pj.str("latest_charge"), reconcile.Money{Minor: -5000, Currency: "JPY"}, "run_1:refund:0", "run_1:charge:1"},
	}
	return s, base, want
}

func TestExportItemizedParsesAsAStripeReport(t *testing.T) {
	s, base, want := activity(t, sandbox.Options{})
	var buf bytes.Buffer
	if err := s.ExportItemized(&buf); err != nil {
		t.Fatal(err)
	}
	if !stripeingest.DetectItemized("sandbox.itemized.csv", buf.Bytes()) {
		t.Errorf("the export is not detected as an itemized report:\n%s", buf.String())
	}
	got := itemized(t, buf.Bytes())
	if len(got.rejected) > 0 || len(got.ignored) > 0 {
		t.Errorf("rejected %q, ignored %q, want every row as evidence:\n%s", got.rejected, got.ignored, buf.String())
	}
	if diff := cmp.Diff(want, project(got.evidence)); diff != "" {
		t.Errorf("itemized evidence (-want +got):\n%s\n%s", diff, buf.String())
	}
	if e := got.evidence[0]; e.Description != "Order 1001, two items" || e.Metadata["payment_metadata[order_ref]"] != "A-1" || e.PaymentIntent == "" {
		t.Errorf("first row = %+v, want its description, its other metadata and its payment intent", e)
	}

	resp, err := http.Get(base + "/_sandbox/export/itemized")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	overHTTP, _ := io.ReadAll(resp.Body)
	if string(overHTTP) != buf.String() || !strings.Contains(resp.Header.Get("Content-Disposition"), ".itemized.") {
		t.Errorf("GET /_sandbox/export/itemized = %q (%s), want the same report named *.itemized.*", overHTTP, resp.Header.Get("Content-Disposition"))
	}
}

func TestExportEventsParsesAsAWebhookDump(t *testing.T) {
	for _, live := range []bool{false, true} {
		t.Run(map[bool]string{false: "test mode", true: "live mode"}[live], func(t *testing.T) {
			testExportEvents(t, live)
		})
	}
}

// testExportEvents checks a dump of events against what the sandbox did,
// read as the events of the mode the sandbox is in.
func testExportEvents(t *testing.T, live bool) {
	s, base, want := activity(t, sandbox.Options{Livemode: live})
	resp, err := http.Get(base + "/_sandbox/export/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dump, _ := io.ReadAll(resp.Body)
	var direct bytes.Buffer
	if err := s.ExportEvents(&direct); err != nil {
		t.Fatal(err)
	}
	if direct.String() != string(dump) {
		t.Errorf("GET /_sandbox/export/events differs from ExportEvents")
	}
	if !stripeingest.DetectEvents("sandbox.events.jsonl", dump) {
		t.Errorf("the dump is not detected as webhook events")
	}
	// Read in the other mode, every event is ignored: each says its own.
	var other sink
	if err := stripeingest.ParseEvents(context.Background(), bytes.NewReader(dump), stripeingest.EventsOptions{TestMode: live}, &other); err != nil {
		t.Fatal(err)
	}
	if len(other.evidence) > 0 || len(other.ignored) != strings.Count(string(dump), "\n") {
		t.Errorf("read as the other mode: %d evidence, %d ignored, want every event ignored", len(other.evidence), len(other.ignored))
	}
	var got sink
	if err := stripeingest.ParseEvents(context.Background(), bytes.NewReader(dump), stripeingest.EventsOptions{TestMode: !live}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.rejected) > 0 || len(got.ignored) > 0 {
		t.Errorf("rejected %q, ignored %q, want every event as evidence:\n%s", got.rejected, got.ignored, dump)
	}
	// Each charge is told twice (payment_intent.succeeded, charge.succeeded)
	// and each refund twice (refund.created, charge.refunded): the same
	// transactions, which reconcile deduplicates by id. Only
	// charge.refunded names the refunded payment's effect key.
	byTx := map[string]seen{}
	count := map[string]int{}
	for _, e := range project(got.evidence) {
		prev, ok := byTx[e.TxID]
		if e.ParentEffectKey == "" {
			e.ParentEffectKey = prev.ParentEffectKey
		}
		if ok && prev.ParentEffectKey == "" {
			prev.ParentEffectKey = e.ParentEffectKey
		}
		if ok && prev != e {
			t.Errorf("transaction %s told two ways:\n%+v\n%+v", e.TxID, prev, e)
		}
		byTx[e.TxID] = e
		count[e.TxID]++
	}
	var distinct []seen
	for _, w := range want {
		distinct = append(distinct, byTx[w.TxID])
		if count[w.TxID] != 2 {
			t.Errorf("transaction %s is in %d events, want 2", w.TxID, count[w.TxID])
		}
	}
	if diff := cmp.Diff(want, distinct); diff != "" {
		t.Errorf("event evidence (-want +got):\n%s\n%s", diff, dump)
	}
	if len(byTx) != len(want) {
		t.Errorf("events describe %d transactions, want %d", len(byTx), len(want))
	}
}

// project keeps what the tests check of each record, in a stable order:
// charges first as made, then refunds.
func project(evs []*reconcile.Evidence) []seen {
	var out []seen
	for _, e := range evs {
		out = append(out, seen{e.Kind, e.TxID, e.ParentTxID, e.Amount, e.EffectKey, e.ParentEffectKey})
	}
	slices.SortStableFunc(out, func(a, b seen) int { return strings.Compare(string(a.Kind), string(b.Kind)) })
	return out
}

// A report of a new period holds only what happened since its start.
func TestExportItemizedSinceHoldsOnlyTheNewPeriod(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	s, base := start(t, sandbox.Options{Now: func() time.Time { return now }})
	first := do(t, "POST", base+"/v1/payment_intents", "run_1:charge:0", charge("1000", "eur", "run_1:charge:0"))
	now = now.Add(24 * time.Hour)
	do(t, "POST", base+"/v1/refunds", "r:0", url.Values{"charge": {first.str("latest_charge")}, "metadata[effect_key]": {"r:0"}})
	do(t, "POST", base+"/v1/payment_intents", "run_1:charge:1", charge("2000", "eur", "run_1:charge:1"))
	var buf bytes.Buffer
	if err := s.ExportItemizedSince(&buf, now); err != nil {
		t.Fatal(err)
	}
	got := itemized(t, buf.Bytes())
	var kinds []reconcile.Kind
	for _, e := range got.evidence {
		kinds = append(kinds, e.Kind)
	}
	if diff := cmp.Diff([]reconcile.Kind{reconcile.KindCharge, reconcile.KindRefund}, kinds); diff != "" {
		t.Errorf("the new period's report (-want +got):\n%s\n%s", diff, buf.String())
	}
	resp, err := http.Get(base + "/_sandbox/export/itemized?since=" + now.Format(time.RFC3339))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if overHTTP, _ := io.ReadAll(resp.Body); string(overHTTP) != buf.String() {
		t.Errorf("?since= gives another report:\n%s", overHTTP)
	}
}
