package stripe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ingest/ingesttest"
)

// itemizedHeader is the header the table tests write their rows under.
const itemizedHeader = "balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,charge_id,payment_intent_id,description,payment_metadata[effect_key],refund_metadata[effect_key],transfer_metadata[effect_key]"

// itemizedRow fills the header's columns from a few named values.
func itemizedRow(v map[string]string) string {
	cols := strings.Split(itemizedHeader, ",")
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = v[c]
	}
	return strings.Join(out, ",")
}

// baseRow is a valid charge row.
func baseRow() map[string]string {
	return map[string]string{
		"balance_transaction_id": "txn_T1",
		"created_utc":            "2025-04-01 12:00:00",
		"currency":               "usd",
		"gross":                  "10.00",
		"fee":                    "0.59",
		"net":                    "9.41",
		"reporting_category":     "charge",
		"source_id":              "ch_T1",
		"charge_id":              "ch_T1",
		"payment_intent_id":      "pi_T1",
	}
}

func with(m map[string]string, kv ...string) map[string]string {
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// parseOneItemized parses one row under itemizedHeader and returns its only call.
func parseOneItemized(t *testing.T, opt ItemizedOptions, row string) ingesttest.Call {
	t.Helper()
	calls, err := run(itemized(opt), []byte(itemizedHeader+"\n"+row+"\n"))
	if err != nil {
		t.Fatalf("ParseItemized: %v", err)
	}
	if len(calls) != 1 {
		t.Fatalf("ParseItemized gave %d calls, want 1: %+v", len(calls), calls)
	}
	return calls[0]
}

func mustEvidence(t *testing.T, c ingesttest.Call) *reconcile.Evidence {
	t.Helper()
	if c.Evidence == nil {
		t.Fatalf("got %s (%s), want evidence", c.Call, c.Reason)
	}
	return c.Evidence
}

func TestItemizedCategoryKinds(t *testing.T) {
	for _, tc := range []struct {
		category string
		gross    string
		kind     reconcile.Kind
		amount   int64
		failed   bool
	}{
		{"charge", "10.00", reconcile.KindCharge, 1000, false},
		{"Charge", "10.00", reconcile.KindCharge, 1000, false},
		{"charge_failure", "-10.00", reconcile.KindCharge, -1000, true},
		{"refund", "-4.00", reconcile.KindRefund, -400, false},
		{"refund_failure", "4.00", reconcile.KindRefund, 400, true},
		{"dispute", "-10.00", reconcile.KindDispute, -1000, false},
		{"dispute_reversal", "10.00", reconcile.KindDispute, 1000, false},
		{"fee", "-0.50", reconcile.KindFee, -50, false},
		{"network_cost", "-0.02", reconcile.KindFee, -2, false},
		{"payout", "-100.00", reconcile.KindPayout, -10000, false},
		{"payout_reversal", "100.00", reconcile.KindPayout, 10000, false},
		{"transfer", "-5.00", reconcile.KindTransfer, -500, false},
		{"transfer_reversal", "5.00", reconcile.KindTransfer, 500, false},
		{"topup", "50.00", reconcile.KindTransfer, 5000, false},
		{"adjustment", "-1.00", reconcile.KindAdjustment, -100, false},
		{"partial_capture_reversal", "-2.00", reconcile.KindAdjustment, -200, false},
		{"issuing_transaction", "-3.00", reconcile.KindOther, -300, false},
		{"", "1.00", reconcile.KindOther, 100, false},
	} {
		t.Run(tc.category, func(t *testing.T) {
			e := mustEvidence(t, parseOneItemized(t, ItemizedOptions{}, itemizedRow(with(baseRow(), "reporting_category", tc.category, "gross", tc.gross))))
			got := []any{e.Kind, e.RawKind, e.Amount.Minor, e.Failed}
			want := []any{tc.kind, tc.category, tc.amount, tc.failed}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("category %q: (-want +got)\n%s", tc.category, diff)
			}
		})
	}
}

