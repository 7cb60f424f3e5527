package adyen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile/ingest/ingesttest"
)

// semicolonReport is a settlement details report as a spreadsheet in a
// European locale saves it again: semicolons for commas, amounts with a
// decimal comma. Each row is a map of column values, as for row.
func semicolonReport(rows ...map[string]string) string {
	names := strings.Split(strings.TrimSuffix(header, "\n"), ",")
	lines := []string{strings.Join(names, ";")}
	for _, v := range rows {
		rec := make([]string, len(names))
		for i, n := range names {
			rec[i] = v[n]
		}
		lines = append(lines, strings.Join(rec, ";"))
	}
	return strings.Join(lines, "\n") + "\n"
}

// outcomes writes each call as "evidence@line minor currency fee N" or
// "call@line: reason", for a diff.
func outcomes(calls []ingesttest.Call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		if c.Evidence != nil {
			out[i] = fmt.Sprintf("evidence@%d %d %s fee %d", c.Line, c.Evidence.Amount.Minor, c.Evidence.Amount.Currency, c.Evidence.Fee)
		} else {
			out[i] = fmt.Sprintf("%s@%d: %s", c.Call, c.Line, c.Reason)
		}
	}
	return out
}

// commaRow is a row of a re-saved report: v's columns over a settled
// payment's.
func commaRow(v ...string) map[string]string {
	m := settled(map[string]string{
		"Creation Date": "2024-03-04 10:00:00", "Gross Credit (GC)": "", "Net Credit (NC)": "", "Commission (NC)": "", "Exchange Rate": "1",
	})
	for i := 0; i < len(v); i += 2 {
		m[v[i]] = v[i+1]
	}
	return m
}

// TestDecimalCommaSemicolon reads a re-saved report's decimal commas
// column by column, and rejects an amount its column's notation does not
// read, or one nothing has told the notation of.
func TestDecimalCommaSemicolon(t *testing.T) {
	rows := []map[string]string{
		commaRow("Psp Reference", "DC01AA22BB33CC01", "Modification Reference", "DC01AA22BB33CC02",
			"Gross Credit (GC)", "1.250,00", "Net Credit (NC)", "1.236,25",
			"Commission (NC)", "12,50", "Scheme Fees (NC)", "0,75", "Interchange (NC)", "0,50", "Exchange Rate", "1,0000"),
		commaRow("Psp Reference", "DC01AA22BB33CC01", "Modification Reference", "DC01AA22BB33CC03", "Type", "Refunded",
			"Modification Merchant Reference", "refund-dc-1", "Gross Debit (GC)", "10,00", "Net Debit (NC)", "10,00"),
		commaRow("Psp Reference", "DC02AA22BB33CC01", "Modification Reference", "DC02AA22BB33CC02",
			"Gross Credit (GC)", "1.250", "Net Credit (NC)", "1.250", "Commission (NC)", "0"),
		commaRow("Psp Reference", "DC03AA22BB33CC01", "Modification Reference", "DC03AA22BB33CC02",
			"Gross Credit (GC)", "12.50", "Net Credit (NC)", "12,50"),
		commaRow("Psp Reference", "", "Merchant Reference", "", "Type", "MerchantPayout", "Modification Reference", "payout of batch 7",
			"Gross Currency", "", "Net Debit (NC)", "2.476,25"),
	}
	in := semicolonReport(rows...)
	if !Detect("settlement_detail_report_batch_7.csv", []byte(in)) {
		t.Errorf("Detect(a semicolon report) = false, want true")
	}
	for _, tc := range []struct {
		name  string
		force bool
		want  []string
	}{
		{"detected", false, []string{
			"evidence@2 125000 EUR fee 1375",
			"evidence@3 -1000 EUR fee 0",
			"evidence@4 125000 EUR fee 0",
			`reject@5: Gross Credit (GC) (EUR): "12.50" reads only with a decimal point (as 12.5), but the column's earlier amount "1.250,00" has a decimal comma`,
			"evidence@6 -247625 EUR fee 0",
		}},
		{"forced", true, []string{
			"evidence@2 125000 EUR fee 1375",
			"evidence@3 -1000 EUR fee 0",
			"evidence@4 125000 EUR fee 0",
			`reject@5: Gross Credit (GC) (EUR): amount "12.50" has misplaced thousands separators`,
			"evidence@6 -247625 EUR fee 0",
		}},
	} {
		opt := testOptions(t)
		opt.DecimalComma = tc.force
		calls, err := parseString(in, opt)
		if err != nil {
			t.Fatalf("%s: Parse: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, outcomes(calls)); diff != "" {
			t.Errorf("%s: Parse outcomes (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestDecimalCommaAmbiguousFirst rejects an amount that reads as two
// values before its column tells which, and names the flag; a
// comma-delimited report still rejects every comma in an amount.
func TestDecimalCommaAmbiguousFirst(t *testing.T) {
	calls, err := parseString(semicolonReport(
		commaRow("Gross Credit (GC)", "1.250", "Net Credit (NC)", "1.250"),
		commaRow("Modification Reference", "TT11AA22BB33CC46", "Gross Credit (GC)", "99,90", "Net Credit (NC)", "99,90"),
	), testOptions(t))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []string{
		`reject@2: Gross Credit (GC) (EUR): "1.250" reads as 1.25 or as 1250 depending on the decimal separator, and no earlier amount in the column tells which; ` +
			`pass --decimal-comma if the file uses a decimal comma`,
		"evidence@3 9990 EUR fee 0",
	}
	if diff := cmp.Diff(want, outcomes(calls)); diff != "" {
		t.Errorf("Parse outcomes (-want +got):\n%s", diff)
	}

	calls, err = parseString(header+row(settled(map[string]string{"Gross Credit (GC)": "1,250"})), testOptions(t))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got, want := outcomes(calls), []string{`reject@2: Gross Credit (GC): amount "1,250" holds a comma; Adyen writes amounts like 1234.56`}; !cmp.Equal(got, want) {
		t.Errorf("Parse(comma-delimited, 1,250) = %q, want %q", got, want)
	}
}
