package stripe

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile/ingest/ingesttest"
)

// semicolonHeader is a balance change report's columns, in Stripe's order,
// as a spreadsheet in a European locale saves them again: separated by
// semicolons.
const semicolonHeader = "balance_transaction_id;created;available_on;currency;gross;fee;net;reporting_category;source_id;" +
	"description;charge_id;payment_intent_id;payment_method_type;card_brand;card_country;automatic_payout_id;payment_metadata[effect_key]"

// outcomes writes each call as "evidence@line minor currency fee N" or
// "reject@line: reason", for a diff.
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

// TestItemizedDecimalCommaSemicolon reads a re-saved report's decimal
// commas without being told, column by column, and rejects what it cannot
// tell or what contradicts its column.
func TestItemizedDecimalCommaSemicolon(t *testing.T) {
	rows := []string{
		"txn_1DC01;2026-03-02 09:14:00;2026-03-04 00:00:00;eur;25;0,95;24,05;charge;ch_1DC01;Bestellung 1001;ch_1DC01;pi_1DC01;card;visa;DE;po_1DC;eff-dc-1",
		"txn_1DC02;2026-03-02 10:20:00;2026-03-04 00:00:00;eur;1.250,00;36,55;1.213,45;charge;ch_1DC02;Bestellung 1002;ch_1DC02;pi_1DC02;card;mastercard;AT;po_1DC;eff-dc-2",
		"txn_1DC03;2026-03-02 11:00:00;2026-03-04 00:00:00;eur;-1.250;0;-1.250;refund;re_1DC03;Erstattung;ch_1DC02;pi_1DC02;card;mastercard;AT;po_1DC;eff-dc-3",
		"txn_1DC04;2026-03-02 12:30:00;2026-03-04 00:00:00;eur;-0,01;0;-0,01;adjustment;adj_1DC04;Rundung;;;;;;po_1DC;",
		"txn_1DC05;2026-03-02 13:00:00;2026-03-04 00:00:00;eur;12.50;0,66;11,84;charge;ch_1DC05;Bestellung 1005;ch_1DC05;pi_1DC05;card;visa;DE;po_1DC;eff-dc-5",
		"txn_1DC06;2026-03-02 14:00:00;2026-03-04 00:00:00;jpy;1.500;0;1.500;charge;ch_1DC06;Bestellung 1006;ch_1DC06;pi_1DC06;card;jcb;JP;po_1DC;eff-dc-6",
	}
	data := []byte(semicolonHeader + "\n" + strings.Join(rows, "\n") + "\n")
	for _, tc := range []struct {
		name string
		opt  ItemizedOptions
		want []string
	}{
		{"detected", ItemizedOptions{}, []string{
			"evidence@2 2500 EUR fee 95", // gross tells nothing yet; fee is settled by 0,95
			"evidence@3 125000 EUR fee 3655",
			"evidence@4 -125000 EUR fee 0",
			"evidence@5 -1 EUR fee 0",
			`reject@6: column gross: "12.50" reads only with a decimal point (as 12.5), but the column's earlier amount "1.250,00" has a decimal comma`,
			"evidence@7 1500 JPY fee 0",
		}},
		{"forced", ItemizedOptions{DecimalComma: true}, []string{
			"evidence@2 2500 EUR fee 95",
			"evidence@3 125000 EUR fee 3655",
			"evidence@4 -125000 EUR fee 0",
			"evidence@5 -1 EUR fee 0",
			`reject@6: column gross: amount "12.50" has misplaced thousands separators`,
			"evidence@7 1500 JPY fee 0",
		}},
	} {
		calls, err := run(itemized(tc.opt), data)
		if err != nil {
			t.Fatalf("%s: ParseItemized: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, outcomes(calls)); diff != "" {
			t.Errorf("%s: ParseItemized outcomes (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestItemizedAmbiguousFirstAmount rejects an amount that reads as two
// values before anything in its column tells which, and reads the column's
// later amounts once one has.
func TestItemizedAmbiguousFirstAmount(t *testing.T) {
	rows := []string{
		"txn_1DA01;2026-03-05 09:00:00;2026-03-07 00:00:00;eur;1.250;0;1.250;charge;ch_1DA01;;ch_1DA01;pi_1DA01;card;visa;FR;po_1DA;eff-da-1",
		"txn_1DA02;2026-03-05 09:30:00;2026-03-07 00:00:00;eur;99,90;2,90;97,00;charge;ch_1DA02;;ch_1DA02;pi_1DA02;card;visa;FR;po_1DA;eff-da-2",
		"txn_1DA03;2026-03-05 10:00:00;2026-03-07 00:00:00;eur;1.250;0;1.250;charge;ch_1DA03;;ch_1DA03;pi_1DA03;card;visa;FR;po_1DA;eff-da-3",
	}
	calls, err := run(itemized(ItemizedOptions{}), []byte(semicolonHeader+"\n"+strings.Join(rows, "\n")+"\n"))
	if err != nil {
		t.Fatalf("ParseItemized: %v", err)
	}
	want := []string{
		`reject@2: column gross: "1.250" reads as 1.25 or as 1250 depending on the decimal separator, and no earlier amount in the column tells which; ` +
			`pass --decimal-comma if the file uses a decimal comma`,
		"evidence@3 9990 EUR fee 290",
		"evidence@4 125000 EUR fee 0",
	}
	if diff := cmp.Diff(want, outcomes(calls)); diff != "" {
		t.Errorf("ParseItemized outcomes (-want +got):\n%s", diff)
	}
}
