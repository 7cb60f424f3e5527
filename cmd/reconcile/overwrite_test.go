package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"reconcile/ledgerdb/ledgerdbtest"
)

// `reconcile run --json *.itemized.csv` once took the first file as the
// JSON destination and overwrote it. An output never overwrites an input
// of the command, nor an existing file that is not an earlier output of
// its kind; that is a usage error, and nothing runs.
func TestOutputsNeverOverwriteInputs(t *testing.T) {
	l := ledgerdbtest.New(t, "sqlite")
	l.Open(t, nil)
	dir := t.TempDir()
	const report = "balance_transaction_id,created_utc,source_id,reporting_category,currency,gross,fee,net\n"
	a, b := filepath.Join(dir, "a.itemized.csv"), filepath.Join(dir, "b.itemized.csv")
	notes := filepath.Join(dir, "notes.json")
	for path, body := range map[string]string{a: report, b: report, notes: `["not a result"]`} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"run", "--ledger", l.URL, "--json", a, b},     // a shell glob, expanded
		{"run", "--ledger", l.URL, "--json", b, dir},   // an input of the directory given
		{"run", "--ledger", l.URL, "--json", notes, a}, // JSON, but not a result
		{"run", "--ledger", l.URL, "--xlsx", a, b},
		{"ingest", "--check", "--json", a, b},
	} {
		code, _, errOut := reconcileCmd(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "overwrite") {
			t.Errorf("reconcile %q = exit %d (%q), want %d refusing to overwrite", args, code, errOut, exitUsage)
		}
	}
	for path, body := range map[string]string{a: report, b: report, notes: `["not a result"]`} {
		if got, _ := os.ReadFile(path); string(got) != body {
			t.Errorf("%s was overwritten: %q", path, got)
		}
	}
	// An earlier result is what --json replaces.
	result := filepath.Join(dir, "result.json")
	for range 2 {
		if code, _, errOut := reconcileCmd(t, "run", "--ledger", l.URL, "--json", result, a); code != 0 {
			t.Errorf("run --json over an earlier result = exit %d: %s", code, errOut)
		}
	}
}