func TestItemizedAmounts(t *testing.T) {
	for _, tc := range []struct {
		currency, gross, fee string
		comma                bool
		want                 reconcile.Money
		wantFee              int64
	}{
		{"usd", "25", "0.95", false, reconcile.Money{Minor: 2500, Currency: "USD"}, 95},
		{"USD", "-0.5", "0", false, reconcile.Money{Minor: -50, Currency: "USD"}, 0},
		{"usd", `"1,234.56"`, "", false, reconcile.Money{Minor: 123456, Currency: "USD"}, 0},
		{"jpy", "5000", "180", false, reconcile.Money{Minor: 5000, Currency: "JPY"}, 180},
		{"krw", "-12000", "0", false, reconcile.Money{Minor: -12000, Currency: "KRW"}, 0},
		{"jpy", "5000.00", "0", false, reconcile.Money{Minor: 5000, Currency: "JPY"}, 0}, // trailing zeros carry no value
		{"kwd", "12.345", "0.370", false, reconcile.Money{Minor: 12345, Currency: "KWD"}, 370},
		{"bhd", "0.001", "", false, reconcile.Money{Minor: 1, Currency: "BHD"}, 0},
		{"isk", "100.50", "", false, reconcile.Money{Minor: 10050, Currency: "ISK"}, 0}, // two decimals at Stripe, none in ISO 4217
		{" eur ", "+7.10", "", false, reconcile.Money{Minor: 710, Currency: "EUR"}, 0},
		{"kwd", "1.250", "", true, reconcile.Money{Minor: 1250, Currency: "KWD"}, 0}, // --decimal-comma is for semicolon files only
	} {
		row := itemizedRow(with(baseRow(), "currency", tc.currency, "gross", tc.gross, "fee", tc.fee))
		e := mustEvidence(t, parseOneItemized(t, ItemizedOptions{DecimalComma: tc.comma}, row))
		if e.Amount != tc.want || e.Fee != tc.wantFee {
			t.Errorf("gross %s %s fee %s: got %v fee %d, want %v fee %d", tc.gross, tc.currency, tc.fee, e.Amount, e.Fee, tc.want, tc.wantFee)
		}
	}
}

func TestItemizedTimes(t *testing.T) {
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	const both = "balance_transaction_id,created_utc,created,currency,gross,reporting_category\n"
	const local = "balance_transaction_id,created,currency,gross,reporting_category\n"
	for _, tc := range []struct {
		name string
		csv  string
		loc  *time.Location
		want string
	}{
		{"created_utc wins over created", both + "txn_1,2025-01-10 10:00:00,2025-01-10 05:00:00,usd,1,charge", newYork, "2025-01-10T10:00:00Z"},
		{"empty created_utc falls back to created", both + "txn_1,,2025-01-10 05:00:00,usd,1,charge", newYork, "2025-01-10T10:00:00Z"},
		{"created in winter time", local + "txn_1,2025-01-10 05:00:00,usd,1,charge", newYork, "2025-01-10T10:00:00Z"},
		{"created in summer time", local + "txn_1,2025-07-10 05:00:00,usd,1,charge", newYork, "2025-07-10T09:00:00Z"},
		{"created defaults to UTC", local + "txn_1,2025-07-10 05:00:00,usd,1,charge", nil, "2025-07-10T05:00:00Z"},
		{"ISO with Z", local + "txn_1,2025-07-10T05:00:00Z,usd,1,charge", newYork, "2025-07-10T05:00:00Z"},
		{"ISO with offset", local + "txn_1,2025-07-10T05:00:00+02:00,usd,1,charge", newYork, "2025-07-10T03:00:00Z"},
		{"ISO without zone is local", local + "txn_1,2025-07-10T05:00:00,usd,1,charge", newYork, "2025-07-10T09:00:00Z"},
		{"created_utc with offset", both + "txn_1,2025-07-10T05:00:00-01:00,,usd,1,charge", nil, "2025-07-10T06:00:00Z"},
	} {
		calls, err := run(itemized(ItemizedOptions{Location: tc.loc}), []byte(tc.csv))
		if err != nil || len(calls) != 1 || calls[0].Evidence == nil {
			t.Errorf("%s: got %+v, %v; want one evidence", tc.name, calls, err)
			continue
		}
		e := calls[0].Evidence
		if got := e.Time.Format(time.RFC3339); got != tc.want || e.Time.Location() != time.UTC {
			t.Errorf("%s: time %s in %v, want %s UTC", tc.name, got, e.Time.Location(), tc.want)
		}
	}
}

