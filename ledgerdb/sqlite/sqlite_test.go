package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
	if _, err := db.ExecContext(ctx, `INSERT INTO source (id, hash, uri, ingested_at) VALUES (7, 'h', 's.csv', '2026-12-01T10:00:00Z');
		INSERT INTO evidence (source_id, seq, line, provider, tx_id, kind, raw_kind, amount_minor, currency, fee_minor, occurred_at,
			pending, failed, effect_key, parent_effect_key, payment_intent, parent_tx_id, description, metadata, raw)
		VALUES (7, 1, 2, 'stripe', 'ch_1', 'charge', 'charge', 1000, 'EUR', 30, '2026-12-01T10:00:00Z', 0, 0, 'r:charge:1', '', '', '',
			'Order 1', '{"order": "1"}', 'ch_1,10.00,eur'),
		(7, 3, 4, 'stripe', 'ch_3', 'charge', 'charge', 1000, 'EUR', 30, NULL, 0, 0, '', '', '', '', '', NULL, 'ch_3,10.00,eur')`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	_, ev, _, err := s.SourceGetRows(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ev {
		got = append(got, fmt.Sprintf("%s %d %q %q %v", e.TxID, e.Line, e.Description, e.Raw, e.Metadata))
	}
	want := []string{`ch_1 2 "Order 1" "ch_1,10.00,eur" map[order:1]`, `ch_3 4 "" "ch_3,10.00,eur" map[]`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("evidence after the upgrade (-want +got):\n%s", diff)
	}
}

// Not parallel: it sets a hook of the driver's.
func TestAScopeIsOneSnapshot(t *testing.T) {
	ledgerdbtest.ScopeIsOneSnapshot(t, ledgerdbtest.Driver("sqlite"))
}
