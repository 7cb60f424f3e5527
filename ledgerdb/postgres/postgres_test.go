package postgres_test

import (
	"context"
	"testing"
	"time"

	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/ledgerdb/postgres"
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

func TestLedger(t *testing.T) { ledgerdbtest.Exercise(t, ledgerdbtest.Driver("postgres")) }
