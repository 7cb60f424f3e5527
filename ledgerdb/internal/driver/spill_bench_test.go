package driver

import (
	"fmt"
	"testing"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
)

// BenchmarkSpill is the Spill's part of a run of 200k effects: their
// records kept by the ingest (280k, as a night's report and webhook dump
// give them), added to the Spill, cut into partitions of 50k effects and
// read back.
func BenchmarkSpill(b *testing.B) {
	const n = 200_000
	at := time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC)
	effects := make([]ledgerdb.ScopedEffect, n)
	for i := range effects {
		effects[i] = ledgerdb.ScopedEffect{Effect: reconcile.Effect{Key: fmt.Sprintf("run_%07d:charge:1", i), Provider: "stripe", Step: "charge",
			Status: reconcile.StatusConfirmed, ExternalID: fmt.Sprintf("pi_%08d", i), CreatedAt: at, Request: []byte(`{"amount":3047,"currency":"eur"}`)}}
	}
	keep := func() *Keeping {
		var k Kept
		kw, err := k.Keep(&ledgerdb.IngestParams{Keep: true}, time.Microsecond)
		if err != nil {
			b.Fatal(err)
		}
		w := kw.Over(&countWriter{})
		for i := range n + n*2/5 {
			j := i % n
			if err := w.Evidence(&reconcile.Evidence{Provider: "stripe", Kind: reconcile.KindCharge, TxID: fmt.Sprintf("ch_%08d", j),
				PaymentIntent: fmt.Sprintf("pi_%08d", j), EffectKey: effects[j].Key, Amount: reconcile.Money{Minor: 3047, Currency: "EUR"},
				Time: at, Line: i + 2}); err != nil {
				b.Fatal(err)
			}
		}
		k.Done(kw, &ledgerdb.IngestResult{SourceID: 1}, nil)
		kept, _ := k.Take([]int64{1})
		return kept[0]
	}
	origin := func(int64) (string, bool, bool) { return "night.csv", false, true }
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer() // the ingest's part is not the Spill's
		kept := keep()
		b.StartTimer()
		s, err := NewSpill()
		if err != nil {
			b.Fatal(err)
		}
		for i := range effects {
			if err := s.Effect(&effects[i]); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := s.AddKept([]*Keeping{kept}, []string{string(reconcile.KindCharge)}, origin); err != nil {
			b.Fatal(err)
		}
		var sum ledgerdb.MatchSummary
		if err := s.Cut(50_000, &sum); err != nil {
			b.Fatal(err)
		}
		for i := range sum.Partitions {
			if _, err := s.Partition(i); err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
	}
}
