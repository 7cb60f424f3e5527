package postgres_test

import (
	"context"
	"testing"
	"time"

	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/ledgerdb/postgres"
	"reconcile/ledgerdb/postgres/pgtest"
)

func open(t *testing.T, url string, now func() time.Time) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, ledgerdb.Config{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestLedger(t *testing.T) {
	ledgerdbtest.Exercise(t, func(t *testing.T, now func() time.Time) (ledgerdb.Store, func() ledgerdb.Store) {
		url := pgtest.Schema(t)
		s := open(t, url, now)
		if _, err := s.SchemaMigrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s, func() ledgerdb.Store { return open(t, url, now) }
	})
}
