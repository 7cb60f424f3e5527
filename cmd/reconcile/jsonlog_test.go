package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// With --log-format json every line on stderr is a JSON record, the
// closing verdict and the errors included, and durations are seconds.
func TestJSONLogsAreJSONToTheLastLine(t *testing.T) {
	ledger := migratedSQLite(t)
	report := writeFile(t, "itemized.csv", "balance_transaction_id,created_utc,source_id,reporting_category,currency,gross,fee,net\n"+
		"txn_1,2026-11-01 10:00:00,ch_u,charge,eur,50.00,0.00,50.00\n")
	for _, args := range [][]string{
		{"--log-format", "json", "--log-level", "debug", "run", "--ledger", ledger, report}, // unexpected money: exit 3 and a verdict
		{"--log-format", "json", "run", "--ledger", ledger, "/no/such/file.csv"},            // an unreadable input: exit 2
	} {
		code, _, errOut := reconcileCmd(t, args...)
		if code == 0 {
			t.Errorf("reconcile %q exited 0", args)
		}
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		for _, line := range lines {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Errorf("reconcile %q wrote a line that is not JSON: %q", args, line)
				continue
			}
			for k, v := range rec {
				if f, ok := v.(float64); ok && (k == "elapsed" || k == "matching") && f > 1e6 {
					t.Errorf("%s = %v: a duration in nanoseconds, want seconds", k, v)
				}
			}
		}
		var last map[string]any
		json.Unmarshal([]byte(lines[len(lines)-1]), &last)
		if last["level"] != "ERROR" || last["exit"] == nil {
			t.Errorf("reconcile %q: last record %v, want the verdict as an ERROR record with the exit status", args, last)
		}
	}
}
