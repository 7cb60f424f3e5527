package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"reconcile/ledgerdb/postgres/pgtest"
)

// A mistyped ledger path once created a new, empty SQLite ledger (its
// directories too) and the run reported every transaction as unexpected.
// Only the embedded default is created on first use: any other SQLite
// path that does not exist is a usage error that says how to create it,
// and nothing is created.
func TestRunNeverCreatesAnExplicitLedger(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "ledgr", "reconcile.db")
	report := writeFile(t, "itemized.csv", "balance_transaction_id,created_utc,source_id,reporting_category,currency,gross,fee,net\n")
	for _, args := range [][]string{
		{"run", "--ledger", "sqlite:" + typo, report},
		{"ingest", "--ledger", typo, report},
		{"show", "k", "--ledger", "sqlite:" + typo},
		{"escalations", "--ledger", "sqlite:" + typo},
	} {
		code, _, errOut := reconcileCmd(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "reconcile migrate --ledger") {
			t.Errorf("reconcile %q = exit %d (%q), want %d saying to run reconcile migrate", args, code, errOut, exitUsage)
		}
		if _, err := os.Stat(filepath.Dir(typo)); !os.IsNotExist(err) {
			t.Fatalf("reconcile %q created %s", args, filepath.Dir(typo))
		}
	}
	// migrate creates it; then a run uses it, and says which ledger it is.
	if code, _, errOut := reconcileCmd(t, "migrate", "--ledger", "sqlite:"+typo); code != 0 {
		t.Fatalf("migrate exited %d: %s", code, errOut)
	}
	code, _, errOut := reconcileCmd(t, "run", "--ledger", "sqlite:"+typo, report)
	if first, _, _ := strings.Cut(errOut, "\n"); code != 0 || !strings.Contains(first, typo) {
		t.Errorf("run after migrate = exit %d, first log line %q, want 0 naming the ledger", code, first)
	}
}

// migratedSQLite returns the URL of a new SQLite ledger, made as a person
// makes one: with `reconcile migrate`.
// migratedPostgres returns a migrated PostgreSQL ledger in a schema of its own.
func migratedPostgres(t *testing.T) string {
	t.Helper()
	url := pgtest.Schema(t)
	if code, _, errOut := reconcileCmd(t, "migrate", "--ledger", url); code != 0 {
		t.Fatalf("migrate exited %d: %s", code, errOut)
	}
	return url
}

func migratedSQLite(t *testing.T) string {
	t.Helper()
	url := "sqlite:" + filepath.Join(t.TempDir(), "ledger.db")
	if code, _, errOut := reconcileCmd(t, "migrate", "--ledger", url); code != 0 {
		t.Fatalf("migrate exited %d: %s", code, errOut)
	}
	return url
}
