package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
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
