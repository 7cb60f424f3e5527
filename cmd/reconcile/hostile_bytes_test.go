package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"strings"
	"testing"

	"reconcile/ledgerdb/ledgerdbtest"
)

// bytesReport is a Stripe itemized report whose line 3 holds a Latin-1 é
// (0xE9, as a spreadsheet saving in Windows-1252 writes it) and whose line 4
// holds a NUL byte; the other rows are plain.
const bytesReport = "balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,charge_id,payment_intent_id,description,payment_metadata[effect_key]\n" +
	"txn_1,2026-11-01 09:00:00,eur,10.00,0.30,9.70,charge,ch_0,ch_0,pi_0,Mug,run_1:charge:0\n" +
	"txn_2,2026-11-01 10:00:00,eur,20.00,0.60,19.40,charge,ch_1a,ch_1a,pi_1,Caf\xe9 cr\xe8me,run_1:charge:1\n" +
	"txn_3,2026-11-01 11:00:00,eur,20.00,0.60,19.40,charge,ch_1b,ch_1b,pi_1b,Tea\x00pot,run_1:charge:1\n" +
	"txn_4,2026-11-01 12:00:00,eur,45.00,1.35,43.65,charge,ch_4,ch_4,pi_4,Plate,run_1:charge:4\n"

// A row with a byte that is not UTF-8, or a NUL byte, is a rejected row with
// its line and the byte, on SQLite as on PostgreSQL (which stores neither):
// the other rows are evidence, the rejected rows are kept with those bytes
// escaped, and a run over the same ledger reads them back.
func TestHostileBytesAreRejectedRowsOnBothLedgers(t *testing.T) {
	t.Parallel()
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		seedLedger(t, l.URL)
		path := writeFile(t, "bytes.itemized.csv", bytesReport)
		code, out, errOut := reconcileCmd(t, "ingest", "--ledger", l.URL, "--json", "-", path)
		if code != 0 {
			t.Fatalf("ingest: exit %d, stderr %q; want 0", code, errOut)
		}
		var got struct {
			Inputs []struct {
				Rows, Evidence, Rejected int
			}
			Rejected []struct {
				Line        int
				Reason, Raw string
			}
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("stdout is not the JSON result: %v\n%s", err, out)
		}
		if len(got.Inputs) != 1 || got.Inputs[0].Rows != 4 || got.Inputs[0].Evidence != 2 || got.Inputs[0].Rejected != 2 {
			t.Errorf("inputs = %+v; want 4 rows: 2 evidence, 2 rejected", got.Inputs)
		}
		want := []struct {
			line        int
			reason, raw string
		}{
			{3, "line 3 is not valid UTF-8 (byte 0xE9 at column 75)", `Caf\xe9 cr\xe8me`},
			{4, "line 4 holds a NUL byte (column 76)", `Tea\x00pot`},
		}
		if len(got.Rejected) != len(want) {
			t.Fatalf("rejected = %+v; want lines 3 and 4", got.Rejected)
		}
		for i, w := range want {
			r := got.Rejected[i]
			if r.Line != w.line || r.Reason != w.reason || !strings.Contains(r.Raw, w.raw) {
				t.Errorf("rejected[%d] = %+v; want line %d, reason %q, raw holding %q", i, r, w.line, w.reason, w.raw)
			}
		}

		code, r, errOut := runJSON(t, "--ledger", l.URL, "--as-of", "2026-11-03", path)
		if code != 0 && code != exitPerson {
			t.Fatalf("run over the same ledger: exit %d, stderr %q", code, errOut)
		}
		if len(r.Inputs) != 1 || !r.Inputs[0].AlreadyIngested || r.Inputs[0].Rejected != 2 {
			t.Errorf("run: inputs = %+v; want the input already ingested, with its 2 rejected rows", r.Inputs)
		}
	})
}

// An input that decompresses to more than --max-input-bytes stops the
// command with exit status 2, naming the input, the bound and the flag;
// the same input is read under the default bound, and a bound that is not
// a number of bytes is a usage error.
func TestHostileMaxInputBytes(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(bytesReport[:strings.Index(bytesReport, "\n")+1]))
	w.Write([]byte("txn_9,2026-11-01 09:00:00,eur,10.00,0.30,9.70,charge,ch_9,ch_9,pi_9," + strings.Repeat("x", 2<<20) + ",run_1:charge:9\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "big.itemized.csv.gz", b.String())
	code, _, errOut := reconcileCmd(t, "ingest", "--check", "--max-input-bytes", "1048576", path)
	if want := path + ": more than 1 MiB once decompressed (--max-input-bytes): "; code != exitUsage || !strings.Contains(errOut, want) {
		t.Errorf("--max-input-bytes 1048576: exit %d, stderr %q; want %d and %q", code, errOut, exitUsage, want)
	}
	if code, _, errOut := reconcileCmd(t, "ingest", "--check", path); code != 0 {
		t.Errorf("default bound: exit %d, stderr %q; want 0", code, errOut)
	}
	for _, v := range []string{"-1", "lots"} {
		if code, _, errOut := reconcileCmd(t, "ingest", "--check", "--max-input-bytes", v, path); code != exitUsage || !strings.Contains(errOut, "--max-input-bytes") {
			t.Errorf("--max-input-bytes %s: exit %d, stderr %q; want a usage error", v, code, errOut)
		}
	}
}
