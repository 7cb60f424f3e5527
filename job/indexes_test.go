package job

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"reconcile/clock"
	"reconcile/ingest"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
)

// nothingDeferred fails unless the ledger holds no deferred index: a
// store defers them for a huge input unless they are deferred already.
func nothingDeferred(t *testing.T, store ledgerdb.Store) {
	t.Helper()
	ctx := context.Background()
	if ok, err := store.IndexesDefer(ctx, 1<<40); err != nil || !ok {
		t.Fatalf("indexes left deferred (IndexesDefer = %v, %v)", ok, err)
	}
	if _, err := store.IndexesBuild(ctx); err != nil {
		t.Fatal(err)
	}
}

// A run whose ingest defers the indexes and then fails, on an input that
// cannot be read, builds them again before it returns.
func TestARunThatFailsLeavesNoIndexDeferred(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		fake := clock.NewFake(t0)
		store := l.Open(t, fake.Now)
		// Large enough for the two inputs to defer the indexes of an empty
		// ledger (driver.BuildIndexesAfter).
		bad := filepath.Join(t.TempDir(), "notes.csv")
		if err := os.WriteFile(bad, []byte("what,is,this\n"+strings.Repeat("1,2,3\n", 100)), 0o644); err != nil {
			t.Fatal(err)
		}
		srcs, err := ingest.Expand(context.Background(), []string{bad}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		j := &Job{Store: store, Clock: fake, Owner: "test"}
		if _, err := j.Run(context.Background(), &RunParams{Sources: append(itemizedSource(t), srcs...), Options: &ingest.Options{},
			Actions: actionsFor(time.Hour)}); err == nil {
			t.Fatal("a run with an unreadable input succeeded")
		}
		nothingDeferred(t, store)
	})
}

// Indexes left deferred by a process that died are built by the next run.
func TestTheNextRunBuildsTheIndexesADeadOneDeferred(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		fake := clock.NewFake(t0)
		store := l.Open(t, fake.Now)
		if ok, err := l.Open(t, fake.Now).IndexesDefer(context.Background(), 1<<30); err != nil || !ok {
			t.Fatalf("IndexesDefer = %v, %v", ok, err)
		}
		j := &Job{Store: store, Clock: fake, Owner: "test"}
		if _, err := j.Run(context.Background(), &RunParams{Sources: itemizedSource(t), Options: &ingest.Options{}, Actions: actionsFor(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		nothingDeferred(t, store)
	})
}
