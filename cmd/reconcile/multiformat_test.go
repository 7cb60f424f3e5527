package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/fixtures"
	"reconcile/ledgerdb/ledgerdbtest"
)

// A world whose effects live at Stripe, Adyen, PayPal and a bank, in
// several currencies, written in each provider's own format with its rows
// and files shuffled, loaded into a fresh ledger and reconciled by
// `reconcile run`: the JSON result counts every class as the world was
// built, and lists every discrepancy with its class, effect key, provider,
// currency, amounts, transactions, compensations and the refunds and
// chargebacks of its charge that no effect made. The Adyen reports give
// their zones only in their own TimeZone column: no flag says more.
func TestMultiFormatWorldRunsAsBuilt(t *testing.T) {
	ledgerdbtest.Each(t, testMultiFormatWorld)
}

func testMultiFormatWorld(t *testing.T, l *ledgerdbtest.Ledger) {
	const seed = 11
	w := fixtures.NewMultiWorld(400, fixtures.CaseRates, seed)
	if err := l.Open(t, nil).EffectLoad(context.Background(), w.Effects); err != nil {
		t.Fatal(err)
	}
	paths, err := w.WriteFiles(t.TempDir(), seed)
	if err != nil {
		t.Fatal(err)
	}
	rand.New(rand.NewPCG(seed, 1)).Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	code, r, errOut := runJSON(t, append([]string{"--ledger", l.URL, "--lag", w.Lag.String()}, paths...)...)
	if code != exitPerson {
		t.Fatalf("exit %d, want %d (mismatched, escalated and unexpected need a person): %s", code, exitPerson, errOut)
	}

	want := map[string]int{}
	for _, c := range reconcile.Classes {
		want[string(c)] = w.Want[c]
	}
	if diff := cmp.Diff(want, r.Counts); diff != "" {
		t.Errorf("counts (-built +run):\n%s", diff)
	}
	if r.OutOfScope != w.OutOfScope {
		t.Errorf("out_of_scope = %d, want %d", r.OutOfScope, w.OutOfScope)
	}
	if len(r.Inputs) != len(paths) || len(r.Rejected) != w.Rejected {
		t.Errorf("%d inputs and %d rejected rows, want %d and %d", len(r.Inputs), len(r.Rejected), len(paths), w.Rejected)
	}

	line := func(class, key, provider, cur string, expected, observed int64, txs, comps, related []string) string {
		slices.Sort(txs)
		slices.Sort(comps)
		slices.Sort(related)
		return fmt.Sprintf("%s %s %s %s %d %d %v %v related %v", class, key, provider, cur, expected, observed, txs, comps, related)
	}
	var built, got []string
	for _, f := range w.Findings {
		if f.Class != reconcile.ClassConfirmed {
			built = append(built, line(string(f.Class), f.EffectKey, f.Provider, f.Currency, f.ExpectedMinor, f.ObservedMinor,
				slices.Clone(f.Transactions), slices.Clone(f.Compensate), slices.Clone(f.Related)))
		}
	}
	for _, d := range r.Discrepancies {
		var comps []string
		for _, a := range d.Actions {
			if a.Kind == string(reconcile.ActionCompensate) {
				comps = append(comps, a.Target)
			}
		}
		got = append(got, line(d.Class, d.EffectKey, d.Provider, d.Currency, d.ExpectedMinor, d.ObservedMinor, d.Transactions, comps, d.Related))
	}
	slices.Sort(built)
	slices.Sort(got)
	if diff := cmp.Diff(built, got); diff != "" {
		t.Errorf("discrepancies (-built +run):\n%s", diff)
	}
}
