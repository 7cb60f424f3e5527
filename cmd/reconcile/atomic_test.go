package main

import (
	"database/sql"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"reconcile/ledgerdb/ledgerdbtest"
)

// A result is written whole or not at all: a write that fails half way (a
// full disk) leaves the file that was there, never a truncated result that
// looks complete, and no temporary file behind.
func TestOutputsAreWrittenAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "result.json")
	if err := os.WriteFile(path, []byte(`{"run_id": "yesterday"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	full := errors.New("no space left on device")
	err := writeWith(path, func(w io.Writer) error {
		w.Write([]byte(`{"run_id": "tonight", "counts": {`))
		return full
	})
	if !errors.Is(err, full) {
		t.Errorf("writeWith = %v, want the write's error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"run_id": "yesterday"}` {
		t.Errorf("after a failed write the file holds %q, want what was there", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory, want only the result: %v", len(entries), entries)
	}
	if err := writeWith(path, func(w io.Writer) error { _, err := w.Write([]byte(`{"run_id": "tonight"}`)); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"run_id": "tonight"}` {
		t.Errorf("after a write the file holds %q", b)
	}
}

// A file written whole still honours the umask, as os.Create does: the
// finance group reads the workbook that a 0027 umask makes 0640.
func TestOutputsHonourTheUmask(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "discrepancies.xlsx")
	if err := writeWith(path, func(w io.Writer) error { _, err := w.Write([]byte("x")); return err }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v (%v), want 0640", fi.Mode().Perm(), err)
	}
}

// A run whose end the ledger does not record leaves its --json FILE as it
// was, and nothing beside it: the result, written while the ledger records
// the run's end, is put in its place once that is recorded. The ledger
// refuses through a trigger, as a full disk or a lost connection would.
func TestAResultIsKeptOnlyOnceTheRunsEndIsRecorded(t *testing.T) {
	t.Parallel()
	l := ledgerdbtest.New(t, "sqlite")
	db, err := sql.Open("sqlite", strings.TrimPrefix(l.URL, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TRIGGER run_end_refused BEFORE UPDATE ON run WHEN NEW.status = 'succeeded'
		BEGIN SELECT RAISE(ABORT, 'the ledger refuses the end of the run'); END`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "result.json")
	old := `{"run_id": "rec_20261128T043000Z_bbbbbb", "counts": {"missing": 4}}`
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := reconcileCmd(t, "run", "--ledger", l.URL, "--json", path, writeFile(t, "x.itemized.csv", settlement))
	if code == exitOK || !strings.Contains(errOut, "refuses the end of the run") {
		t.Fatalf("run with its end refused = exit %d; want a failure that says why\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(path); string(b) != old {
		t.Errorf("--json FILE holds %.200s; want what was there", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory, want only the result: %v", len(entries), entries)
	}
}
