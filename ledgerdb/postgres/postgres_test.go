package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"reconcile"
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

func TestLedger(t *testing.T) { ledgerdbtest.Exercise(t, ledgerdbtest.Driver("postgres")) }

// PostgreSQL keeps a record's time to the microsecond, before 2000 as after.
func TestEvidenceTimesKeepTheirMicroseconds(t *testing.T) {
	ctx := context.Background()
	s, _ := migrated(t)
	times := []time.Time{time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC), time.Date(2026, 3, 29, 1, 30, 0, 1000, time.UTC)}
	res, err := s.SourceIngest(ctx, &ledgerdb.IngestParams{URI: "s.csv"}, func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
		for i, at := range times {
			if err := w.Evidence(&reconcile.Evidence{Provider: "stripe", TxID: fmt.Sprint("ch_", i), Kind: reconcile.KindCharge, Time: at, Line: i + 2}); err != nil {
				return nil, err
			}
		}
		return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Hash: "h", Rows: 2, Evidence: 2}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, got, _, err := s.SourceGetRows(ctx, res.SourceID)
	if err != nil || len(got) != len(times) {
		t.Fatalf("SourceGetRows = %d records, %v", len(got), err)
	}
	for i := range times {
		if !got[i].Time.Equal(times[i]) {
			t.Errorf("record %d: time %s, written %s", i, got[i].Time.Format(time.RFC3339Nano), times[i].Format(time.RFC3339Nano))
		}
	}
}

// A ledger of the release before evidence_detail keeps every record's
// description, metadata and raw row through the upgrade.
func TestAnUpgradeKeepsTheDetailsOfEveryRecord(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Schema(t)
	s := open(t, url, time.Now)
	if err := s.MigrateBefore(ctx, 17); err != nil {
		t.Fatal(err)
	}
	if _, err := connect(t, url).Exec(ctx, ledgerdbtest.OldEvidence); err != nil {
		t.Fatal(err)
	}
	ledgerdbtest.UpgradeKeepsEveryRecordsDetails(t, s)
}

// Not parallel: it sets a hook of the driver's.
func TestAScopeIsOneSnapshot(t *testing.T) {
	ledgerdbtest.ScopeIsOneSnapshot(t, ledgerdbtest.Driver("postgres"))
}

// Not parallel: it sets a hook of the driver's.
func TestDeferredIndexesAreBuiltBeforeTheReadsThatLookThemUp(t *testing.T) {
	ledgerdbtest.IndexesBuiltBeforeLookups(t, ledgerdbtest.Driver("postgres"))
}
