package ledgerdbtest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

// ScopeIsOneSnapshot checks, on the driver behind open, that the effects
// another run closes while a run's PartitionMatch plans its reads (after
// it looked for closed effects, before it read the scope) stay in that
// run's scope when its evidence names them: on a ledger with no closed
// effect yet, two runs at once on the same report made one of them call
// every charge the other had just confirmed unexpected. It sets
// driver.ScopeRead, so it must not run beside another test of the
// package: call it from a test that is not parallel.
func ScopeIsOneSnapshot(t *testing.T, open Opener) {
	fake := NewClock()
	store, another := open(t, fake.Now)
	e := &env{t: t, ctx: context.Background(), clock: fake, store: store, another: another}
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	keys := []string{"r:charge:1", "r:charge:2"}
	var evs []reconcile.Evidence
	var done []reconcile.Discrepancy
	for i, key := range keys {
		if err := store.EffectLoad(e.ctx, []reconcile.Effect{charge(key, "stripe", "charge", reconcile.StatusConfirmed, "ch_"+key, t0)}); err != nil {
			t.Fatal(err)
		}
		x := reconcile.Evidence{Provider: "stripe", TxID: "ch_" + key, EffectKey: key, Kind: reconcile.KindCharge, RawKind: "charge",
			Amount: reconcile.Money{Minor: 1000, Currency: "EUR"}, Time: t0.Add(time.Duration(i) * time.Minute)}
		evs = append(evs, x)
		done = append(done, reconcile.Discrepancy{Class: reconcile.ClassConfirmed, EffectKey: key, Provider: "stripe", Currency: "EUR",
			ExpectedMinor: 1000, ObservedMinor: 1000, Transactions: []reconcile.Transaction{{Provider: "stripe", ID: x.TxID, Kind: reconcile.KindCharge}}})
	}
	source := e.ingestEvidence("h_report", "report.csv", evs)
	other := another()
	var once sync.Once
	driver.ScopeRead = func() {
		once.Do(func() { // the other run, on the same report, records its confirmations
			if _, err := other.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_other", Discrepancies: done}); err != nil {
				t.Error(err)
			}
		})
	}
	defer func() { driver.ScopeRead = nil }()
	if got := e.scope(source); !slices.Equal(got, keys) {
		t.Errorf("scope = %q, want %q: the effects the other run closed meanwhile, which this run's evidence names", got, keys)
	}
	driver.ScopeRead = nil
	if got := e.scope(); len(got) != 0 {
		t.Errorf("scope without the report = %q, want none: the other run closed them", got)
	}
}
