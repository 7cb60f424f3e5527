package main

import (
	"path/filepath"
	"strings"
	"testing"

	"reconcile/ledgerdb/ledgerdbtest"
)

// A duration flag that makes no sense is a usage error that names it,
// before anything is taken: `--lease 0` once took the run lease with no
// deadline and panicked holding it, and every later run was skipped.
func TestBadDurationsAreUsageErrors(t *testing.T) {
	l := ledgerdbtest.New(t, "sqlite")
	l.Open(t, nil) // migrated
	report := writeFile(t, "itemized.csv", "balance_transaction_id,created_utc,source_id,reporting_category,currency,gross,fee,net\n")
	for _, flag := range []string{"--lease=0", "--lease=-1m", "--provider-timeout=0", "--lag=-1h",
		"--grace=-1m", "--deferred-page-after=-1h"} {
		code, _, errOut := reconcileCmd(t, "run", "--ledger", l.URL, flag, report)
		name, _, _ := strings.Cut(flag, "=")
		if code != exitUsage || !strings.Contains(errOut, name) {
			t.Errorf("run %s = exit %d (%q), want %d naming the flag", flag, code, errOut, exitUsage)
		}
	}
	// The lease is still free: a run with sound flags is not skipped.
	code, out, errOut := reconcileCmd(t, "run", "--ledger", l.URL, "--json", filepath.Join(t.TempDir(), "r.json"), report)
	if code != 0 || strings.Contains(errOut, "run lease") {
		t.Errorf("a sound run after them = exit %d: %s%s", code, out, errOut)
	}
}
