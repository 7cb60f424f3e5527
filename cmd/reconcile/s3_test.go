package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"reconcile/ingest/s3test"
	"reconcile/ledgerdb"
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

// An object's content hash is known only once it has been read: the same
// content under two keys in one run is still ingested once, as the object
// listed first, on PostgreSQL, where both are written as they are read
// (the second reported as already ingested, with the first's account).
func TestRunReadsTheSameS3ContentOnceOnPostgres(t *testing.T) {
	s3test.Start(t)    // sets the environment: not parallel
	for i := range 3 { // which copy is written must not depend on which is read faster
		ledger := migratedPostgres(t)
		seedLedger(t, ledger)
		prefix := fmt.Sprintf("copies%d/", i)
		s3test.Put(t, "finance", map[string][]byte{prefix + "a.itemized.csv": []byte(settlement), prefix + "b.itemized.csv": []byte(settlement)})
		code, r, errOut := runJSON(t, "--s3-path-style", "--ledger", ledger, "s3://finance/"+prefix)
		if code != exitPerson {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if len(r.Inputs) != 2 || !strings.HasSuffix(r.Inputs[0].URI, "a.itemized.csv") || r.Inputs[0].AlreadyIngested ||
			!r.Inputs[1].AlreadyIngested || r.Inputs[0].Evidence == 0 || r.Inputs[1].Evidence != r.Inputs[0].Evidence {
			t.Fatalf("inputs %+v: want a.itemized.csv written, the copy found in the manifest with its account", r.Inputs)
		}
		store, _, err := openLedger(context.Background(), ledger, ledgerdb.Config{})
		if err != nil {
			t.Fatal(err)
		}
		srcs, err := store.SourceList(context.Background())
		store.Close()
		if err != nil || len(srcs) != 1 {
			t.Fatalf("sources = %+v, %v; want the one copy", srcs, err)
		}
	}
}
