package adyen

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the tests must not depend on the machine's zoneinfo

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ingest/ingesttest"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func testOptions(t testing.TB) Options {
	return Options{
		Zones:       map[string]*time.Location{"ShopEU_ACCOUNT": mustZone(t, "Europe/Amsterdam")},
		DefaultZone: mustZone(t, "America/Los_Angeles"),
	}
}

func parseString(in string, opt Options) ([]ingesttest.Call, error) {
	return ingesttest.Run(func(sink reconcile.RowSink) error {
		return Parse(context.Background(), strings.NewReader(in), opt, sink)
	})
}

func TestGolden(t *testing.T) {
	ingesttest.GoldenFiles(t, "testdata/*.csv", ingesttest.FormatLinedCalls, func(t *testing.T, path string, in []byte) ([]ingesttest.Call, error) {
		if !Detect(filepath.Base(path), in) {
			t.Errorf("Detect(%s) = false", path)
		}
		return parseString(string(in), testOptions(t))
	})
}

const header = "Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type," +
	"Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Net Currency,Net Debit (NC)," +
	"Net Credit (NC),Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC),Payment Method Variant," +
	"Modification Merchant Reference,Batch Number,Reserved4,Reserved5,Reserved6,Reserved7,Reserved8,Reserved9,Reserved10\n"

