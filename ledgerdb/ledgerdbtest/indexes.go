package ledgerdbtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

// IndexesBuiltBeforeLookups checks, on the driver behind open, when
// PartitionMatch has the evidence indexes that a large ingest deferred
// built (ledgerdb.MatchParams.Indexes): before it reads, when its reads
// look up earlier evidence or closed effects by them, and only once it
// has read otherwise, so that a first night's run matches while they are
// built. It sets driver.ScopeRead, so it must not run beside another test
// of the package: call it from a test that is not parallel.
func IndexesBuiltBeforeLookups(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name            string
		earlier, closed bool
		want            []string
	}{
		{"a first night", false, false, []string{"scope", "indexes false", "match"}},
		{"earlier evidence", true, false, []string{"indexes true", "scope", "match"}},
		{"a closed effect and no earlier evidence", false, true, []string{"indexes true", "scope", "match"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := NewClock()
			store, another := open(t, fake.Now)
			e := &env{t: t, ctx: context.Background(), clock: fake, store: store, another: another}
			t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			effects := []reconcile.Effect{charge("r:charge:1", "stripe", "charge", reconcile.StatusConfirmed, "ch_1", t0)}
			if tc.closed {
				effects = append(effects, charge("r:charge:0", "stripe", "charge", reconcile.StatusAbandoned, "", t0))
			}
			if err := store.EffectLoad(e.ctx, effects); err != nil {
				t.Fatal(err)
			}
			tx := reconcile.Evidence{Provider: "stripe", TxID: "ch_1", EffectKey: "r:charge:1", Kind: reconcile.KindCharge, RawKind: "charge",
				Amount: reconcile.Money{Minor: 1000, Currency: "EUR"}, Time: t0}
			if tc.earlier { // ingested, its indexes built after it
				e.ingestEvidence("h_before", "before.csv", []reconcile.Evidence{tx})
			}
			if ok, err := store.IndexesDefer(e.ctx, largeInput); err != nil || !ok {
				t.Fatalf("IndexesDefer = %v, %v; want them deferred", ok, err)
			}
			tx.URI, tx.Line, tx.TxID = "tonight.csv", 2, "ch_1b"
			res, err := store.SourceIngest(e.ctx, &ledgerdb.IngestParams{URI: tx.URI}, func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
				return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Format: "test", Hash: "h_tonight", Rows: 1, Evidence: 1}}, w.Evidence(&tx)
			})
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu     sync.Mutex
				events []string
			)
			event := func(s string) {
				mu.Lock()
				defer mu.Unlock()
				if len(events) == 0 || events[len(events)-1] != s {
					events = append(events, s)
				}
			}
			driver.ScopeRead = func() { event("scope") }
			defer func() { driver.ScopeRead = nil }()
			_, err = store.PartitionMatch(e.ctx, &ledgerdb.MatchParams{RunID: "run_i", Sources: []int64{res.SourceID}, Kinds: stepKinds,
				Indexes: func(need bool) {
					event(fmt.Sprint("indexes ", need))
					if need {
						e.buildIndexes()
					}
				}},
				func(*ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
					event("match")
					return nil, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(events, tc.want) {
				t.Errorf("PartitionMatch went %q, want %q", events, tc.want)
			}
		})
	}
}
