package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ledgerdb/ledgerdbtest"
)

// The result carries what finance ties out against the payout and the bank
// statement: each input's gross and fees per currency and kind, and the
// money of the effects the run confirmed.
func TestResultCarriesTheTieOut(t *testing.T) {
	l := ledgerdbtest.New(t, "sqlite")
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	var effects []reconcile.Effect
	for _, k := range []string{"shop:charge:1", "shop:charge:2"} {
		effects = append(effects, reconcile.Effect{Key: k, RunID: "shop", Step: "charge", Provider: "stripe", Status: reconcile.StatusConfirmed,
			Request: json.RawMessage(`{"amount": 1000, "currency": "eur"}`), CreatedAt: at, ConfirmedAt: at})
	}
	if err := l.Open(t, nil).EffectLoad(context.Background(), effects); err != nil {
		t.Fatal(err)
	}
	report := writeFile(t, "itemized.csv", "balance_transaction_id,created_utc,source_id,reporting_category,currency,gross,fee,net,payment_metadata[effect_key]\n"+
		"txn_1,2026-11-01 10:00:00,ch_1,charge,eur,10.00,0.59,9.41,shop:charge:1\n"+
		"txn_2,2026-11-01 10:00:00,ch_2,charge,eur,10.00,0.59,9.41,shop:charge:2\n")
	code, out, errOut := reconcileCmd(t, "run", "--ledger", l.URL, "--json", "-", report)
	if code != 0 {
		t.Fatalf("run exited %d: %s", code, errOut)
	}
	type volume struct {
		Provider, Currency, Kind string
		Count                    int
		AmountMinor              int64 `json:"amount_minor"`
		FeeMinor                 int64 `json:"fee_minor"`
	}
	var r struct {
		Inputs    []struct{ Totals []volume } `json:"inputs"`
		Confirmed []volume                    `json:"confirmed"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	want := []volume{{"stripe", "EUR", "charge", 2, 2000, 118}}
	if len(r.Inputs) != 1 || !cmp.Equal(r.Inputs[0].Totals, want) {
		t.Errorf("input totals = %+v, want %+v", r.Inputs, want)
	}
	want[0].FeeMinor = 0
	if !cmp.Equal(r.Confirmed, want) {
		t.Errorf("confirmed = %+v, want %+v", r.Confirmed, want)
	}
}