// row builds a data row of the standard 30-column layout from column values.
func row(v map[string]string) string {
	names := strings.Split(strings.TrimSuffix(header, "\n"), ",")
	rec := make([]string, len(names))
	for i, n := range names {
		rec[i] = v[n]
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(rec)
	w.Flush()
	return b.String()
}

// settled is a valid Settled row; tests override columns.
func settled(over map[string]string) map[string]string {
	v := map[string]string{
		"Company Account": "AcmeCo", "Merchant Account": "ShopEU_ACCOUNT", "Psp Reference": "TT11AA22BB33CC44",
		"Merchant Reference": "order-9", "Creation Date": "2024-02-01 10:00:00", "TimeZone": "CET", "Type": "Settled",
		"Modification Reference": "TT11AA22BB33CC45", "Gross Currency": "EUR", "Gross Credit (GC)": "10.00",
		"Net Currency": "EUR", "Net Credit (NC)": "9.80", "Commission (NC)": "0.20", "Batch Number": "7",
	}
	for k, x := range over {
		v[k] = x
	}
	return v
}

// only parses in and returns its one outcome.
func only(t *testing.T, in string, opt Options) ingesttest.Call {
	t.Helper()
	calls, err := parseString(in, opt)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(calls) != 1 {
		t.Fatalf("got %d calls, want 1: %+v", len(calls), calls)
	}
	return calls[0]
}

func TestMapping(t *testing.T) {
	tests := []struct {
		name                    string
		over                    map[string]string
		kind                    reconcile.Kind
		minor, fee              int64
		cur                     string
		time                    string
		txid, parent, eff, peff string
	}{
		{
			name: "settled is a charge linked by merchant reference",
			kind: reconcile.KindCharge, minor: 1000, fee: 20, cur: "EUR", time: "2024-02-01T09:00:00Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", eff: "order-9",
		},
		{
			name: "refund is negative and links to its own and the payment's reference",
			over: map[string]string{"Type": "Refunded", "Gross Credit (GC)": "", "Gross Debit (GC)": "4.00",
				"Net Credit (NC)": "", "Net Debit (NC)": "4.00", "Commission (NC)": "", "Modification Merchant Reference": "refund-1"},
			kind: reconcile.KindRefund, minor: -400, cur: "EUR", time: "2024-02-01T09:00:00Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", eff: "refund-1", peff: "order-9",
		},
		{
			name: "chargeback reversed is a positive dispute",
			over: map[string]string{"Type": "ChargebackReversed", "Commission (NC)": ""},
			kind: reconcile.KindDispute, minor: 1000, cur: "EUR", time: "2024-02-01T09:00:00Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", peff: "order-9",
		},
		{
			name: "JPY has no decimals",
			over: map[string]string{"Gross Currency": "JPY", "Gross Credit (GC)": "1500", "Net Currency": "JPY",
				"Net Credit (NC)": "1480", "Commission (NC)": "20"},
			kind: reconcile.KindCharge, minor: 1500, fee: 20, cur: "JPY", time: "2024-02-01T09:00:00Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", eff: "order-9",
		},
		{
			name: "KWD has three decimals",
			over: map[string]string{"Gross Currency": "kwd", "Gross Credit (GC)": "1.005", "Net Currency": "KWD",
				"Net Credit (NC)": "1.000", "Commission (NC)": "0.005"},
			kind: reconcile.KindCharge, minor: 1005, fee: 5, cur: "KWD", time: "2024-02-01T09:00:00Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", eff: "order-9",
		},
		{
			name: "IDR is zero-decimal at Adyen",
			over: map[string]string{"Gross Currency": "IDR", "Gross Credit (GC)": "150000", "Net Currency": "IDR",
				"Net Credit (NC)": "149000", "Commission (NC)": "1000"},
			kind: reconcile.KindCharge, minor: 150000, fee: 1000, cur: "IDR", time: "2024-02-01T09:00:00Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", eff: "order-9",
		},
		{
			name: "fees in another currency are not added",
			over: map[string]string{"Net Currency": "USD"},
			kind: reconcile.KindCharge, minor: 1000, cur: "EUR", time: "2024-02-01T09:00:00Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", eff: "order-9",
		},
		{
			name: "all four fee components add up",
			over: map[string]string{"Commission (NC)": "0.10", "Markup (NC)": ".05", "Scheme Fees (NC)": "0.02", "Interchange (NC)": "0.03"},
			kind: reconcile.KindCharge, minor: 1000, fee: 20, cur: "EUR", time: "2024-02-01T09:00:00Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", eff: "order-9",
		},
		{
			name: "a batch fee line uses the net pair and has no identity",
			over: map[string]string{"Type": "Fee", "Psp Reference": "", "Merchant Reference": "", "Modification Reference": "Fees May",
				"Gross Credit (GC)": "", "Net Credit (NC)": "", "Net Debit (NC)": "1.80", "Net Currency": "USD", "Commission (NC)": ""},
			kind: reconcile.KindFee, minor: -180, cur: "USD", time: "2024-02-01T09:00:00Z",
		},
		{
			name: "a new type is other, not an error",
			over: map[string]string{"Type": "SomethingNew", "Commission (NC)": ""},
			kind: reconcile.KindOther, minor: 1000, cur: "EUR", time: "2024-02-01T09:00:00Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", peff: "order-9",
		},
		{
			name: "zone of the merchant account, summer time",
			over: map[string]string{"Creation Date": "2024-07-01 10:00:00", "TimeZone": "CEST"},
			kind: reconcile.KindCharge, minor: 1000, fee: 20, cur: "EUR", time: "2024-07-01T08:00:00Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", eff: "order-9",
		},
		{
			name: "the default zone for other accounts",
			over: map[string]string{"Merchant Account": "ShopUS_ACCOUNT", "Creation Date": "2024-01-31 22:00:00", "TimeZone": "PST"},
			kind: reconcile.KindCharge, minor: 1000, fee: 20, cur: "EUR", time: "2024-02-01T06:00:00Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", eff: "order-9",
		},
		{
			name: "the repeated hour in autumn, first pass (CEST)",
			over: map[string]string{"Creation Date": "2024-10-27 02:30:00", "TimeZone": "CEST"},
			kind: reconcile.KindCharge, minor: 1000, fee: 20, cur: "EUR", time: "2024-10-27T00:30:00Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", eff: "order-9",
		},
		{
			name: "the repeated hour in autumn, second pass (CET)",
			over: map[string]string{"Creation Date": "2024-10-27 02:30:00", "TimeZone": "CET"},
			kind: reconcile.KindCharge, minor: 1000, fee: 20, cur: "EUR", time: "2024-10-27T01:30:00Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", eff: "order-9",
		},
		{
			name: "a wrong abbreviation does not move a time that is not ambiguous",
			over: map[string]string{"Merchant Account": "ShopUS_ACCOUNT", "Creation Date": "2024-06-04 10:20:40", "TimeZone": "PST"},
			kind: reconcile.KindCharge, minor: 1000, fee: 20, cur: "EUR", time: "2024-06-04T17:20:40Z",
			txid: "TT11AA22BB33CC44/TT11AA22BB33CC45", parent: "TT11AA22BB33CC44", eff: "order-9",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := only(t, header+row(settled(tt.over)), testOptions(t))
			if c.Call != "evidence" {
				t.Fatalf("got %s %q, want evidence", c.Call, c.Reason)
			}
			e := c.Evidence
			got := []any{e.Kind, e.Amount.Minor, e.Fee, e.Amount.Currency, e.Time.Format(time.RFC3339), e.TxID, e.ParentTxID, e.EffectKey, e.ParentEffectKey}
			want := []any{tt.kind, tt.minor, tt.fee, tt.cur, tt.time, tt.txid, tt.parent, tt.eff, tt.peff}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("kind, minor, fee, currency, time, txid, parent, effect key, parent effect key (-want +got):\n%s", diff)
			}
			if e.Time.Location() != time.UTC {
				t.Errorf("time %v is not UTC", e.Time)
			}
			if e.Line != 2 || e.Provider != "adyen" {
				t.Errorf("line %d provider %q", e.Line, e.Provider)
			}
		})
	}
}

