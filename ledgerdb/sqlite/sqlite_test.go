package sqlite_test

import (
	"context"
	"database/sql"
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

// A ledger of the release before evidence_detail keeps every record's
// description, metadata and raw row through the upgrade.
func TestAnUpgradeKeepsTheDetailsOfEveryRecord(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := open(t, path, time.Now)
	if err := s.MigrateBefore(ctx, 9); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, ledgerdbtest.OldEvidence); err != nil {
		t.Fatal(err)
	}
	ledgerdbtest.UpgradeKeepsEveryRecordsDetails(t, s)
}

// Not parallel: it sets a hook of the driver's.
func TestAScopeIsOneSnapshot(t *testing.T) {
	ledgerdbtest.ScopeIsOneSnapshot(t, ledgerdbtest.Driver("sqlite"))
}

// Not parallel: it sets a hook of the driver's.
func TestDeferredIndexesAreBuiltBeforeTheReadsThatLookThemUp(t *testing.T) {
	ledgerdbtest.IndexesBuiltBeforeLookups(t, ledgerdbtest.Driver("sqlite"))
}
