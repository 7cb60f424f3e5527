package sqlite_test

import (
	"context"
	"path/filepath"
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

func TestLedger(t *testing.T) {
	ledgerdbtest.Exercise(t, func(t *testing.T, now func() time.Time) (ledgerdb.Store, func() ledgerdb.Store) {
		path := filepath.Join(t.TempDir(), "ledger.db")
		s := open(t, path, now)
		if _, err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s, func() ledgerdb.Store { return open(t, path, now) }
	})
}