func TestItemizedIdentityAndLinks(t *testing.T) {
	for _, tc := range []struct {
		name string
		row  map[string]string
		want reconcile.Evidence // only the identity and link fields are compared
	}{
		{
			"charge links through payment metadata",
			with(baseRow(), "payment_metadata[effect_key]", "eff-1"),
			reconcile.Evidence{TxID: "ch_T1", PaymentIntent: "pi_T1", EffectKey: "eff-1"},
		},
		{
			"refund: own key from refund metadata, parent from payment metadata",
			with(baseRow(), "reporting_category", "refund", "gross", "-1", "source_id", "re_T1",
				"payment_metadata[effect_key]", "eff-1", "refund_metadata[effect_key]", "eff-r1"),
			reconcile.Evidence{TxID: "re_T1", ParentTxID: "ch_T1", PaymentIntent: "pi_T1", EffectKey: "eff-r1", ParentEffectKey: "eff-1"},
		},
		{
			"dispute belongs to the charge's effect",
			with(baseRow(), "reporting_category", "dispute", "gross", "-10", "source_id", "du_T1", "payment_metadata[effect_key]", "eff-1"),
			reconcile.Evidence{TxID: "du_T1", ParentTxID: "ch_T1", PaymentIntent: "pi_T1", ParentEffectKey: "eff-1"},
		},
		{
			"transfer links through transfer metadata",
			with(baseRow(), "reporting_category", "transfer", "gross", "-10", "source_id", "tr_T1", "charge_id", "", "payment_intent_id", "", "transfer_metadata[effect_key]", "eff-t1"),
			reconcile.Evidence{TxID: "tr_T1", EffectKey: "eff-t1"},
		},
		{
			"charge without source_id falls back to charge_id",
			with(baseRow(), "source_id", ""),
			reconcile.Evidence{TxID: "ch_T1", PaymentIntent: "pi_T1"},
		},
		{
			"fee without source_id has no identity",
			with(baseRow(), "reporting_category", "fee", "source_id", "", "charge_id", "", "payment_intent_id", ""),
			reconcile.Evidence{},
		},
		{
			"an odd source id is kept as written",
			with(baseRow(), "source_id", "Re_1234", "charge_id", ""),
			reconcile.Evidence{TxID: "Re_1234", PaymentIntent: "pi_T1"},
		},
	} {
		e := mustEvidence(t, parseOneItemized(t, ItemizedOptions{}, itemizedRow(tc.row)))
		got := reconcile.Evidence{TxID: e.TxID, ParentTxID: e.ParentTxID, PaymentIntent: e.PaymentIntent, EffectKey: e.EffectKey, ParentEffectKey: e.ParentEffectKey}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.name, diff)
		}
	}
}

