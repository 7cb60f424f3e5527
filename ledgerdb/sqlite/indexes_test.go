package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// evidenceIndexes lists the evidence table's indexes as the schema
// defines them.
func evidenceIndexes(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name || ': ' || coalesce(sql, '') FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'evidence' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
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
// migrations made them, built by the next. A unique index (a DBA's) is
// never dropped: it enforces something.
func TestDeferredIndexesComeBackAsMigrated(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := open(t, path, time.Now)
	if _, err := s.SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE UNIQUE INDEX evidence_row ON evidence (source_id, seq)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	migrated := evidenceIndexes(t, path)
	if len(migrated) != 7 {
		t.Fatalf("evidence has %d indexes after migrating, want 6 and the unique one: %q", len(migrated), migrated)
	}
	if ok, err := s.IndexesDefer(ctx, 1<<30); err != nil || !ok {
		t.Fatalf("IndexesDefer into an empty ledger = %v, %v; want them deferred", ok, err)
	}
	if got := evidenceIndexes(t, path); len(got) != 2 {
		t.Fatalf("indexes while deferred: %q, want the primary key's and the unique one", got)
	}
	s.Close()
	if pending, err := open(t, path, time.Now).IndexesBuild(ctx); err != nil || len(pending) > 0 {
		t.Fatalf("IndexesBuild = %q, %v", pending, err)
	}
	if got := evidenceIndexes(t, path); !slices.Equal(got, migrated) {
		t.Errorf("indexes built again:\n%q\nwant\n%q", got, migrated)
	}
}
