package ledgerdbtest

// The ledgers of other packages' tests: a fresh, migrated ledger on each
// driver, a SQLite file in a temporary directory and a PostgreSQL schema
// of its own (see pgtest).

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"reconcile/ledgerdb"
	"reconcile/ledgerdb/postgres"
	"reconcile/ledgerdb/postgres/pgtest"
	"reconcile/ledgerdb/sqlite"
)

// Ledger is one fresh ledger: Open gives a new handle on it (its own pool
// or connection), closed when the test ends.
type Ledger struct {
	Driver string // "sqlite" or "postgres"
	URL    string // for the command line: sqlite:PATH or postgres://...
	Open   func(t testing.TB, now func() time.Time) ledgerdb.Store
}

// Driver is the Opener of the suite on a fresh ledger of driver for each
// test, as New makes it.
func Driver(driver string) Opener {
	return func(t *testing.T, now func() time.Time) (ledgerdb.Store, func() ledgerdb.Store) {
		l := New(t, driver)
		return l.Open(t, now), func() ledgerdb.Store { return l.Open(t, now) }
	}
}

// Each runs fn as a parallel subtest on a fresh ledger of each driver.
func Each(t *testing.T, fn func(t *testing.T, l *Ledger)) {
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			fn(t, New(t, driver))
		})
	}
}

// New makes a fresh, migrated ledger on driver for t.
func New(t testing.TB, driver string) *Ledger {
	t.Helper()
	l := &Ledger{Driver: driver}
	if driver == "sqlite" {
		path := filepath.Join(t.TempDir(), "ledger.db")
		l.URL = "sqlite:" + path
		l.Open = func(t testing.TB, now func() time.Time) ledgerdb.Store {
			s, err := sqlite.Open(context.Background(), path, ledgerdb.Config{Now: now})
			return opened(t, s, err)
		}
	} else {
		l.URL = pgtest.Schema(t)
		l.Open = func(t testing.TB, now func() time.Time) ledgerdb.Store {
			s, err := postgres.Open(context.Background(), l.URL, ledgerdb.Config{Now: now})
			return opened(t, s, err)
		}
	}
	if _, err := l.Open(t, nil).SchemaMigrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l
}

func opened[S ledgerdb.Store](t testing.TB, s S, err error) ledgerdb.Store {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