func TestItemizedMetadataKeepsFullColumnNames(t *testing.T) {
	const csv = "balance_transaction_id,created,currency,gross,reporting_category,automatic_payout_id,payment_metadata[order_ref],refund_metadata[reason],transfer_metadata[x],payment_metadata[empty]\n" +
		"txn_M,2025-01-01 00:00:00,usd,1,charge,po_M,ord-9,late,y,\n"
	calls, err := run(itemized(ItemizedOptions{}), []byte(csv))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"balance_transaction_id":      "txn_M",
		"automatic_payout_id":         "po_M",
		"payment_metadata[order_ref]": "ord-9",
		"refund_metadata[reason]":     "late",
		"transfer_metadata[x]":        "y",
	}
	if diff := cmp.Diff(want, mustEvidence(t, calls[0]).Metadata); diff != "" {
		t.Errorf("Metadata (-want +got)\n%s", diff)
	}
}

func TestItemizedRejections(t *testing.T) {
	for _, tc := range []struct {
		name   string
		row    string
		reason string
	}{
		{"unparseable gross", itemizedRow(with(baseRow(), "gross", "ten")), `column gross: amount "ten" is not a number`},
		{"two decimal points", itemizedRow(with(baseRow(), "gross", "1.2.3")), `column gross: amount "1.2.3" is not a number`},
		{"empty gross", itemizedRow(with(baseRow(), "gross", "")), "column gross: empty amount"},
		{"gross in scientific notation", itemizedRow(with(baseRow(), "gross", "1E+3")), `column gross: amount "1E+3" is in scientific notation`},
		{"bad fee", itemizedRow(with(baseRow(), "fee", "n/a")), `column fee: amount "n/a" is not a number`},
		{"cents on yen", itemizedRow(with(baseRow(), "currency", "jpy", "gross", "100.5")), `column gross: amount "100.5" has more decimals than the currency allows (0)`},
		{"fourth decimal on dinar", itemizedRow(with(baseRow(), "currency", "kwd", "gross", "1.2345")), `column gross: amount "1.2345" has more decimals than the currency allows (3)`},
		{"third decimal on dollars", itemizedRow(with(baseRow(), "fee", "0.595")), `column fee: amount "0.595" has more decimals than the currency allows (2)`},
		{"unknown currency", itemizedRow(with(baseRow(), "currency", "usx")), `column currency: unknown currency "usx"`},
		{"empty currency", itemizedRow(with(baseRow(), "currency", "")), "column currency: empty currency"},
		{"mangled source_id", itemizedRow(with(baseRow(), "source_id", "1.8137E+15")), `column source_id: "1.8137E+15" is in scientific notation`},
		{"mangled charge_id", itemizedRow(with(baseRow(), "charge_id", "2E+14")), `column charge_id: "2E+14" is in scientific notation`},
		{"mangled payment_intent_id", itemizedRow(with(baseRow(), "payment_intent_id", "3.1e+16")), `column payment_intent_id: "3.1e+16" is in scientific notation`},
		{"mangled balance_transaction_id", itemizedRow(with(baseRow(), "balance_transaction_id", "9.99E+11")), `column balance_transaction_id: "9.99E+11" is in scientific notation`},
		{"mangled effect key", itemizedRow(with(baseRow(), "refund_metadata[effect_key]", "1.2E+9")), `column refund_metadata[effect_key]: "1.2E+9" is in scientific notation`},
		{"bad date", itemizedRow(with(baseRow(), "created_utc", "01/04/2025 12:00")), `column created_utc: "01/04/2025 12:00" is not a date and time`},
		{"impossible date", itemizedRow(with(baseRow(), "created_utc", "2025-02-30 12:00:00")), `column created_utc: "2025-02-30 12:00:00" is not a date and time`},
		{"empty date", itemizedRow(with(baseRow(), "created_utc", "")), "column created_utc is empty"},
		{"short row", "txn_S,2025-04-01 12:00:00,usd,1.00", "short row: 4 fields where the header has 14"},
		{"long row", itemizedRow(baseRow()) + ",surplus", "long row: 15 fields where the header has 14"},
		{"bare quote", `txn_Q,2025-04-01 12:00:00,usd,1.00,0,1,charge,ch_Q,ch_Q,pi_Q,Mug 12" tall,,,`, `malformed CSV quoting at line 2, column 68: bare " in non-quoted-field`},
		{"quote inside a quoted field", `txn_Q,2025-04-01 12:00:00,usd,1.00,0,1,charge,ch_Q,ch_Q,pi_Q,"Mug "12" tall",,,`, `malformed CSV quoting at line 2, column 67: extraneous or missing " in quoted-field`},
	} {
		c := parseOneItemized(t, ItemizedOptions{}, tc.row)
		if c.Call != "reject" || !strings.HasPrefix(c.Reason, tc.reason) || c.Line != 2 {
			t.Errorf("%s: got %s on line %d (%q), want reject on line 2 with %q", tc.name, c.Call, c.Line, c.Reason, tc.reason)
		}
	}
}

