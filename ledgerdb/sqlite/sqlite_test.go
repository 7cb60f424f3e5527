package sqlite_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/ledgerdb/sqlite"
)

func open(t *testing.T, path string, now func() time.Time) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, ledgerdb.Config{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestLedger(t *testing.T) { ledgerdbtest.Exercise(t, ledgerdbtest.Driver("sqlite")) }

// Four handles migrate one new file at once: all succeed, and the
// migrations are applied once.
func TestConcurrentMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		applied int
	)
	for range 4 {
		s := open(t, path, time.Now)
		wg.Go(func() {
			ms, err := s.SchemaMigrate(context.Background())
			if err != nil {
				t.Errorf("Migrate: %v", err)
			}
			mu.Lock()
			applied += len(ms)
			mu.Unlock()
		})
	}
	wg.Wait()
	ms, err := open(t, path, time.Now).SchemaMigrate(context.Background())
	if err != nil || len(ms) != 0 {
		t.Fatalf("Migrate after the concurrent ones = %d, %v; want nothing left to apply", len(ms), err)
	}
	all, err := open(t, filepath.Join(t.TempDir(), "fresh.db"), time.Now).SchemaMigrate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if applied != len(all) {
		t.Errorf("4 concurrent migrations applied %d migrations in all, want each of the %d once", applied, len(all))
	}
}