func TestRejections(t *testing.T) {
	tests := []struct {
		name string
		row  string
		want string // a part of the reason
	}{
		{"unparseable amount", row(settled(map[string]string{"Gross Credit (GC)": "ten"})), `Gross Credit (GC) (EUR): amount "ten" is not a number`},
		{"two decimal points", row(settled(map[string]string{"Gross Credit (GC)": "1.2.3"})), `amount "1.2.3" is not a number`},
		{"too many decimals", row(settled(map[string]string{"Gross Credit (GC)": "10.001"})), "more decimals than the currency allows (2)"},
		{"decimals in JPY", row(settled(map[string]string{"Gross Currency": "JPY", "Gross Credit (GC)": "10.5"})), "(JPY): amount \"10.5\" has more decimals than the currency allows (0)"},
		{"unknown currency", row(settled(map[string]string{"Gross Currency": "EURO"})), `Gross Currency: unknown currency "EURO"`},
		{"empty currency", row(settled(map[string]string{"Gross Currency": ""})), "Gross Currency: empty currency"},
		{"bad net currency", row(settled(map[string]string{"Net Currency": "XYZ"})), `Net Currency: unknown currency "XYZ"`},
		{"bad fee", row(settled(map[string]string{"Markup (NC)": "0,1"})), `Markup (NC): amount "0,1" holds a comma`},
		{"thousands separator", row(settled(map[string]string{"Gross Credit (GC)": "1,000.00"})), "holds a comma"},
		{"mangled psp reference", row(settled(map[string]string{"Psp Reference": "8.81566E+15"})), `column Psp Reference holds "8.81566E+15", a number in scientific notation`},
		{"mangled merchant reference", row(settled(map[string]string{"Merchant Reference": "1.2E+7"})), "column Merchant Reference holds"},
		{"short row", "AcmeCo,ShopEU_ACCOUNT,X,Y\n", "short row: 4 fields, the header has 30"},
		{"long row", strings.TrimSuffix(row(settled(nil)), "\n") + ",extra\n", "long row"},
		{"bad date", row(settled(map[string]string{"Creation Date": "2024-02-30 10:00:00"})), `Creation Date "2024-02-30 10:00:00" is not a date`},
		{"date in another layout", row(settled(map[string]string{"Creation Date": "01/02/2024 10:00"})), "is not a date"},
		{"empty date", row(settled(map[string]string{"Creation Date": ""})), "Creation Date is empty"},
		{"debit and credit", row(settled(map[string]string{"Gross Debit (GC)": "1.00"})), "both Gross Debit (GC) (1.00) and Gross Credit (GC) (10.00) are filled"},
		{"no amount", row(settled(map[string]string{"Gross Credit (GC)": "", "Net Credit (NC)": ""})), "no amount"},
		{"empty type", row(settled(map[string]string{"Type": ""})), "Type is empty"},
		{"empty merchant account", row(settled(map[string]string{"Merchant Account": ""})), "Merchant Account is empty"},
		{"psp without modification", row(settled(map[string]string{"Modification Reference": ""})), "Modification Reference is empty on a row with Psp Reference TT11AA22BB33CC44"},
		{"bare quote", "AcmeCo,ShopEU_ACCOUNT,a\"b,x\n", "malformed CSV quoting"},
		{"junk after quote", "AcmeCo,\"ShopEU\"x,a,b\n", "malformed CSV quoting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := only(t, header+tt.row, testOptions(t))
			if c.Call != "reject" || !strings.Contains(c.Reason, tt.want) {
				t.Fatalf("got %s %q, want a rejection containing %q", c.Call, c.Reason, tt.want)
			}
			if c.Line != 2 {
				t.Errorf("line %d, want 2", c.Line)
			}
		})
	}
}

