package paypal

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile/ingest/ingesttest"
)

// semicolonSTL is a settlement report as a spreadsheet in a European locale
// saves it again: semicolons for commas, and the quotes dropped. Its amounts
// stay as STL writes them, whole hundredths, so the re-save leaves them be.
// body replaces the SB rows.
func semicolonSTL(body ...string) string {
	lines := []string{
		"RH;2026/03/03 02:11:40 -0800;A;EUTESTACCT77Q;009;",
		"FH;01",
		"SH;2026/03/02 00:00:00 -0800;2026/03/02 23:59:59 -0800;EUTESTACCT77Q;",
		"CH;Transaction ID;Invoice ID;PayPal Reference ID;PayPal Reference ID Type;Transaction Event Code;Transaction Initiation Date;" +
			"Transaction Completion Date;Transaction Debit or Credit;Gross Transaction Amount;Gross Transaction Currency;Fee Debit or Credit;" +
			"Fee Amount;Fee Currency;Custom Field;Consumer ID;Payment Tracking ID;Store ID;Bank Reference ID;Credit Transactional Fee;" +
			"Credit Promotional Fee;Credit Term",
	}
	lines = append(lines, body...)
	lines = append(lines,
		"SF;EUR;125000;1250;0;3650;CR;0;CR;120100;CR;0;CR;120100;CR;0;CR;0;3",
		"SC;3",
		"RF;EUR;125000;1250;0;3650;CR;0;CR;120100;CR;0;CR;120100;CR;0;CR;0;3",
		"RC;3",
		"FF;3",
	)
	return strings.Join(lines, "\n") + "\n"
}

// semicolonRows are three SB rows whose amounts add up to the footers of
// semicolonSTL.
var semicolonRows = []string{
	"SB;8EU11223344556677;best-2001;;;T0006;2026/03/02 08:30:00 -0800;2026/03/02 08:30:02 -0800;CR;100000;EUR;DR;3000;EUR;eff-eu-1;PAYEREU0001;;;;;;",
	"SB;8EU22334455667788;best-2002;;;T0006;2026/03/02 09:45:00 -0800;2026/03/02 09:45:01 -0800;CR;25000;EUR;DR;650;EUR;eff-eu-2;PAYEREU0002;;;;;;",
	"SB;8EU33445566778899;best-2001;8EU11223344556677;TXN;T1107;2026/03/02 11:00:00 -0800;2026/03/02 11:00:00 -0800;DR;1250;EUR;;;;eff-eu-1;PAYEREU0001;;;;;;",
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

// TestSemicolonSTL reads a settlement report re-saved with semicolons: it is
// detected, its amounts are read and its footers checked. An amount with a
// decimal separator is no STL amount, whatever the locale: STL writes whole
// hundredths, and "12,50" might mean 12.50 or 1250 hundredths.
func TestSemicolonSTL(t *testing.T) {
	header := []string{
		"ignore@1: report header (RH)", "ignore@2: file header (FH)", "ignore@3: section header (SH)", "ignore@4: column header (CH)",
	}
	for _, tc := range []struct {
		name string
		body []string
		want []string
	}{
		{"whole", semicolonRows, append(header[:4:4],
			"evidence@5 100000 EUR fee 3000",
			"evidence@6 25000 EUR fee 650",
			"evidence@7 -1250 EUR fee 0",
			"ignore@8: section footer totals (SF), checked against the rows",
			"ignore@9: section record count (SC), checked",
			"ignore@10: report footer totals (RF), checked against the rows",
			"ignore@11: report record count (RC), checked",
			"ignore@12: file footer (FF), checked",
		)},
		{"decimal comma", append(semicolonRows[:2:2], strings.Replace(semicolonRows[2], ";1250;", ";12,50;", 1)), append(header[:4:4],
			"evidence@5 100000 EUR fee 3000",
			"evidence@6 25000 EUR fee 650",
			`reject@7: Gross Transaction Amount "12,50" is not an STL amount: unsigned digits, 12.34 written as 1234`,
			"ignore@8: section footer totals (SF), fees checked; gross not checked: the gross of a rejected row could not be read",
			"ignore@9: section record count (SC), checked",
			"ignore@10: report footer totals (RF), fees checked; gross not checked: the gross of a rejected row could not be read",
			"ignore@11: report record count (RC), checked",
			"ignore@12: file footer (FF), checked",
		)},
	} {
		in := semicolonSTL(tc.body...)
		if !Detect("STL-20260302.01.009.CSV", []byte(in)) {
			t.Errorf("%s: Detect(a semicolon STL) = false, want true", tc.name)
		}
		calls, err := parseString(in)
		if err != nil {
			t.Fatalf("%s: Parse: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, outcomes(calls)); diff != "" {
			t.Errorf("%s: Parse outcomes (-want +got):\n%s", tc.name, diff)
		}
	}
}
