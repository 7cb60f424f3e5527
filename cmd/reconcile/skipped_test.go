package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"reconcile/job"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/report"
)

// A run that finds the run lease held by another run does nothing and
// exits 0, as before; but its --json FILE now says it was skipped, by whom
// and until when, instead of keeping the last night's result there, which
// would read as tonight's.
func TestSkippedRunSaysSoInItsJSONResult(t *testing.T) {
	t.Parallel()
	l := ledgerdbtest.New(t, "sqlite")
	ctx := context.Background()
	holder := "cron-host:4242:rec_20261129T043000Z_aaaaaa"
	if _, err := l.Open(t, nil).ClaimAcquire(ctx, &ledgerdb.ClaimParams{Key: job.RunLeaseKey, Owner: holder, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	input := writeFile(t, "x.itemized.csv", settlement)
	resultPath := filepath.Join(t.TempDir(), "result.json")
	old := `{"run_id": "rec_20261128T043000Z_bbbbbb", "as_of": "2026-11-28T00:00:00Z", "counts": {"missing": 4}}`
	if err := os.WriteFile(resultPath, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := reconcileCmd(t, "run", "--ledger", l.URL, "--json", resultPath, input)
	if code != exitOK || out != "" || !strings.Contains(errOut, "this run is skipped") {
		t.Fatalf("run --json FILE with the lease held = exit %d, stdout %q; want exit 0, nothing on stdout, the skip logged\n%s", code, out, errOut)
	}
	b, _ := os.ReadFile(resultPath)
	if err := report.CheckContract(bytes.NewReader(b)); err != nil {
		t.Errorf("the skipped result breaks the contract: %v\n%s", err, b)
	}
	var res report.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("--json FILE holds %s: %v", b, err)
	}
	until := time.Until(res.LeaseUntil)
	if !res.Skipped || res.LeaseHolder != holder || until < 50*time.Minute || until > time.Hour || res.RunID == "rec_20261128T043000Z_bbbbbb" ||
		res.Counts["missing"] != 0 || len(res.Discrepancies) != 0 {
		t.Errorf("--json FILE = %s; want skipped, held by %s for about an hour more, this run's id, nothing found", b, holder)
	}
	// Standard output stays empty for a skipped run, as before: scripts
	// that read --json - take that for a skip.
	if code, out, _ := reconcileCmd(t, "run", "--ledger", l.URL, "--json", "-", input); code != exitOK || out != "" {
		t.Errorf("run --json - with the lease held = exit %d, stdout %q; want exit 0 and nothing", code, out)
	}
	if srcs, _ := l.Open(t, nil).SourceList(ctx); len(srcs) != 0 {
		t.Errorf("a skipped run ingested %d sources, want none", len(srcs))
	}
}