// TestItemizedMalformedRowsStayApart checks that two bad rows in a row give
// two rejections, each with its own line, and that the next good row parses.
func TestItemizedMalformedRowsStayApart(t *testing.T) {
	data := itemizedHeader + "\n" +
		`txn_A,2025-04-01 12:00:00,usd,1.00,0,1,charge,ch_A,ch_A,pi_A,a "b,,,` + "\n" +
		`txn_B,2025-04-01 12:00:00,usd,1.00,0,1,charge,ch_B,ch_B,pi_B,c "d,,,` + "\n" +
		"txn_C,2025-04-01 12:00:00\n" +
		"txn_D,2025-04-01 12:00:00\n" +
		itemizedRow(with(baseRow(), "source_id", "ch_E")) + "\n"
	calls, err := run(itemized(ItemizedOptions{}), []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"reject@2", "reject@3", "reject@4", "reject@5", "evidence@6"}
	if diff := cmp.Diff(want, ingesttest.Summary(calls)); diff != "" {
		t.Errorf("outcomes (-want +got)\n%s", diff)
	}
	if calls[2].Raw == calls[3].Raw {
		t.Errorf("two short rows share their raw text %q", calls[2].Raw)
	}
}

func TestItemizedBlankAndEmptyRows(t *testing.T) {
	data := itemizedHeader + "\r\n\r\n" + itemizedRow(baseRow()) + "\r\n,,,,,,,,,,,,,\r\n   \r\n"
	calls, err := run(itemized(ItemizedOptions{}), []byte("\xEF\xBB\xBF"+data))
	if err != nil {
		t.Fatal(err)
	}
	// Line 2 is blank (no row); lines 4 and 5 hold only empty fields.
	want := []string{"evidence@3", "ignore@4", "ignore@5"}
	if diff := cmp.Diff(want, ingesttest.Summary(calls)); diff != "" {
		t.Errorf("outcomes (-want +got)\n%s", diff)
	}
	if raw := calls[0].Evidence.Raw; strings.ContainsAny(raw, "\r\n") {
		t.Errorf("Raw = %q, want the row without its line end", raw)
	}
}

