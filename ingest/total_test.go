package ingest_test

import (
	"math"
	"strings"
	"testing"
)

// A total of amounts is a sum of money: it never wraps past int64 to a
// negative total, and says when it saturated.
func TestTotalsDoNotWrap(t *testing.T) {
	var b strings.Builder
	b.WriteString("balance_transaction_id,created_utc,source_id,reporting_category,currency,gross,fee,net\n")
	for _, c := range "abcdefghij" {
		b.WriteString("txn_" + string(c) + ",2026-11-01 10:00:00,ch_" + string(c) + ",charge,eur,9999999999999999.99,0.00,9999999999999999.99\n")
	}
	in, _, err := read(t, write(t, t.TempDir(), "big.itemized.csv", []byte(b.String())), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Totals) != 1 || in.Totals[0].AmountMinor != math.MaxInt64 || !in.Totals[0].Overflow {
		t.Errorf("totals = %+v, want one saturated at %d and marked as overflowed", in.Totals, int64(math.MaxInt64))
	}
}