// Two malformed rows in a row must stay two outcomes with their own lines,
// and an unclosed quote must say which lines it swallowed.
func TestMalformedRowsStayApart(t *testing.T) {
	in := header +
		"AcmeCo,Shop\"EU,a\n" +
		"AcmeCo,Shop\"EU,b\n" +
		row(settled(nil)) +
		"AcmeCo,\"ShopEU,c\n" +
		row(settled(nil))
	calls, err := parseString(in, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"reject@2", "reject@3", "evidence@4", "reject@5"}
	if diff := cmp.Diff(want, ingesttest.Summary(calls)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if !strings.Contains(calls[3].Reason, "lines 5-6 were read as one row") {
		t.Errorf("reason %q does not name the swallowed lines", calls[3].Reason)
	}
}

func TestIgnoredAndBlank(t *testing.T) {
	in := header + "\n   \n" + strings.Repeat(",", 29) + "\n"
	calls, err := parseString(in, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []ingesttest.Call{{Call: "ignore", Line: 4, Reason: "empty row: every field is empty"}}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestFatal(t *testing.T) {
	tests := []struct {
		name string
		in   string
		opt  Options
		want string
	}{
		{"empty file", "", testOptions(t), "line 1: empty file"},
		{"missing columns", "Psp Reference,Type,Gross Currency\n", testOptions(t),
			"line 1: not a usable Adyen settlement details report: missing required column(s) Merchant Account, Creation Date, " +
				"Gross Currency, Gross Debit (GC), Gross Credit (GC) (or Net Currency, Net Debit (NC), Net Credit (NC))"},
		{"bad header quoting", "Psp \"Reference,Type\n", testOptions(t), "line 1: header:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseString(tt.in, tt.opt)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one starting with %q", err, tt.want)
			}
		})
	}
}