func TestItemizedFatal(t *testing.T) {
	for _, tc := range []struct {
		name, csv, want string
	}{
		{"empty file", "", "line 1: empty file: a Stripe itemized report starts with a header row"},
		{"every required column missing", "id,amount\n1,2\n",
			"line 1: not a Stripe itemized report: missing required column(s) currency, gross, reporting_category, created_utc or created, balance_transaction_id or source_id"},
		{"one missing", "source_id,created,currency,gross\nch_1,2025-01-01 00:00:00,usd,1\n",
			"line 1: not a Stripe itemized report: missing required column(s) reporting_category"},
		{"header after blank lines", "\n\nsource_id,created,currency\n", "line 3: not a Stripe itemized report: missing required column(s) gross, reporting_category"},
		{"header not CSV", "source_id,\"created,currency,gross,reporting_category\n", "line 1: header row: parse error on line 1, column 54: extraneous or missing \" in quoted-field"},
	} {
		_, err := run(itemized(ItemizedOptions{}), []byte(tc.csv))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// failingReader returns its data, then err.
type failingReader struct {
	data string
	err  error
}

func (r *failingReader) Read(b []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(b, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestItemizedReadErrorIsFatal(t *testing.T) {
	errDisk := errors.New("disk on fire")
	// More than the reader's 64 KiB look-ahead, so that the error comes
	// after some rows.
	const rows = 2000
	r := &failingReader{data: itemizedHeader + "\n" + strings.Repeat(itemizedRow(baseRow())+"\n", rows), err: errDisk}
	var rec ingesttest.Recorder
	err := ParseItemized(context.Background(), r, ItemizedOptions{}, &rec)
	if !errors.Is(err, errDisk) || !strings.HasPrefix(err.Error(), fmt.Sprintf("line %d: ", rows+2)) {
		t.Errorf("ParseItemized = %v, want line %d wrapping %v", err, rows+2, errDisk)
	}
	if len(rec.Calls) != rows {
		t.Errorf("got %d outcomes before the error, want %d", len(rec.Calls), rows)
	}
}

func TestSinkErrorStopsTheParse(t *testing.T) {
	data := itemizedHeader + "\n" + itemizedRow(baseRow()) + "\n"
	if err := ParseItemized(context.Background(), strings.NewReader(data), ItemizedOptions{}, &ingesttest.FailingSink{}); !errors.Is(err, ingesttest.ErrSink) {
		t.Errorf("ParseItemized = %v, want %v", err, ingesttest.ErrSink)
	}
	if err := ParseEvents(context.Background(), strings.NewReader(`{"x":1}`+"\n"), EventsOptions{}, &ingesttest.FailingSink{}); !errors.Is(err, ingesttest.ErrSink) {
		t.Errorf("ParseEvents = %v, want %v", err, ingesttest.ErrSink)
	}
}

func TestCancelledContextStopsTheParse(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var rec ingesttest.Recorder
	data := itemizedHeader + "\n" + strings.Repeat(itemizedRow(baseRow())+"\n", 10)
	if err := ParseItemized(ctx, strings.NewReader(data), ItemizedOptions{}, &rec); !errors.Is(err, context.Canceled) {
		t.Errorf("ParseItemized = %v, want %v", err, context.Canceled)
	}
	for _, in := range []string{`{"x":1}` + "\n", `[{"x":1}]`, "{\n}\n"} {
		if err := ParseEvents(ctx, strings.NewReader(in), EventsOptions{}, &rec); !errors.Is(err, context.Canceled) {
			t.Errorf("ParseEvents(%q) = %v, want %v", in, err, context.Canceled)
		}
	}
	if len(rec.Calls) != 0 {
		t.Errorf("a cancelled parse made %d calls", len(rec.Calls))
	}
}

func TestDetectItemized(t *testing.T) {
	for _, tc := range []struct {
		name, head string
		want       bool
	}{
		{"report.csv", "balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category\n", true},
		{"report.csv", "\xEF\xBB\xBFCurrency;Gross;Reporting_Category\r\n", true},
		{"report.csv", `"reporting_category","gross","currency"`, true}, // cut before the line end
		{"balance_change_from_activity.itemized.3.csv", "balance_transaction_id,gross\n", true},
		{"balance.csv", "balance_transaction_id,gross\n", false},
		{"report.itemized.csv", "balance_transaction_id,amount\n", false},
		{"settlement.csv", "Company Account,Merchant Account,Psp Reference,Gross Credit (GC),Gross Currency\n", false},
		{"events.json", `{"object": "event", "gross": 1, "currency": "usd", "reporting_category": "charge"}`, false},
		{"empty.csv", "", false},
	} {
		if got := DetectItemized(tc.name, []byte(tc.head)); got != tc.want {
			t.Errorf("DetectItemized(%q, %q) = %v, want %v", tc.name, tc.head, got, tc.want)
		}
	}
}

var _ io.Reader = (*failingReader)(nil)
