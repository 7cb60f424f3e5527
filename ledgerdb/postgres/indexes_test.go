package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/postgres"
	"reconcile/ledgerdb/postgres/pgtest"
)

// migrated opens a store on a fresh, migrated schema and gives its URL.
func migrated(t *testing.T) (*postgres.Store, string) {
	t.Helper()
	url := pgtest.Schema(t)
	s := open(t, url, time.Now)
	if _, err := s.SchemaMigrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, url
}

// evidenceIndexes lists the evidence table's indexes as the catalog
// defines them, with whether each is valid.
func evidenceIndexes(t *testing.T, url string) []string {
	t.Helper()
	c := connect(t, url)
	rows, err := c.Query(context.Background(), `SELECT pg_get_indexdef(i.indexrelid) || CASE WHEN i.indisvalid THEN '' ELSE ' (invalid)' END
FROM pg_index i WHERE i.indrelid = 'evidence'::regclass ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var defs []string
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			t.Fatal(err)
		}
		defs = append(defs, d)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return defs
}

// Indexes deferred by a process that then dies come back as the
// migrations made them, whichever process builds them, and two that
// build at once both succeed. A unique index (a DBA's) is never dropped:
// it enforces something.
func TestDeferredIndexesComeBackAsMigrated(t *testing.T) {
	ctx := context.Background()
	s, url := migrated(t)
	if _, err := connect(t, url).Exec(ctx, `CREATE UNIQUE INDEX evidence_row ON evidence (source_id, seq)`); err != nil {
		t.Fatal(err)
	}
	migrated := evidenceIndexes(t, url)
	if len(migrated) != 4 {
		t.Fatalf("evidence has %d indexes after migrating, want 3 and the unique one: %q", len(migrated), migrated)
	}
	for round := range 2 {
		if ok, err := s.IndexesDefer(ctx, 1<<30); err != nil || !ok {
			t.Fatalf("IndexesDefer into an empty ledger = %v, %v; want them deferred", ok, err)
		}
		// The unique index enforces something; the BRIN index costs next
		// to nothing to keep up and a scan of the table to build.
		if got := evidenceIndexes(t, url); len(got) != 2 || !strings.Contains(got[0], "INDEX evidence_source ON") || !strings.Contains(got[0], "USING brin") ||
			!strings.Contains(got[1], "UNIQUE INDEX evidence_row") {
			t.Fatalf("indexes while deferred: %q, want the unique one and the BRIN one", got)
		}
		builders := []*postgres.Store{open(t, url, time.Now), open(t, url, time.Now)}[:round+1]
		var wg sync.WaitGroup
		for _, b := range builders {
			wg.Go(func() {
				if pending, err := b.IndexesBuild(ctx); err != nil || len(pending) > 0 {
					t.Errorf("IndexesBuild = %q, %v", pending, err)
				}
			})
		}
		wg.Wait()
		if got := evidenceIndexes(t, url); !slices.Equal(got, migrated) {
			t.Errorf("round %d: indexes built again:\n%q\nwant\n%q", round, got, migrated)
		}
	}
}

// Beside a session that reads the evidence, the indexes are kept: the
// store does not wait for the table's lock.
func TestIndexesAreNotDeferredBesideAReader(t *testing.T) {
	ctx := context.Background()
	s, url := migrated(t)
	reader := connect(t, url)
	tx, err := reader.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT count(*) FROM evidence`); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if ok, err := s.IndexesDefer(wctx, 1<<30); err != nil || ok {
		t.Fatalf("IndexesDefer beside a reader = %v, %v; want them kept", ok, err)
	}
}

// The pages of a large ingest are summarized for the BRIN index over
// source_id once its deferred indexes are built, beside its run, and not
// left to the next run's reads.
func TestBuildingTheDeferredIndexesSummarizesTheNewPages(t *testing.T) {
	ctx := context.Background()
	s, url := migrated(t)
	if ok, err := s.IndexesDefer(ctx, 1<<30); err != nil || !ok {
		t.Fatalf("IndexesDefer = %v, %v", ok, err)
	}
	if _, err := s.SourceIngest(ctx, &ledgerdb.IngestParams{URI: "s.csv"}, func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
		for i := range 30000 { // a few ranges of 128 pages
			if err := w.Evidence(&reconcile.Evidence{Provider: "stripe", TxID: fmt.Sprint("ch_", i), Kind: reconcile.KindCharge, Line: i + 2}); err != nil {
				return nil, err
			}
		}
		return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Hash: "h", Rows: 30000, Evidence: 30000}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IndexesBuild(ctx); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := connect(t, url).QueryRow(ctx, `SELECT brin_summarize_new_values('evidence_source'::regclass)`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d block ranges of evidence left unsummarized after the build", left)
	}
}