// A header-only report has no rows and no error; net-only columns are enough.
func TestNetOnlyHeader(t *testing.T) {
	in := "Merchant Account,Creation Date,Type,Net Currency,Net Debit (NC),Net Credit (NC)\n" +
		"ShopEU_ACCOUNT,2024-02-01 10:00:00,MerchantPayout,EUR,12.34,\n"
	c := only(t, in, testOptions(t))
	if c.Call != "evidence" || c.Evidence.Amount != (reconcile.Money{Minor: -1234, Currency: "EUR"}) || c.Evidence.Kind != reconcile.KindPayout {
		t.Fatalf("got %+v", c)
	}
	calls, err := parseString(header, testOptions(t))
	if err != nil || len(calls) != 0 {
		t.Fatalf("header only: %v %v", calls, err)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		head string
		want bool
	}{
		{header, true},
		{"\xEF\xBB\xBF" + header, true},
		{strings.ToLower(header), true},
		{header[:60], false}, // cut before Type
		{"Merchant Account;Psp Reference;Type\n", true},
		{"\"Merchant Account\",\"Psp Reference\",\"Type\"", true},
		{"id,amount,currency\n", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := Detect("x.csv", []byte(tt.head)); got != tt.want {
			t.Errorf("Detect(%.40q) = %v, want %v", tt.head, got, tt.want)
		}
	}
}

func TestSinkErrorStops(t *testing.T) {
	in := header + row(settled(nil)) + row(settled(nil))
	err := Parse(context.Background(), strings.NewReader(in), testOptions(t), &ingesttest.FailingSink{On: "evidence"})
	if !errors.Is(err, ingesttest.ErrSink) {
		t.Fatalf("got %v, want the sink's error", err)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Parse(ctx, strings.NewReader(header+row(settled(nil))), testOptions(t), &ingesttest.Recorder{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		header + row(settled(nil)),
		header + row(settled(map[string]string{"Type": "Refunded", "Gross Credit (GC)": "", "Gross Debit (GC)": "1.00"})),
		header + "AcmeCo,ShopEU_ACCOUNT,,,,2024-07-01 02:00:00,CEST,Fee,Fees,EUR,,,,USD,3.10,,,,,,,,42,,,,,,,\n",
		header + "AcmeCo,\"Shop\nEU\",a\n\n",
		"Merchant Account;Creation Date;Type;Net Currency;Net Debit (NC);Net Credit (NC)\nShopEU_ACCOUNT;2024-10-27 02:30:00;X;JPY;1;\n",
		header + row(settled(map[string]string{"Merchant Account": "ShopIN_ACCOUNT", "TimeZone": "IST"})),
		header + row(settled(map[string]string{"Merchant Account": "ShopUS_ACCOUNT", "TimeZone": ""})),
		header + row(settled(map[string]string{"Merchant Account": "ShopUS_ACCOUNT", "Creation Date": "2024-06-04 10:20:40", "TimeZone": "pst"})),
		header + row(settled(map[string]string{"Batch Number": "1E+3", "Reserved4": "2.4E+22"})),
		wideHeader + wideRow(wideSettled(map[string]string{"ARN": "1.2302025304E+022"})) + at("201", "2024-07-15 14:30:00", "CET"),
	} {
		f.Add([]byte(s))
	}
	for _, in := range ingesttest.Inputs(f, "testdata/*.csv") {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// With zones configured, and without: then the TimeZone column decides.
		for _, opt := range []Options{testOptions(t), {}} {
			for _, c := range ingesttest.Check(t, in, "adyen", func(sink reconcile.RowSink) error {
				return Parse(context.Background(), bytes.NewReader(in), opt, sink)
			}) {
				if e := c.Evidence; e != nil && (e.Time.IsZero() || e.Time.Location() != time.UTC) {
					t.Fatalf("line %d: time %v", e.Line, e.Time)
				}
			}
		}
	})
}

// benchInput is a realistic report of n rows: settled payments (a third of
// them paid in USD and settled in EUR), refunds and a few batch lines.
func benchInput(n int) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	for i := 0; i < n; i++ {
		switch {
		case i%50 == 49:
			fmt.Fprintf(&b, "AcmeCo,ShopEU_ACCOUNT,,,,2024-07-01 02:00:00,CEST,Fee,Transaction Fees %d,EUR,,,,EUR,%d.%02d,,,,,,,,%d,,,,,,,\n", i, i%100, i%97, i/1000)
		case i%10 == 9:
			fmt.Fprintf(&b, "AcmeCo,ShopEU_ACCOUNT,PSP%013d,order-%d,visa,2024-07-15 14:30:%02d,CEST,Refunded,MOD%013d,EUR,%d.%02d,,1,EUR,%d.%02d,,,,,,visadebit,refund-%d,%d,,,,,,,\n",
				i, i, i%60, i, i%500, i%100, i%500, i%100, i, i/1000)
		case i%3 == 0: // paid in another currency than the account settles in
			fmt.Fprintf(&b, "AcmeCo,ShopEU_ACCOUNT,PSP%013d,order-%d,mc,2024-07-15 14:30:%02d,CEST,Settled,MOD%013d,USD,,%d.%02d,1.0842,EUR,,%d.%02d,0.10,0.02,0.05,0.11,mccredit,,%d,,,,,,,\n",
				i, i, i%60, i, 1+i%900, i%100, i%800, i%100, i/1000)
		default:
			fmt.Fprintf(&b, "AcmeCo,ShopEU_ACCOUNT,PSP%013d,order-%d,visa,2024-07-15 14:30:%02d,CEST,Settled,MOD%013d,EUR,,%d.%02d,1,EUR,,%d.%02d,0.10,,0.05,0.11,visadebit,,%d,,,,,,,\n",
				i, i, i%60, i, 1+i%900, 26+i%74, 1+i%900, i%74, i/1000)
		}
	}
	return b.Bytes()
}

func BenchmarkParse(b *testing.B) {
	opt := testOptions(b)
	ingesttest.Bench(b, benchInput(100_000), func(r io.Reader) error {
		return Parse(context.Background(), r, opt, ingesttest.Discard{})
	})
}

func BenchmarkReadCSV(b *testing.B) {
	ingesttest.BenchReadCSV(b, benchInput(100_000))
}
