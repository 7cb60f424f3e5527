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

// Every record of a run names it, and the run ends with one structured
// record of what it found and how it exits; --findings-exit-code 0 makes
// "needs a person" exit 0, still said.
func TestRunRecordsNameTheRunAndEndWithItsVerdict(t *testing.T) {
	ledger := migratedSQLite(t)
	report := writeFile(t, "itemized.csv", "balance_transaction_id,created_utc,source_id,reporting_category,currency,gross,fee,net\n"+
		"txn_1,2026-11-01 10:00:00,ch_u,charge,eur,50.00,0.00,50.00\n")
	code, _, errOut := reconcileCmd(t, "--log-format", "json", "run", "--findings-exit-code", "0", "--ledger", ledger, report)
	if code != 0 {
		t.Errorf("exit %d with --findings-exit-code 0, want 0: %s", code, errOut)
	}
	var finished map[string]any
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if rec["run_id"] == nil {
			t.Errorf("a record without run_id: %q", line)
		}
		if rec["msg"] == "run finished" {
			finished = rec
		}
	}
	if finished == nil || finished["exit"] != float64(0) || finished["needs_person"] != true || finished["counts"] == nil {
		t.Errorf("run finished record = %v, want counts, needs_person and exit 0", finished)
	}
	if code, _, _ := reconcileCmd(t, "run", "--findings-exit-code", "2", "--ledger", ledger, report); code != exitUsage {
		t.Errorf("--findings-exit-code 2 = exit %d, want a usage error", code)
	}
}
