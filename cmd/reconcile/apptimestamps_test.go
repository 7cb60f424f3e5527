package main

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// An application writes its SQLite ledger the ordinary way, with plain SQL
// and CURRENT_TIMESTAMP (or its driver's own forms); a run, show and export
// read every row of it.
func TestRunReadsAnSQLiteLedgerWrittenByAnApplication(t *testing.T) {
	dir := t.TempDir()
	ledger := "sqlite:" + filepath.Join(dir, "ledger.db")
	if code, _, errOut := reconcileCmd(t, "migrate", "--ledger", ledger); code != 0 {
		t.Fatalf("migrate exited %d: %s", code, errOut)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	forms := []string{"CURRENT_TIMESTAMP", "datetime('now', '-3 days')", "'2026-11-01 10:00:00.123'", "'2026-11-01T10:00:00+01:00'",
		"'2026-11-01 09:00:00+00:00'", "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-2 days')"}
	var lines []string
	for i, form := range forms {
		key := fmt.Sprintf("app_1:charge:%d", i)
		if _, err := db.Exec(`INSERT INTO effect (key, run_id, step, provider, status, external_id, request, created_at, confirmed_at)
			VALUES (?, 'app_1', 'charge', 'stripe', 'confirmed', ?, ?, `+form+`, `+form+`)`,
			key, fmt.Sprintf("pi_%d", i), fmt.Sprintf(`{"amount": 1000, "currency": "eur", "metadata": {"effect_key": %q}}`, key)); err != nil {
			t.Fatalf("insert with %s: %v", form, err)
		}
		lines = append(lines, fmt.Sprintf("txn_%d,2026-11-01 12:00:00,ch_%d,pi_%d,ch_%d,charge,eur,10.00,0.00,10.00,,cus_%d,%s", i, i, i, i, i, key))
	}
	report := writeFile(t, "itemized.csv", "balance_transaction_id,created_utc,charge_id,payment_intent_id,source_id,reporting_category,currency,gross,fee,net,description,customer_id,payment_metadata[effect_key]\n"+
		strings.Join(lines, "\n")+"\n")
	code, out, errOut := reconcileCmd(t, "run", "--ledger", ledger, "--json", "-", report)
	if code != 0 || !strings.Contains(out, fmt.Sprintf(`"confirmed": %d`, len(forms))) && !strings.Contains(out, fmt.Sprintf(`"confirmed":%d`, len(forms))) {
		t.Fatalf("run exited %d, want 0 with %d confirmed: %s\n%s", code, len(forms), out, errOut)
	}
	if code, out, errOut := reconcileCmd(t, "show", "app_1:charge:0", "--ledger", ledger); code != 0 || !strings.Contains(out, "app_1:charge:0") {
		t.Errorf("show exited %d: %s %s", code, out, errOut)
	}
}
