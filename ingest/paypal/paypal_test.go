package paypal

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ingest/ingesttest"
)

func parseString(in string) ([]ingesttest.Call, error) {
	return ingesttest.Run(func(sink reconcile.RowSink) error {
		return Parse(context.Background(), strings.NewReader(in), Options{}, sink)
	})
}

func TestGolden(t *testing.T) {
	ingesttest.GoldenFiles(t, "testdata/stl_*", ingesttest.FormatLinedCalls, func(t *testing.T, path string, in []byte) ([]ingesttest.Call, error) {
		if !Detect(filepath.Base(path), in) {
			t.Errorf("Detect(%s) = false", path)
		}
		return parseString(string(in))
	})
}

const chRow = `"CH","Transaction ID","Invoice ID","PayPal Reference ID","PayPal Reference ID Type","Transaction Event Code",` +
	`"Transaction Initiation Date","Transaction Completion Date","Transaction Debit or Credit","Gross Transaction Amount",` +
	`"Gross Transaction Currency","Fee Debit or Credit","Fee Amount","Fee Currency","Custom Field","Consumer ID",` +
	`"Payment Tracking ID","Store ID","Bank Reference ID","Credit Transactional Fee","Credit Promotional Fee","Credit Term"`

// sb writes an SB row of the chRow layout from column values.
func sb(v map[string]string) string {
	names := []string{"Transaction ID", "Invoice ID", "PayPal Reference ID", "PayPal Reference ID Type", "Transaction Event Code",
		"Transaction Initiation Date", "Transaction Completion Date", "Transaction Debit or Credit", "Gross Transaction Amount",
		"Gross Transaction Currency", "Fee Debit or Credit", "Fee Amount", "Fee Currency", "Custom Field", "Consumer ID",
		"Payment Tracking ID", "Store ID", "Bank Reference ID", "Credit Transactional Fee", "Credit Promotional Fee", "Credit Term"}
	defaults := map[string]string{
		"Transaction ID": "9XY12345AB6789012", "Transaction Event Code": "T0006",
		"Transaction Initiation Date": "2024/05/01 09:15:00 -0700", "Transaction Completion Date": "2024/05/01 09:15:02 -0700",
		"Transaction Debit or Credit": "CR", "Gross Transaction Amount": "1000", "Gross Transaction Currency": "USD",
	}
	rec := []string{`"SB"`}
	for _, n := range names {
		x, ok := v[n]
		if !ok {
			x = defaults[n]
		}
		rec = append(rec, strconv.Quote(x))
	}
	return strings.Join(rec, ",")
}

// build wraps sections of SB rows into a whole report whose footers add up,
// by a reckoning of its own: the sums of the rows' readable amounts.
func build(sections ...[]string) string {
	type tot struct{ gc, gd, fc, fd int64 }
	var b strings.Builder
	b.WriteString("\"RH\",2024/05/02 03:10:11 -0700,\"A\",\"TESTACCT1234X\",009,\n\"FH\",01\n")
	report := map[string]*tot{}
	n := 0
	footer := func(typ string, m map[string]*tot, count int) {
		var curs []string
		for c := range m {
			curs = append(curs, c)
		}
		sort.Strings(curs)
		for _, c := range curs {
			x := m[c]
			fmt.Fprintf(&b, "%q,%q,%d,%d,%d,%d,\"CR\",0,\"CR\",0,\"CR\",0,\"CR\",0,\"CR\",0,\"CR\",0,%d\n", typ, c, x.gc, x.gd, x.fc, x.fd, count)
		}
	}
	for _, rows := range sections {
		b.WriteString("\"SH\",2024/05/01 00:00:00 -0700,2024/05/01 23:59:59 -0700,\"TESTACCT1234X\",\"\"\n" + chRow + "\n")
		sec := map[string]*tot{}
		for _, r := range rows {
			b.WriteString(r + "\n")
			rec, err := csv.NewReader(strings.NewReader(r)).Read()
			if err != nil || len(rec) < 14 {
				continue
			}
			add := func(flag, amt, cur string, credit, debit func(*tot) *int64) {
				v, err := strconv.ParseUint(amt, 10, 63)
				flag = strings.ToUpper(flag)
				cur, cerr := reconcile.NormalizeCurrency(cur)
				if err != nil || cerr != nil || v == 0 || (flag != "CR" && flag != "DR") {
					return
				}
				for _, m := range []map[string]*tot{sec, report} {
					if m[cur] == nil {
						m[cur] = &tot{}
					}
					if flag == "CR" {
						*credit(m[cur]) += int64(v)
					} else {
						*debit(m[cur]) += int64(v)
					}
				}
			}
			add(rec[8], rec[9], rec[10], func(t *tot) *int64 { return &t.gc }, func(t *tot) *int64 { return &t.gd })
			add(rec[11], rec[12], rec[13], func(t *tot) *int64 { return &t.fc }, func(t *tot) *int64 { return &t.fd })
		}
		footer("SF", sec, len(rows))
		fmt.Fprintf(&b, "\"SC\",%d\n", len(rows))
		n += len(rows)
	}
	footer("RF", report, n)
	fmt.Fprintf(&b, "\"RC\",%d\n\"FF\",%d\n", n, n)
	return b.String()
}

