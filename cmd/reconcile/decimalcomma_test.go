package main

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// semicolonItemized is a Stripe itemized report saved again by a
// spreadsheet in a European locale. Its first charge, "1.250", reads as 1.25
// or as 1250: nothing in the gross column before it tells which.
const semicolonItemized = "balance_transaction_id;created_utc;currency;gross;fee;net;reporting_category;source_id;charge_id;payment_metadata[effect_key]\n" +
	"txn_1;2026-11-02 10:00:00;eur;1.250;0;1.250;charge;ch_1;ch_1;run_1:charge:0\n" +
	"txn_2;2026-11-02 11:00:00;eur;142,00;4,26;137,74;charge;ch_2;ch_2;run_1:charge:1\n"

// An amount that reads two ways in a semicolon-delimited report is rejected
// with both readings and the flag that settles it; with --decimal-comma
// it is read.
func TestIngestDecimalComma(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "nov.itemized.csv", semicolonItemized)
	type rejected struct {
		Line   int
		Reason string
	}
	for _, tc := range []struct {
		flags    []string
		totals   []total
		rejected []rejected
	}{
		{nil, []total{{"EUR", "charge", 1, 14200}}, []rejected{{2, `column gross: "1.250" reads as 1.25 or as 1250 depending on the decimal separator, ` +
			`and no earlier amount in the column tells which; pass --decimal-comma if the file uses a decimal comma`}}},
		{[]string{"--decimal-comma"}, []total{{"EUR", "charge", 2, 139200}}, []rejected{}},
	} {
		code, out, errOut := reconcileCmd(t, append(append([]string{"ingest", "--check", "--json", "-"}, tc.flags...), path)...)
		var got struct {
			Inputs []struct {
				Rows, Evidence int
				Totals         []total
			}
			Rejected []rejected
		}
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got.Inputs) != 1 {
			t.Fatalf("ingest --check %v: exit %d, %v: %s", tc.flags, code, err, errOut)
		}
		if in := got.Inputs[0]; in.Rows != 2 || in.Evidence != tc.totals[0].Count {
			t.Errorf("ingest --check %v: %d rows, %d evidence; want 2 rows, %d evidence", tc.flags, in.Rows, in.Evidence, tc.totals[0].Count)
		}
		if diff := cmp.Diff(tc.totals, got.Inputs[0].Totals); diff != "" {
			t.Errorf("ingest --check %v: totals (-want +got):\n%s", tc.flags, diff)
		}
		if diff := cmp.Diff(tc.rejected, got.Rejected); diff != "" {
			t.Errorf("ingest --check %v: rejected (-want +got):\n%s", tc.flags, diff)
		}
	}
}
