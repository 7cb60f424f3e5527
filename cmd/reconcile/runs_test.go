package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
)

// `reconcile runs` lists the runs newest first, with what each found and
// how it exited, as its JSON result says; a run still running and one that
// failed are listed with what is known of them (null where nothing is).
// `export --run latest` takes the newest run that finished.
func TestRunsListsTheLatestRunsAndExportTakesTheLatest(t *testing.T) {
	t.Parallel()
	l := ledgerdbtest.New(t, "sqlite")
	seedLedger(t, l.URL)
	dir := t.TempDir()
	input := writeFile(t, "2026-11-01.itemized.csv", settlement)
	type night struct {
		code   int
		result runResult
		atRisk map[string]int64
	}
	var nights []night
	for i := range 2 {
		path := filepath.Join(dir, "night"+string(rune('1'+i))+".json")
		code, _, errOut := reconcileCmd(t, "run", "--ledger", l.URL, "--json", path, input)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("run %d = %d, no result: %v\n%s", i, code, err, errOut)
		}
		var n night
		n.code = code
		var money struct {
			AtRisk map[string]int64 `json:"money_at_risk"`
		}
		if err := json.Unmarshal(b, &n.result); err != nil || json.Unmarshal(b, &money) != nil {
			t.Fatal(err)
		}
		n.atRisk = money.AtRisk
		nights = append(nights, n)
	}

	latest := filepath.Join(dir, "latest.json")
	exportLatest := func() (int, string, string) {
		os.Remove(latest)
		code, _, errOut := reconcileCmd(t, "export", "--run", "latest", "--json", latest, "--ledger", l.URL)
		b, _ := os.ReadFile(latest)
		var r runResult
		json.Unmarshal(b, &r)
		return code, r.RunID, errOut
	}
	if code, id, errOut := exportLatest(); code != 0 || id != nights[1].result.RunID {
		t.Errorf("export --run latest = %d, run %q; want the second night's %s\n%s", code, id, nights[1].result.RunID, errOut)
	}

	ctx := context.Background()
	store := l.Open(t, nil)
	if _, err := store.RunStart(ctx, &ledgerdb.StartRunParams{ID: "rec_failed", Args: json.RawMessage(`{"apply": true}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RunFinish(ctx, &ledgerdb.FinishRunParams{ID: "rec_failed", Status: reconcile.RunStatusFailed}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RunStart(ctx, &ledgerdb.StartRunParams{ID: "rec_running", Args: json.RawMessage(`{"apply": false}`)}); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := reconcileCmd(t, "runs", "--json", "-", "--ledger", l.URL)
	if code != 0 {
		t.Fatalf("runs --json - = %d\n%s", code, errOut)
	}
	var list struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("runs --json - printed %s: %v", out, err)
	}
	type row struct {
		ID, Status     string
		Exit           any
		Finished       bool
		Counts, AtRisk any
		Applied        any
	}
	var got []row
	for _, r := range list.Runs {
		got = append(got, row{ID: r["run_id"].(string), Status: r["status"].(string), Exit: r["exit_status"], Finished: r["finished_at"] != nil,
			Counts: r["counts"], AtRisk: r["money_at_risk"], Applied: r["applied"]})
		if _, ok := r["finished_at"]; !ok {
			t.Errorf("run %v has no finished_at member: an unset time is null, not left out", r["run_id"])
		}
	}
	asJSON := func(v any) any { // as the list decodes it
		b, _ := json.Marshal(v)
		var out any
		json.Unmarshal(b, &out)
		return out
	}
	want := []row{
		{ID: "rec_running", Status: "running", Exit: nil, Finished: false, Applied: false},
		{ID: "rec_failed", Status: "failed", Exit: float64(exitFailure), Finished: true, Applied: true},
	}
	for i := 1; i >= 0; i-- {
		n := nights[i]
		want = append(want, row{ID: n.result.RunID, Status: "succeeded", Exit: float64(n.code), Finished: true,
			Counts: asJSON(n.result.Counts), AtRisk: asJSON(n.atRisk), Applied: false})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs --json (-want +got):\n%s", diff)
	}

	code, out, _ = reconcileCmd(t, "runs", "--limit", "3", "--ledger", l.URL)
	for _, s := range []string{"rec_running", "rec_failed", nights[1].result.RunID, "mismatched", "EUR"} {
		if code != 0 || !strings.Contains(out, s) {
			t.Errorf("runs --limit 3 = %d, lacks %q:\n%s", code, s, out)
		}
	}
	if strings.Contains(out, nights[0].result.RunID) {
		t.Errorf("runs --limit 3 lists the fourth newest run %s:\n%s", nights[0].result.RunID, out)
	}
	if code, _, _ := reconcileCmd(t, "runs", "--limit", "0", "--ledger", l.URL); code != exitUsage {
		t.Errorf("runs --limit 0 = %d, want a usage error", code)
	}
	// The newest run that finished failed: it has no result, and export
	// says so rather than export an older run as the latest.
	if code, _, errOut := exportLatest(); code != exitUsage || !strings.Contains(errOut, "rec_failed") {
		t.Errorf("export --run latest with the newest finished run failed = %d, %q; want a usage error naming rec_failed", code, errOut)
	}
}
