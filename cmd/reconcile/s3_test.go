package main

import (
	"strings"
	"testing"

	"reconcile/ingest/s3test"
	"reconcile/ledgerdb/ledgerdbtest"
)

// A nightly run over an S3 prefix reads only the objects that are new since
// the last run: the ones ingested before are known by their ETag.
func TestRunOverS3ReadsOnlyNewObjects(t *testing.T) {
	s3test.Start(t) // sets the environment: not parallel
	l := ledgerdbtest.New(t, "sqlite")
	second := strings.Replace(settlement, "txn_8,2026-11-03", "txn_9,2026-11-03", 1)
	s3test.Put(t, "finance", map[string][]byte{"stripe/2026-11-01.itemized.csv": []byte(settlement)})
	run := func() runResult {
		t.Helper()
		code, r, errOut := runJSON(t, "--s3-path-style", "--ledger", l.URL, "s3://finance/stripe/")
		if code != 0 && code != exitPerson {
			t.Fatalf("run over S3 = %d: %s", code, errOut)
		}
		return r
	}
	first := run()
	if len(first.Inputs) != 1 || first.Inputs[0].AlreadyIngested || first.Inputs[0].Rows == 0 {
		t.Fatalf("first run inputs = %+v, want one object read", first.Inputs)
	}
	s3test.Put(t, "finance", map[string][]byte{"stripe/2026-11-02.itemized.csv": []byte(second)})
	next := run()
	if len(next.Inputs) != 2 {
		t.Fatalf("second run inputs = %+v, want both objects listed", next.Inputs)
	}
	for _, in := range next.Inputs {
		isNew := strings.HasSuffix(in.URI, "2026-11-02.itemized.csv")
		if in.AlreadyIngested == isNew {
			t.Errorf("input %s: already ingested %v, want only the new object read", in.URI, in.AlreadyIngested)
		}
	}
}