// one parses a report of one SB row and returns that row's outcome.
func one(t *testing.T, v map[string]string) ingesttest.Call {
	t.Helper()
	calls, err := parseString(build([]string{sb(v)}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	for _, c := range calls {
		if c.Line == 5 {
			return c
		}
	}
	t.Fatalf("no outcome for line 5: %+v", calls)
	return ingesttest.Call{}
}

func TestMapping(t *testing.T) {
	tests := []struct {
		name       string
		v          map[string]string
		kind       reconcile.Kind
		minor, fee int64
		cur, time  string
		parent     string
		eff        string
	}{
		{"payment, credit, fee debited", map[string]string{"Fee Debit or Credit": "DR", "Fee Amount": "59", "Fee Currency": "USD", "Invoice ID": "inv-1"},
			reconcile.KindCharge, 1000, 59, "USD", "2024-05-01T16:15:00Z", "", "inv-1"},
		{"refund, debit, fee credited back", map[string]string{"Transaction Event Code": "T1107", "Transaction Debit or Credit": "DR",
			"Fee Debit or Credit": "CR", "Fee Amount": "20", "Fee Currency": "USD", "PayPal Reference ID": "PARENT0001", "PayPal Reference ID Type": "TXN"},
			reconcile.KindRefund, -1000, -20, "USD", "2024-05-01T16:15:00Z", "PARENT0001", ""},
		{"reference that is not a transaction", map[string]string{"PayPal Reference ID": "I-ABC", "PayPal Reference ID Type": "SUB", "Custom Field": "eff-9"},
			reconcile.KindCharge, 1000, 0, "USD", "2024-05-01T16:15:00Z", "", "eff-9"},
		{"invoice wins over custom field", map[string]string{"Invoice ID": "inv-2", "Custom Field": "eff-9"},
			reconcile.KindCharge, 1000, 0, "USD", "2024-05-01T16:15:00Z", "", "inv-2"},
		{"JPY: two implied decimals become none", map[string]string{"Gross Transaction Currency": "JPY", "Gross Transaction Amount": "150000",
			"Fee Debit or Credit": "DR", "Fee Amount": "5500", "Fee Currency": "JPY"},
			reconcile.KindCharge, 1500, 55, "JPY", "2024-05-01T16:15:00Z", "", ""},
		{"HUF is zero-decimal at PayPal", map[string]string{"Gross Transaction Currency": "huf", "Gross Transaction Amount": "250000"},
			reconcile.KindCharge, 2500, 0, "HUF", "2024-05-01T16:15:00Z", "", ""},
		{"KWD gains a third decimal", map[string]string{"Gross Transaction Currency": "KWD", "Gross Transaction Amount": "1234"},
			reconcile.KindCharge, 12340, 0, "KWD", "2024-05-01T16:15:00Z", "", ""},
		{"fee in another currency is not folded in", map[string]string{"Fee Debit or Credit": "DR", "Fee Amount": "40", "Fee Currency": "EUR"},
			reconcile.KindCharge, 1000, 0, "USD", "2024-05-01T16:15:00Z", "", ""},
		{"zero fee without flag", map[string]string{"Fee Amount": "0"},
			reconcile.KindCharge, 1000, 0, "USD", "2024-05-01T16:15:00Z", "", ""},
		{"withdrawal", map[string]string{"Transaction Event Code": "T0400", "Transaction Debit or Credit": "DR", "Gross Transaction Amount": "300000"},
			reconcile.KindPayout, -300000, 0, "USD", "2024-05-01T16:15:00Z", "", ""},
		{"time zone east of UTC, across midnight", map[string]string{"Transaction Initiation Date": "2024/05/01 01:30:00 +0900"},
			reconcile.KindCharge, 1000, 0, "USD", "2024-04-30T16:30:00Z", "", ""},
		{"lower-case flag and code", map[string]string{"Transaction Debit or Credit": "dr", "Transaction Event Code": "t1201"},
			reconcile.KindDispute, -1000, 0, "USD", "2024-05-01T16:15:00Z", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := one(t, tt.v)
			if c.Call != "evidence" {
				t.Fatalf("got %s %q, want evidence", c.Call, c.Reason)
			}
			e := c.Evidence
			got := []any{e.Kind, e.Amount.Minor, e.Fee, e.Amount.Currency, e.Time.Format(time.RFC3339), e.ParentTxID, e.EffectKey}
			want := []any{tt.kind, tt.minor, tt.fee, tt.cur, tt.time, tt.parent, tt.eff}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("kind, minor, fee, currency, time, parent, effect key (-want +got):\n%s", diff)
			}
			if e.Time.Location() != time.UTC || e.Provider != "paypal" || e.TxID != "9XY12345AB6789012" {
				t.Errorf("time %v, provider %q, txid %q", e.Time, e.Provider, e.TxID)
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	for code, want := range map[string]reconcile.Kind{
		"T0000": reconcile.KindCharge, "T0003": reconcile.KindCharge, "T0006": reconcile.KindCharge,
		"T0106": reconcile.KindFee, "T1108": reconcile.KindFee, "T1109": reconcile.KindFee,
		"T0200": reconcile.KindTransfer, "T0300": reconcile.KindTransfer, "T2201": reconcile.KindTransfer,
		"T0400": reconcile.KindPayout, "T0403": reconcile.KindPayout, "T1101": reconcile.KindPayout,
		"T1104": reconcile.KindTransfer, "T1114": reconcile.KindTransfer, "T1115": reconcile.KindTransfer,
		"T1100": reconcile.KindRefund, "T1106": reconcile.KindRefund, "T1107": reconcile.KindRefund,
		"T1105": reconcile.KindAdjustment, "T1110": reconcile.KindAdjustment,
		"T1201": reconcile.KindDispute, "T1202": reconcile.KindDispute, "T1200": reconcile.KindAdjustment,
		"T0800": reconcile.KindAdjustment, "T1500": reconcile.KindAdjustment, "T2103": reconcile.KindAdjustment,
		"T1300": reconcile.KindOther, "T9900": reconcile.KindOther, "T9999": reconcile.KindOther, "X1": reconcile.KindOther, "": reconcile.KindOther,
	} {
		if got := kindOf(code, false); got != want {
			t.Errorf("kindOf(%q, false) = %s, want %s", code, got, want)
		}
		if want == reconcile.KindCharge {
			want = reconcile.KindTransfer // a payment sent
		}
		if got := kindOf(code, true); got != want {
			t.Errorf("kindOf(%q, true) = %s, want %s", code, got, want)
		}
	}
}

func TestRejections(t *testing.T) {
	tests := []struct {
		name string
		row  string
		want string
	}{
		{"amount with decimals", sb(map[string]string{"Gross Transaction Amount": "12.50"}), `Gross Transaction Amount "12.50" is not an STL amount`},
		{"negative amount", sb(map[string]string{"Gross Transaction Amount": "-100"}), `Gross Transaction Amount "-100" is not an STL amount`},
		{"empty amount", sb(map[string]string{"Gross Transaction Amount": ""}), "Gross Transaction Amount is empty"},
		{"JPY with a fraction", sb(map[string]string{"Gross Transaction Currency": "JPY", "Gross Transaction Amount": "15050"}),
			"Gross Transaction Amount 15050 is 150.50 JPY, but PayPal uses 0 decimals for JPY"},
		{"fee with a fraction of a yen", sb(map[string]string{"Gross Transaction Currency": "JPY", "Gross Transaction Amount": "15000",
			"Fee Debit or Credit": "DR", "Fee Amount": "4350", "Fee Currency": "JPY"}), "Fee Amount 4350 is 43.50 JPY"},
		{"unknown currency", sb(map[string]string{"Gross Transaction Currency": "EURO"}), `Gross Transaction Currency: unknown currency "EURO"`},
		{"empty currency", sb(map[string]string{"Gross Transaction Currency": ""}), "Gross Transaction Currency: empty currency"},
		{"empty fee currency", sb(map[string]string{"Fee Debit or Credit": "DR", "Fee Amount": "30"}), "Fee Currency: empty currency"},
		{"bad flag", sb(map[string]string{"Transaction Debit or Credit": "C"}), `Transaction Debit or Credit is "C", want CR or DR`},
		{"fee without flag", sb(map[string]string{"Fee Amount": "30", "Fee Currency": "USD"}), "Fee Debit or Credit is empty for an amount of 30"},
		{"mangled invoice", sb(map[string]string{"Invoice ID": "2.44123E+11"}), `column Invoice ID holds "2.44123E+11", a number in scientific notation`},
		{"mangled transaction id", sb(map[string]string{"Transaction ID": "9.01234E+16"}), `column Transaction ID holds "9.01234E+16", a number in scientific notation`},
		{"mangled custom field", sb(map[string]string{"Custom Field": "4.4E+09"}), `column Custom Field holds "4.4E+09"`},
		{"mangled reference id", sb(map[string]string{"PayPal Reference ID": "1.2E+15", "PayPal Reference ID Type": "TXN"}), "column PayPal Reference ID holds"},
		{"bad date", sb(map[string]string{"Transaction Initiation Date": "2024/02/30 10:00:00 -0700"}), `Transaction Initiation Date "2024/02/30 10:00:00 -0700" is not a date`},
		{"date without offset", sb(map[string]string{"Transaction Initiation Date": "2024/05/01 10:00:00"}), "is not a date like 2006/01/02 15:04:05 -0700"},
		{"empty transaction id", sb(map[string]string{"Transaction ID": ""}), "Transaction ID is empty"},
		{"empty event code", sb(map[string]string{"Transaction Event Code": ""}), "Transaction Event Code is empty"},
		{"short row", `"SB","9XY12345AB6789012","inv-1"`, "short row: 3 fields, the column header (CH) has 22"},
		{"long row", sb(nil) + `,"x"`, "long row"},
		{"bad quoting", `"SB","9XY"Z","inv-1"`, "malformed CSV quoting"},
		{"unknown row type", `"ZZ","x"`, `unknown STL row type "ZZ"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls, err := parseString(build([]string{tt.row}))
			if tt.name == "unknown row type" {
				// Not an SB row: the section's count of 1 no longer holds.
				calls, err = parseString(strings.Replace(build([]string{sb(nil)}), chRow+"\n", chRow+"\n"+tt.row+"\n", 1))
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got *ingesttest.Call
			for i := range calls {
				if calls[i].Line == 5 {
					got = &calls[i]
				}
			}
			if got == nil || got.Call != "reject" || !strings.Contains(got.Reason, tt.want) {
				t.Fatalf("got %+v, want a rejection on line 5 containing %q", got, tt.want)
			}
		})
	}
}

func TestMinor(t *testing.T) {
	tests := []struct {
		v      int64
		cur    string
		want   int64
		reason string
	}{
		{1234, "USD", 1234, ""},
		{150000, "JPY", 1500, ""},
		{150001, "JPY", 0, "150001 is 1500.01 JPY, but PayPal uses 0 decimals for JPY"},
		{250000, "HUF", 2500, ""},
		{123400, "TWD", 1234, ""},
		{1234, "KWD", 12340, ""},
		{1234, "BHD", 12340, ""},
		{0, "JPY", 0, ""},
		{999999999999999999, "KWD", 0, "999999999999999999 is out of range in KWD"},
	}
	for _, tt := range tests {
		exp, err := reconcile.Exponent("paypal", tt.cur)
		if err != nil {
			t.Fatal(err)
		}
		got, reason := minor(tt.v, tt.cur, exp)
		if got != tt.want || reason != tt.reason {
			t.Errorf("minor(%d, %s) = %d, %q; want %d, %q", tt.v, tt.cur, got, reason, tt.want, tt.reason)
		}
	}
}

func TestFatal(t *testing.T) {
	good := build([]string{
		sb(map[string]string{"Fee Debit or Credit": "DR", "Fee Amount": "59", "Fee Currency": "USD"}),
		sb(map[string]string{"Transaction ID": "2ND000000000000002", "Gross Transaction Currency": "EUR", "Transaction Debit or Credit": "DR"}),
	})
	if _, err := parseString(good); err != nil {
		t.Fatalf("the unaltered report fails: %v", err)
	}
	lines := strings.SplitAfter(good, "\n")
	cut := func(n int) string { return strings.Join(lines[:n], "") }
	tests := []struct {
		name    string
		in      string
		want    string
		corrupt bool
	}{
		{"empty file", "", "line 1: empty file", false},
		{"smashpig-style excerpt without RH", strings.Join(lines[2:], ""), `line 1: looks like a PayPal settlement report (STL), but its first row is SH, not the report header (RH): the RH and FH rows that start the file are missing; the file may be an excerpt or cut at the top`, false},
		{"not an STL file", "notes,1\n", `line 1: not a PayPal settlement report (STL): the first row is "notes", not a report header (RH)`, false},
		{"truncated in the body", cut(6), "line 6: corrupt or truncated STL: the file ends without its file footer (FF)", true},
		{"truncated before FF", cut(len(lines) - 2), "corrupt or truncated STL: the file ends without its file footer (FF)", true},
		{"section count", strings.Replace(good, `"SC",2`, `"SC",3`, 1), "line 9: corrupt or truncated STL: section footer (SC) says 3 rows, found 2", true},
		{"section total", strings.Replace(good, `"SF","USD",1000,0,0,59`, `"SF","USD",1000,0,0,60`, 1),
			"line 8: corrupt or truncated STL: section footer (SF) says USD fee credits 0 and debits 60, the rows add up to 0 and 59", true},
		{"section gross", strings.Replace(good, `"SF","EUR",0,1000`, `"SF","EUR",0,999`, 1),
			"line 7: corrupt or truncated STL: section footer (SF) says EUR gross credits 0 and debits 999, the rows add up to 0 and 1000", true},
		{"count in the totals row", strings.Replace(good, `"CR",0,2`+"\n"+`"SF","USD"`, `"CR",0,1`+"\n"+`"SF","USD"`, 1),
			"line 7: corrupt or truncated STL: section footer (SF) says 1 rows, found 2", true},
		{"report total", strings.Replace(good, `"RF","USD",1000`, `"RF","USD",1001`, 1), "line 11: corrupt or truncated STL: report footer (RF) says USD gross credits 1001", true},
		{"report count", strings.Replace(good, `"RC",2`, `"RC",20`, 1), "line 12: corrupt or truncated STL: report footer (RC) says 20 rows, found 2", true},
		{"file count", strings.Replace(good, `"FF",2`, `"FF",1`, 1), "line 13: corrupt or truncated STL: file footer (FF) says 1 rows, found 2", true},
		{"no totals for a currency", strings.Replace(good, lines[6], "", 1), "line 8: corrupt or truncated STL: there are EUR rows but no section footer (SF) totals for EUR", true},
		{"no totals for two currencies", strings.Replace(strings.Replace(good, lines[6], "", 1), lines[7], "", 1),
			"line 7: corrupt or truncated STL: there are EUR, USD rows but no section footer (SF) totals for EUR, USD", true},
		{"section without SC", strings.Replace(good, lines[8], "", 1), "corrupt or truncated STL: report footer (RF) comes before the section that starts on line 3 has its section record count (SC)", true},
		{"rows after FF", good + `"SB","x"` + "\n", "line 14: corrupt or truncated STL: a row follows the file footer (FF) on line 13", true},
		{"unreadable row after FF", good + `"SB","x"y"` + "\n", "line 14: corrupt or truncated STL: a row follows the file footer (FF) on line 13", true},
		{"second RH", lines[0] + good, "line 2: corrupt or truncated STL: a second report header (RH)", true},
		{"FF without RC", strings.Replace(good, lines[11], "", 1), "corrupt or truncated STL: the file footer (FF) comes without a report record count (RC)", true},
		{"SB before CH", strings.Replace(good, lines[3], "", 1), "line 4: corrupt or truncated STL: a section body row (SB) before any column header (CH)", true},
		{"CH without required columns", strings.Replace(good, "Gross Transaction Amount", "Gross Amount", 1),
			"line 4: column header (CH): missing required column(s) Gross Transaction Amount", false},
		{"a transaction detail report (TRR)", strings.Replace(good, lines[6], `"SF",2`+"\n", 1), "line 7: corrupt or truncated STL: section footer (SF) has 2 fields", true},
		{"TRR-like footer with a count", strings.Replace(good, lines[6], `"SF","20039",0,0,0,0`+"\n", 1),
			`line 7: section footer (SF): unknown currency "20039"; is this a PayPal settlement report (STL)?`, false},
		{"bad quoting in the first row", `"RH"x,1` + "\n", "line 1: not a PayPal settlement report (STL)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseString(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one containing %q", err, tt.want)
			}
			if errors.Is(err, ErrCorrupt) != tt.corrupt {
				t.Errorf("errors.Is(err, ErrCorrupt) = %v, want %v", !tt.corrupt, tt.corrupt)
			}
		})
	}
}

// A row rejected for its quoting may have been an SB row: the counts allow
// for it, and the totals it may have changed are not compared.
func TestUnreadableRowKeepsCounts(t *testing.T) {
	in := build([]string{sb(nil), `"SB","9XY"Z"`})
	calls, err := parseString(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ignore@1", "ignore@2", "ignore@3", "ignore@4", "evidence@5", "reject@6", "ignore@7", "ignore@8", "ignore@9", "ignore@10", "ignore@11"}
	if diff := cmp.Diff(want, ingesttest.Summary(calls)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name, head string
		want       bool
	}{
		{"STL-20240501.01.009.CSV", `"RH",2024/05/02 03:10:11 -0700,"A","X",009,`, true},
		{"STL-20240501.01.009.TAB", "RH\t2024/05/02 03:10:11 -0700\tA", true},
		{"stl.csv", "\xEF\xBB\xBF\"RH\",2024", true},
		{"stl.csv", "RH", true},
		{"stl.csv", `"SH","2026/01/06 00:00:00 -0800"`, false},
		{"TRR-20240501.01.008.CSV", `"RH",2024/05/02 03:10:11 -0700,"A","X",008,`, false},
		{"x.csv", "RHX,1", false},
		{"x.csv", "Company Account,Merchant Account", false},
		{"x.csv", "", false},
	}
	for _, tt := range tests {
		if got := Detect(tt.name, []byte(tt.head)); got != tt.want {
			t.Errorf("Detect(%q, %q) = %v, want %v", tt.name, tt.head, got, tt.want)
		}
	}
}

func TestSinkErrorStops(t *testing.T) {
	err := Parse(context.Background(), strings.NewReader(build([]string{sb(nil)})), Options{}, &ingesttest.FailingSink{On: "ignore"})
	if !errors.Is(err, ingesttest.ErrSink) {
		t.Fatalf("got %v, want the sink's error", err)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Parse(ctx, strings.NewReader(build([]string{sb(nil)})), Options{}, &ingesttest.Recorder{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(build([]string{sb(nil)})))
	f.Add([]byte(build([]string{sb(map[string]string{"Fee Debit or Credit": "DR", "Fee Amount": "5500", "Fee Currency": "JPY",
		"Gross Transaction Currency": "JPY", "Gross Transaction Amount": "150000"}), `"SB","x"y"`}, nil)))
	f.Add([]byte("RH\tx\nFH\t01\nSH\ta\nCH\tTransaction ID\tTransaction Event Code\nSB\t1\tT0006\nSF\tUSD\t0\t0\t0\t0\nSC\t1\nRC\t1\nFF\t1\n"))
	for _, name := range []string{"stl_comma.csv", "stl_tab.txt", "stl_rejects.csv"} {
		f.Add(ingesttest.ReadFile(f, filepath.Join("testdata", name)))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, c := range ingesttest.Check(t, in, "paypal", func(sink reconcile.RowSink) error {
			return Parse(context.Background(), bytes.NewReader(in), Options{}, sink)
		}) {
			if e := c.Evidence; e != nil && e.Time.IsZero() {
				t.Fatalf("line %d: time %v", e.Line, e.Time)
			}
		}
	})
}

// benchInput is a realistic one-section report of n SB rows in two
// currencies, with footers that add up.
func benchInput(n int) []byte {
	rows := make([]string, n)
	for i := range rows {
		cur, code, flag, fee := "USD", "T0006", "CR", "DR"
		if i%3 == 0 {
			cur = "EUR"
		}
		if i%10 == 9 {
			code, flag, fee = "T1107", "DR", "CR"
		}
		rows[i] = fmt.Sprintf(`"SB","%017d","inv-%d","","","%s",2024/05/01 09:%02d:%02d -0700,2024/05/01 09:%02d:%02d -0700,"%s",%d,"%s","%s",%d,"%s","cust-%d","PAYER%07d","","","",,,`,
			i, i, code, i%60, i%59, i%60, i%59, flag, 100+i%99000, cur, fee, 30+i%500, cur, i, i%5000)
	}
	return []byte(build(rows))
}

func BenchmarkParse(b *testing.B) {
	ingesttest.Bench(b, benchInput(100_000), func(r io.Reader) error {
		return Parse(context.Background(), r, Options{}, ingesttest.Discard{})
	})
}

func BenchmarkReadCSV(b *testing.B) {
	ingesttest.BenchReadCSV(b, benchInput(100_000))
}

// A spreadsheet-mangled value in a column the parser does not read keeps
// the row, flagged; in a column it reads, the row is rejected (TestRejections).
func TestMangledUnreadColumns(t *testing.T) {
	tests := []struct {
		name    string
		v       map[string]string
		mangled string
		meta    map[string]string // other Metadata entries the row must keep
	}{
		{"bank reference id", map[string]string{"Bank Reference ID": "1.2302025304E+022"}, "Bank Reference ID",
			map[string]string{"bank_reference_id": "1.2302025304E+022"}},
		{"two unread columns", map[string]string{"Consumer ID": "3.1E+11", "Store ID": "7E+05", "Invoice ID": "inv-7"}, "Consumer ID, Store ID",
			map[string]string{"consumer_id": "3.1E+11", "store_id": "7E+05", "invoice_id": "inv-7"}},
		{"a column the parser does not know", map[string]string{"Credit Term": "1.5E+3"}, "Credit Term",
			map[string]string{"Credit Term": "1.5E+3"}},
		{"no mangled value", map[string]string{"Bank Reference ID": "1047000000001"}, "",
			map[string]string{"bank_reference_id": "1047000000001"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := one(t, tt.v)
			if c.Call != "evidence" {
				t.Fatalf("Parse(SB with %v) = %s %q, want evidence", tt.v, c.Call, c.Reason)
			}
			e := c.Evidence
			if got := e.Metadata["mangled"]; got != tt.mangled {
				t.Errorf("Parse(SB with %v): Metadata[mangled] = %q, want %q", tt.v, got, tt.mangled)
			}
			for k, want := range tt.meta {
				if got := e.Metadata[k]; got != want {
					t.Errorf("Parse(SB with %v): Metadata[%s] = %q, want %q", tt.v, k, got, want)
				}
			}
			if e.TxID != "9XY12345AB6789012" || e.Kind != reconcile.KindCharge || e.Amount.Minor != 1000 {
				t.Errorf("Parse(SB with %v) = %s %s %d, want the charge 9XY12345AB6789012 of 1000", tt.v, e.TxID, e.Kind, e.Amount.Minor)
			}
		})
	}
}

// A payment code (T00xx) debited is a payment we sent, never a charge; the
// other codes keep their kind whatever the direction.
func TestKindByDirection(t *testing.T) {
	tests := []struct {
		code, flag string
		want       reconcile.Kind
	}{
		{"T0006", "CR", reconcile.KindCharge},
		{"T0006", "DR", reconcile.KindTransfer},
		{"T0000", "CR", reconcile.KindCharge},
		{"T0000", "DR", reconcile.KindTransfer},
		{"T0001", "DR", reconcile.KindTransfer}, // a mass payment we sent
		{"T0002", "DR", reconcile.KindTransfer},
		{"T0013", "CR", reconcile.KindCharge},
		{"t0007", "dr", reconcile.KindTransfer},
		{"T0400", "DR", reconcile.KindPayout},
		{"T0400", "CR", reconcile.KindPayout},
		{"T1107", "DR", reconcile.KindRefund},
		{"T1106", "DR", reconcile.KindRefund},
		{"T1201", "DR", reconcile.KindDispute},
		{"T1201", "CR", reconcile.KindDispute},
		{"T1101", "CR", reconcile.KindPayout},     // reversal of a withdrawal to the bank
		{"T1104", "DR", reconcile.KindTransfer},   // reversal of a bank deposit
		{"T1105", "CR", reconcile.KindAdjustment}, // release of an account hold
		{"T1114", "CR", reconcile.KindTransfer},   // a mass payment we sent, reversed
		{"T1115", "CR", reconcile.KindTransfer},   // a mass payment we sent, refunded
		{"T9999", "DR", reconcile.KindOther},
	}
	for _, tt := range tests {
		c := one(t, map[string]string{"Transaction Event Code": tt.code, "Transaction Debit or Credit": tt.flag})
		if c.Call != "evidence" {
			t.Errorf("Parse(%s %s) = %s %q, want evidence", tt.code, tt.flag, c.Call, c.Reason)
			continue
		}
		e := c.Evidence
		if e.Kind != tt.want || e.RawKind != strings.ToUpper(tt.code) {
			t.Errorf("Parse(%s %s) = kind %s, raw kind %q; want %s, %q", tt.code, tt.flag, e.Kind, e.RawKind, tt.want, strings.ToUpper(tt.code))
		}
	}
}

func TestHeadless(t *testing.T) {
	whole := build([]string{sb(nil)})
	lines := strings.SplitAfter(whole, "\n")
	body := strings.Join(lines[2:], "") // SH ... FF
	tests := []struct {
		name, file, head string
		whole            bool
		want             string // "" when the head does not look like a headless STL file
	}{
		{"body without RH and FH", "stl.csv", body, true,
			"looks like a PayPal settlement report (STL): its SH, CH, SB, SF, SC, RF, RC and FF rows are there, but the RH and FH rows that start the file are missing; the file may be an excerpt or cut at the top"},
		{"without RH only", "stl.csv", strings.Join(lines[1:], ""), true,
			"its FH, SH, CH, SB, SF, SC, RF, RC and FF rows are there, but the RH row that starts the file is missing;"},
		{"an excerpt without its footers", "stl.csv", strings.Join(lines[3:5], ""), true,
			"its CH and SB rows are there, but the RH, FH and SH rows that start the file are missing, and so are the SF, SC, RF, RC and FF rows that end it; the file may be an excerpt or cut at the top"},
		{"the start of a longer file", "stl.csv", strings.Join(lines[3:5], "") + `"SB","1`, false,
			"its CH and SB rows are there, but the RH, FH and SH rows that start the file are missing; the file may be an excerpt"},
		{"tab separated, BOM, CRLF", "stl.txt", "\xEF\xBB\xBFSH\tx\r\nCH\tTransaction ID\r\nSB\t1\r\n", false,
			"its SH, CH and SB rows are there, but the RH and FH rows"},
		{"a whole report", "stl.csv", whole, true, ""},
		{"a transaction detail report", "TRR-20240501.01.008.CSV", body, true, ""},
		{"only footers", "stl.csv", `"SF","USD",0,0,0,0` + "\n" + `"SC",0` + "\n", true, ""},
		{"another CSV", "x.csv", "SB,1\nnotes,2\n", true, ""},
		{"empty", "x.csv", "", true, ""},
	}
	for _, tt := range tests {
		got := Headless(tt.file, []byte(tt.head), tt.whole)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("%s: Headless(%q, %q, %v) = %q, want %q", tt.name, tt.file, tt.head, tt.whole, got, tt.want)
		}
	}
}
