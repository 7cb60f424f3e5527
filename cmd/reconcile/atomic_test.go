package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
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
