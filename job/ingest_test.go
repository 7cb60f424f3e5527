package job

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/clock"
	"reconcile/fixtures"
	"reconcile/ingest"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
)

// sourceRows is what a ledger holds of each source, by URI.
type sourceRows struct {
	Account  reconcile.SourceAccount
	Evidence []reconcile.Evidence
	Rejected []reconcile.Rejected
}

func rowsBySource(t *testing.T, store ledgerdb.Store) map[string]sourceRows {
	t.Helper()
	ctx := context.Background()
	list, err := store.SourceList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]sourceRows{}
	for _, s := range list {
		rec, ev, rej, err := store.SourceGetRows(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		out[s.URI] = sourceRows{rec.SourceAccount, ev, rej}
	}
	return out
}

// A run writes the inputs it checked first (all but the largest) from
// what the check read, not by reading them again: what the ledger holds
// of each is what ingesting that file alone writes, its hostile lines
// rejected alike, on both ledgers and for every format; but for the
// description, metadata and raw row, which the run keeps only for the
// records its findings name.
func TestARunWritesEachInputAsItsOwnIngestDoes(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		ctx := context.Background()
		paths, err := fixtures.NewMultiWorld(200, fixtures.CaseRates, 3).WriteFiles(t.TempDir(), 5)
		if err != nil {
			t.Fatal(err)
		}
		hostile := 0
		for _, p := range paths {
			if strings.HasSuffix(p, ".jsonl") {
				f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				_, err = f.WriteString("{\"id\": \"evt_x\", \"type\": \"charge.succeeded\"\nnot json at all\n{\"id\": \"evt_y\", \"type\": \"charge.succeeded\", \"data\": {}}\n")
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					t.Fatal(err)
				}
				hostile++
			}
		}
		if hostile == 0 || len(paths) < 3 {
			t.Fatalf("the world's files %q hold no webhook dump", paths)
		}
		srcs, err := ingest.Expand(ctx, paths, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		fake := clock.NewFake(t0)
		store := l.Open(t, fake.Now)
		res, err := (&Job{Store: store, Clock: fake, Owner: "test"}).Run(ctx,
			&RunParams{Sources: srcs, Options: &ingest.Options{}, Actions: actionsFor(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		// The run keeps the description, metadata and raw row of the
		// records its findings name, and of no other.
		ids, keys := map[string]bool{}, map[string]bool{}
		for _, d := range res.Result.Discrepancies {
			keys[d.EffectKey] = d.EffectKey != ""
			for _, id := range append(d.Transactions, d.Related...) {
				ids[id] = true
			}
		}
		alone := ledgerdbtest.New(t, l.Driver).Open(t, fake.Now)
		for i, src := range srcs {
			if _, err := (&Job{Store: alone, Clock: fake}).Ingest(ctx, src, &ingest.Options{}, false, (&RejectedList{}).Collect(i)); err != nil {
				t.Fatal(err)
			}
		}
		got, want := rowsBySource(t, store), rowsBySource(t, alone)
		if len(want) != len(srcs) {
			t.Fatalf("ingested alone: %d sources of %d", len(want), len(srcs))
		}
		rejected := 0
		for _, w := range want {
			rejected += len(w.Rejected)
		}
		if rejected < 2 {
			t.Fatalf("ingested alone: %d rejected rows, want the hostile lines among them", rejected)
		}
		named := 0
		for _, w := range want {
			for i := range w.Evidence {
				if e := &w.Evidence[i]; ids[e.TxID] || keys[e.EffectKey] {
					named++
				} else {
					e.Description, e.Metadata, e.Raw = "", nil, ""
				}
			}
		}
		if named < 10 {
			t.Fatalf("%d records named by the run's %d findings", named, len(res.Result.Discrepancies))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the run's sources differ from their own ingests (-alone +run):\n%s", diff)
		}
	})
}
