package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"reconcile/job"
	"reconcile/ledgerdb/ledgerdbtest"
)

// badRows is a Stripe itemized report of two good rows and n rows whose
// amount is no number, each with a long description.
func badRows(n int) string {
	var b strings.Builder
	b.WriteString("balance_transaction_id,created_utc,source_id,reporting_category,currency,gross,fee,net,description\n")
	b.WriteString("txn_a,2026-11-01 10:00:00,ch_a,charge,eur,10.00,0.00,10.00,ok\n")
	for i := range n {
		fmt.Fprintf(&b, "txn_%d,2026-11-01 10:00:00,ch_%d,charge,eur,ten,0.00,10.00,%s\n", i, i, strings.Repeat("x", 3000))
	}
	b.WriteString("txn_b,2026-11-01 11:00:00,ch_b,charge,eur,20.00,0.00,20.00,ok\n")
	return b.String()
}

// A file of many bad rows is counted exactly and every rejected row is
// kept in the ledger, but what a result lists of them is bounded, with the
// count of the rest: a million bad rows once took gigabytes of memory.
func TestRejectedRowsAreCountedExactlyAndListedWithinABound(t *testing.T) {
	const n = job.MaxListedRejected + 500
	report := writeFile(t, "bad.itemized.csv", badRows(n))
	type listed struct {
		Inputs []struct {
			Rejected int `json:"rejected"`
		} `json:"inputs"`
		Rejected []struct {
			Line int    `json:"line"`
			Raw  string `json:"raw"`
		} `json:"rejected"`
		Unlisted int `json:"rejected_unlisted"`
	}
	check := func(what string, r *listed) {
		t.Helper()
		if len(r.Inputs) != 1 || r.Inputs[0].Rejected != n || len(r.Rejected) != job.MaxListedRejected || r.Unlisted != n-job.MaxListedRejected {
			t.Errorf("%s: %d rejected counted, %d listed, %d unlisted; want %d, %d, %d", what, r.Inputs[0].Rejected, len(r.Rejected), r.Unlisted,
				n, job.MaxListedRejected, n-job.MaxListedRejected)
		}
		if len(r.Rejected) > 0 && (r.Rejected[0].Line != 3 || len(r.Rejected[0].Raw) > job.MaxListedRaw+64) {
			t.Errorf("%s: first listed row is line %d with %d bytes of raw text, want line 3 cut to about %d", what, r.Rejected[0].Line,
				len(r.Rejected[0].Raw), job.MaxListedRaw)
		}
	}
	code, out, errOut := reconcileCmd(t, "ingest", "--check", "--json", "-", report)
	var r listed
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("ingest --check exited %d (%v): %s", code, err, errOut)
	}
	check("ingest --check", &r)

	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		path := filepath.Join(t.TempDir(), "result.json")
		if code, _, errOut := reconcileCmd(t, "run", "--ledger", l.URL, "--json", path, report); code != exitPerson { // two unexpected charges
			t.Fatalf("run exited %d: %s", code, errOut)
		}
		var r listed
		if err := json.Unmarshal([]byte(readFile(t, path)), &r); err != nil {
			t.Fatal(err)
		}
		check("run", &r)
		store := l.Open(t, nil)
		srcs, err := store.SourceList(context.Background())
		if err != nil || len(srcs) != 1 {
			t.Fatalf("sources = %v, %v", srcs, err)
		}
		rows, err := store.RejectedListBySource(context.Background(), srcs[0].ID, 0)
		if err != nil || len(rows) != n || len(rows[0].Raw) < 3000 {
			t.Errorf("the ledger keeps %d rejected rows (%v), want all %d with their raw text", len(rows), err, n)
		}
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
