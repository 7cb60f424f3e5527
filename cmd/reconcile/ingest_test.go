package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reconcile"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile/ledgerdb"
	"reconcile/ledgerdb/postgres/pgtest"
)

const itemizedCSV = "balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,charge_id,payment_metadata[effect_key]\n" +
	"txn_1,2026-11-01 10:00:00,eur,142.00,4.26,137.74,charge,ch_1,ch_1,run_1:charge:0\n" +
	"txn_2,2026-11-01 11:00:00,jpy,1500,0,1500,charge,ch_2,ch_2,run_1:charge:1\n" +
	"txn_3,2026-11-01 12:00:00,eur,1.8137E+15,0,0,charge,ch_3,ch_3,run_1:charge:2\n"

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestIngestCheckJSON(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "nov.itemized.csv", itemizedCSV)
	code, out, errOut := reconcileCmd(t, "ingest", "--check", "--json", "-", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Inputs []struct {
			URI, Format                       string
			Rows, Evidence, Rejected, Ignored int
			Totals                            []total
		}
		Rejected []struct {
			URI    string
			Line   int
			Reason string
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not the JSON result: %v\n%s", err, out)
	}
	if len(got.Inputs) != 1 {
		t.Fatalf("inputs = %+v", got.Inputs)
	}
	in := got.Inputs[0]
	if in.URI != path || in.Format != "stripe-itemized" || in.Rows != 3 || in.Evidence != 2 || in.Rejected != 1 || in.Ignored != 0 {
		t.Errorf("input = %+v", in)
	}
	wantTotals := []total{{"EUR", "charge", 1, 14200}, {"JPY", "charge", 1, 1500}}
	if diff := cmp.Diff(wantTotals, in.Totals); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	if len(got.Rejected) != 1 || got.Rejected[0].Line != 4 || got.Rejected[0].URI != path || !strings.Contains(got.Rejected[0].Reason, "1.8137E+15") {
		t.Errorf("rejected = %+v; want line 4 naming the mangled amount", got.Rejected)
	}
}

// total is a total of the JSON result, as a consumer reads it.
type total struct {
	Currency    string `json:"currency"`
	Kind        string `json:"kind"`
	Count       int    `json:"count"`
	AmountMinor int64  `json:"amount_minor"`
}

func TestIngestCheckUnreadableInputExitsTwo(t *testing.T) {
	t.Parallel()
	good := writeFile(t, "good.csv", itemizedCSV)
	bad := writeFile(t, "bad.txt", "hello, finance\n")
	code, out, errOut := reconcileCmd(t, "ingest", "--check", bad, good)
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	if !strings.Contains(errOut, bad) || !strings.Contains(errOut, "unrecognized format") || !strings.Contains(out, good) {
		t.Errorf("stderr %q should name %s and its problem; stdout %q should still report %s", errOut, bad, out, good)
	}
	if code, _, _ := reconcileCmd(t, "ingest", "--check", filepath.Join(t.TempDir(), "missing.csv")); code != exitUsage {
		t.Errorf("a missing input: exit %d, want %d", code, exitUsage)
	}
}

func testIngestTwiceAddsNothing(t *testing.T, ledger string) {
	path := writeFile(t, "nov.itemized.csv", itemizedCSV)
	code, out, errOut := reconcileCmd(t, "ingest", "--ledger", ledger, path)
	if code != 0 || !strings.Contains(out, "stripe-itemized") {
		t.Fatalf("ingest = %d, %q, %q", code, out, errOut)
	}
	code, out, errOut = reconcileCmd(t, "ingest", "--ledger", ledger, path)
	if code != 0 || !strings.Contains(out, "already ingested") {
		t.Fatalf("second ingest = %d, %q, %q; want it skipped", code, out, errOut)
	}
	ctx := context.Background()
	store, _, err := openLedger(ctx, ledger, ledgerdb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srcs, err := store.SourceList(ctx)
	if err != nil || len(srcs) != 1 {
		t.Fatalf("Sources = %+v, %v; want one", srcs, err)
	}
	rec, ev, rej, err := store.SourceGetRows(ctx, srcs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	want := ledgerdb.SourceRecord{ID: srcs[0].ID, SourceAccount: reconcile.SourceAccount{URI: path, Format: "stripe-itemized", Hash: rec.Hash, Bytes: int64(len(itemizedCSV)), Rows: 3, Evidence: 2, Rejected: 1}}
	if diff := cmp.Diff(want, *rec); diff != "" || len(rec.Hash) != 64 {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}
	if len(ev) != 2 || ev[0].TxID != "ch_1" || ev[0].EffectKey != "run_1:charge:0" || ev[1].Amount.Minor != 1500 || len(rej) != 1 || rej[0].Line != 4 {
		t.Errorf("stored evidence %+v, rejected %+v", ev, rej)
	}
}

func TestIngestTwiceAddsNothingOnSQLite(t *testing.T) {
	t.Parallel()
	testIngestTwiceAddsNothing(t, migratedSQLite(t))
}

func TestIngestTwiceAddsNothingOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	if code, _, errOut := reconcileCmd(t, "migrate", "--ledger", url); code != 0 {
		t.Fatal(errOut)
	}
	testIngestTwiceAddsNothing(t, url)
}
