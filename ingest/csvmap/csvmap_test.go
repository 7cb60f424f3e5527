package csvmap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ingest/ingesttest"
	"reconcile/ingest/tabular"
)

func mustMapping(t testing.TB, js string) *Mapping {
	t.Helper()
	m, err := LoadMapping(strings.NewReader(js))
	if err != nil {
		t.Fatalf("LoadMapping: %v", err)
	}
	return m
}

func parse(m *Mapping, in string) (*ingesttest.Recorder, error) {
	rec := &ingesttest.Recorder{}
	err := Parse(context.Background(), strings.NewReader(in), Options{Mapping: m}, rec)
	return rec, err
}

func TestGolden(t *testing.T) {
	ingesttest.GoldenFiles(t, "testdata/*.csv", ingesttest.FormatOps, func(t *testing.T, path string, in []byte) ([]ingesttest.Call, error) {
		m := mustMapping(t, string(ingesttest.ReadFile(t, strings.TrimSuffix(path, ".csv")+".json")))
		if Detect(filepath.Base(path), in) {
			t.Errorf("Detect(%s) = true, want false", path)
		}
		rec, err := parse(m, string(in))
		return rec.Calls, err
	})
}

func TestLoadMappingErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name, js string
		want     []string // substrings, each naming a field
	}{
		{"empty object", `{}`, []string{
			`mapping field provider: "" must be a lower-case name`,
			`mapping field columns.time: is required`,
			`mapping field columns.amount: is required (or columns.debit and columns.credit)`,
			`mapping field currency: is required when there is no columns.currency`,
		}},
		{"unknown field", `{"provider": "x", "colums": {}}`, []string{`mapping: json: unknown field "colums"`}},
		{"syntax error", "{\n\"provider\": \"x\",\n}", []string{`mapping line 3: invalid character '}'`}},
		{"wrong type", "{\n\"skip_rows\": \"3\"}", []string{`mapping line 2: field skip_rows: json: cannot unmarshal string`}},
		{"two objects", `{"provider":"x"} {}`, []string{`mapping line 1: more than one JSON object`}},
		{"bad values", `{"provider": "Acme Bank", "delimiter": ";;", "decimal": "'", "skip_rows": -1,
			"time_layout": "DD.MM.YYYY", "time_zone": "Mars/Olympus", "currency": "EURO",
			"columns": {"time": "t", "amount": "a", "debit": "d", "kind": " "},
			"kind": "sale", "kinds": {"SALE": "sell"}, "statuses": {"X": "done"}}`, []string{
			`mapping field provider: "Acme Bank" must be a lower-case name`,
			`mapping field delimiter: ";;" must be one character`,
			`mapping field decimal: "'" must be "." or ","`,
			`mapping field skip_rows: -1 must not be negative`,
			`mapping field time_layout: "DD.MM.YYYY" is not a Go time layout`,
			`mapping field time_zone: "Mars/Olympus" is not an IANA time zone`,
			`mapping field currency: unknown currency "EURO"`,
			`mapping field columns.kind: column name is blank`,
			`mapping field columns.amount: name either an amount column or a debit and a credit column, not both`,
			`mapping field kind: "sale" is not one of charge, refund`,
			`mapping field kinds["SALE"]: "sell" is not one of charge, refund`,
			`mapping field statuses: needs columns.status`,
			`mapping field statuses["X"]: "done" is not one of pending, failed, ignore, final`,
		}},
		{"debit without credit", `{"provider": "x", "currency": "EUR", "columns": {"time": "t", "debit": "d"}}`, []string{
			`mapping field columns.debit: columns.debit and columns.credit go together`,
		}},
		{"direction without values", `{"provider": "x", "currency": "EUR", "columns": {"time": "t", "amount": "a", "direction": "dc"}}`, []string{
			`mapping field debit_values: is required with columns.direction`,
		}},
		{"values without direction", `{"provider": "x", "currency": "EUR", "debit_values": ["D"], "columns": {"time": "t", "amount": "a"}}`, []string{
			`mapping field debit_values: needs columns.direction`,
		}},
		{"kinds without column", `{"provider": "x", "currency": "EUR", "kinds": {"a": "fee"}, "columns": {"time": "t", "amount": "a"}}`, []string{
			`mapping field kinds: needs columns.kind`,
		}},
	}
	for _, tt := range tests {
		_, err := LoadMapping(strings.NewReader(tt.js))
		if err == nil {
			t.Errorf("%s: LoadMapping succeeded, want errors", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: LoadMapping error\n%v\ndoes not contain %q", tt.name, err, w)
			}
		}
		if got, want := strings.Count(err.Error(), "\n")+1, len(tt.want); got != want {
			t.Errorf("%s: LoadMapping gave %d problems, want %d:\n%v", tt.name, got, want, err)
		}
	}
	_, err := LoadMapping(strings.NewReader(`{"provider": "x", "columns": {}}`))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "columns.time" {
		t.Errorf("LoadMapping error %v: want a *FieldError for columns.time first", err)
	}
}

func TestExampleMappingInDocLoads(t *testing.T) {
	src, err := os.ReadFile("csvmap.go")
	if err != nil {
		t.Fatal(err)
	}
	// The example is the first block from "//\t{" to "//\t}".
	var js strings.Builder
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		if line == "//\t{" {
			in = true
		}
		if in {
			js.WriteString(strings.TrimPrefix(line, "//\t") + "\n")
		}
		if in && line == "//\t}" {
			break
		}
	}
	doc := mustMapping(t, js.String())
	file, err := os.ReadFile("testdata/acmebank.json")
	if err != nil {
		t.Fatal(err)
	}
	shipped := mustMapping(t, string(file))
	opts := []cmp.Option{cmp.AllowUnexported(Mapping{}), cmp.Comparer(func(a, b *time.Location) bool { return a.String() == b.String() })}
	if diff := cmp.Diff(shipped, doc, opts...); diff != "" {
		t.Errorf("the package doc's example differs from testdata/acmebank.json (-file +doc):\n%s", diff)
	}
	if doc.Provider != "acmebank" || doc.comma != ';' || doc.decimal != ',' || doc.loc.String() != "Europe/Berlin" {
		t.Errorf("example mapping resolved to comma %q decimal %q zone %v", doc.comma, doc.decimal, doc.loc)
	}
}

// simple is a mapping for "id,date,amount,currency" files.
const simple = `{"provider": "acmepay", "columns": {"tx_id": "id", "time": "date", "amount": "amount", "currency": "currency"}}`

func TestAmounts(t *testing.T) {
	tests := []struct {
		mapping, in string
		want        reconcile.Money
	}{
		{simple, "1.00,EUR", reconcile.Money{Minor: 100, Currency: "EUR"}},
		{simple, "-1.5,eur", reconcile.Money{Minor: -150, Currency: "EUR"}},
		{simple, `"1,250.00",EUR`, reconcile.Money{Minor: 125000, Currency: "EUR"}},
		{simple, "15000,JPY", reconcile.Money{Minor: 15000, Currency: "JPY"}},
		{simple, "-15000.00,JPY", reconcile.Money{Minor: -15000, Currency: "JPY"}},
		{simple, "12.345,KWD", reconcile.Money{Minor: 12345, Currency: "KWD"}},
		{simple, "1.2,KWD", reconcile.Money{Minor: 1200, Currency: "KWD"}},
		{simple, "(12.00),USD", reconcile.Money{Minor: -1200, Currency: "USD"}},
		{simple, "12.00-,USD", reconcile.Money{Minor: -1200, Currency: "USD"}},
		{strings.Replace(simple, `"provider"`, `"decimal": ",", "provider"`, 1), `"1.250,00",EUR`, reconcile.Money{Minor: 125000, Currency: "EUR"}},
		{strings.Replace(simple, `"provider"`, `"decimal": ",", "provider"`, 1), `"-0,5",EUR`, reconcile.Money{Minor: -50, Currency: "EUR"}},
		{strings.Replace(simple, `"provider"`, `"negate": true, "provider"`, 1), "7.00,EUR", reconcile.Money{Minor: -700, Currency: "EUR"}},
		// The provider picks the exponents: Stripe writes ISK with two decimals.
		{strings.Replace(simple, `"acmepay"`, `"stripe"`, 1), "100.50,ISK", reconcile.Money{Minor: 10050, Currency: "ISK"}},
	}
	for _, tt := range tests {
		rec, err := parse(mustMapping(t, tt.mapping), "id,date,amount,currency\nx,2024-01-02,"+tt.in+"\n")
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.in, err)
		}
		ev := rec.Records()
		if len(ev) != 1 {
			t.Errorf("Parse(%s) = %v, want one evidence", tt.in, rec.Calls)
			continue
		}
		if ev[0].Amount != tt.want {
			t.Errorf("Parse(%s).Amount = %v, want %v", tt.in, ev[0].Amount, tt.want)
		}
	}
}

func TestSigns(t *testing.T) {
	dc := `{"provider": "b", "currency": "EUR", "columns": {"time": "date", "amount": "amount", "direction": "dc"}, "debit_values": ["D", "DR"]}`
	dcStrict := strings.Replace(dc, `"debit_values"`, `"credit_values": ["C"], "debit_values"`, 1)
	pair := `{"provider": "b", "currency": "EUR", "columns": {"time": "date", "debit": "out", "credit": "in"}}`
	tests := []struct {
		mapping, header, row string
		want                 int64
		reject               string
	}{
		{dc, "date,amount,dc", "2024-01-02,5.00,D", -500, ""},
		{dc, "date,amount,dc", "2024-01-02,-5.00,dr", -500, ""},
		{dc, "date,amount,dc", "2024-01-02,5.00,C", 500, ""},
		{dc, "date,amount,dc", "2024-01-02,-5.00,", -500, ""},
		{dc, "date,amount,dc", "2024-01-02,-5.00,C", -500, ""},
		{dcStrict, "date,amount,dc", "2024-01-02,5.00,c", 500, ""},
		{dcStrict, "date,amount,dc", "2024-01-02,5.00,X", 0, `column "dc": "X" is neither a debit value (D, DR) nor a credit value (C)`},
		{pair, "date,out,in", "2024-01-02,5.00,", -500, ""},
		{pair, "date,out,in", "2024-01-02,,5.00", 500, ""},
		{pair, "date,out,in", "2024-01-02,-5.00,0", -500, ""},
		{pair, "date,out,in", "2024-01-02,,-5.00", -500, ""},
		{pair, "date,out,in", "2024-01-02,0.00,0.00", 0, ""},
		{pair, "date,out,in", "2024-01-02,,", 0, `columns "out" and "in" are both empty: no amount`},
		{pair, "date,out,in", "2024-01-02,1.00,2.00", 0, `columns "out" and "in" both have an amount (1.00, 2.00)`},
		{pair, "date,out,in", "2024-01-02,1.00x,", 0, `column "out": amount "1.00x" is not a number`},
	}
	for _, tt := range tests {
		rec, err := parse(mustMapping(t, tt.mapping), tt.header+"\n"+tt.row+"\n")
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.row, err)
		}
		ev := rec.Records()
		switch {
		case tt.reject != "":
			if diff := cmp.Diff([]ingesttest.Call{{Call: "reject", Line: 2, Reason: tt.reject}}, rec.Outcomes()); diff != "" {
				t.Errorf("Parse(%s) (-want +got):\n%s", tt.row, diff)
			}
		case len(ev) != 1 || ev[0].Amount.Minor != tt.want:
			t.Errorf("Parse(%s) = %v, want amount %d", tt.row, rec.Calls, tt.want)
		}
	}
}

func TestTimes(t *testing.T) {
	tests := []struct {
		layout, zone, in, want string
	}{
		{"", "", "2024-03-04", "2024-03-04T00:00:00Z"},
		{"", "", "2024-03-04T10:00:00+02:00", "2024-03-04T08:00:00Z"},
		{"", "", "2024-03-04 10:00:00", "2024-03-04T10:00:00Z"},
		{"", "", "2024-03-04T10:00", "2024-03-04T10:00:00Z"},
		{"", "", "2024-03-04T10:00:00.250Z", "2024-03-04T10:00:00.25Z"},
		{"", "Europe/Berlin", "2024-03-04", "2024-03-03T23:00:00Z"},
		{"", "Europe/Berlin", "2024-07-04 12:00", "2024-07-04T10:00:00Z"},
		{"", "Europe/Berlin", "2024-07-04T12:00:00Z", "2024-07-04T12:00:00Z"},
		{"02.01.2006", "Europe/Berlin", "31.03.2024", "2024-03-30T23:00:00Z"},
		{"02.01.2006", "Europe/Berlin", "01.04.2024", "2024-03-31T22:00:00Z"},
		{"01/02/2006 15:04", "America/New_York", "03/10/2024 01:30", "2024-03-10T06:30:00Z"},
		{"01/02/2006 15:04", "America/New_York", "03/10/2024 03:30", "2024-03-10T07:30:00Z"},
		{"2006-01-02 15:04 -0700", "Asia/Tokyo", "2024-01-01 09:00 +0000", "2024-01-01T09:00:00Z"},
	}
	for _, tt := range tests {
		js := `{"provider": "x", "currency": "EUR", "time_layout": "` + tt.layout + `", "time_zone": "` + tt.zone + `", "columns": {"time": "t", "amount": "a"}}`
		rec, err := parse(mustMapping(t, js), "t;a\n"+tt.in+";1\n")
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.in, err)
		}
		ev := rec.Records()
		if len(ev) != 1 {
			t.Errorf("Parse(%s in %s) = %v, want evidence", tt.in, tt.zone, rec.Calls)
			continue
		}
		if got := ev[0].Time.Format(time.RFC3339Nano); got != tt.want || ev[0].Time.Location() != time.UTC {
			t.Errorf("Parse(%s in %q).Time = %s (%v), want %s UTC", tt.in, tt.zone, got, ev[0].Time.Location(), tt.want)
		}
	}
}

func TestRejections(t *testing.T) {
	m := mustMapping(t, `{"provider": "acmepay", "columns": {"tx_id": "id", "time": "date", "amount": "amount",
		"currency": "currency", "effect_key": "key", "parent_effect_key": "pkey", "payment_intent": "pi", "parent_tx_id": "src", "fee": "fee"}}`)
	const header = "id,date,amount,currency,key,pkey,pi,src,fee\n"
	tests := []struct{ row, want string }{
		{"a,2024-01-02,1.0x,EUR,,,,,", `column "amount": amount "1.0x" is not a number`},
		{"a,2024-01-02,1.001,EUR,,,,,", `column "amount": amount "1.001" has more decimals than the currency allows (2)`},
		{"a,2024-01-02,1.5,JPY,,,,,", `column "amount": amount "1.5" has more decimals than the currency allows (0)`},
		{"a,2024-01-02,1.0001,KWD,,,,,", `column "amount": amount "1.0001" has more decimals than the currency allows (3)`},
		{"a,2024-01-02,1.8E+3,EUR,,,,,", `column "amount": amount "1.8E+3" is in scientific notation (a spreadsheet may have mangled it)`},
		{"a,2024-01-02,(-1.00),EUR,,,,,", `column "amount": amount "-1.00" has two signs`},
		{"a,2024-01-02,,EUR,,,,,", `column "amount" is empty: no amount`},
		{"a,2024-01-02,1.00,EUX,,,,,", `column "currency": unknown currency "EUX"`},
		{"a,2024-01-02,1.00,,,,,,", `column "currency" is empty: no currency`},
		{"1.8137E+15,2024-01-02,1.00,EUR,,,,,", `column "id": "1.8137E+15" is in scientific notation: a spreadsheet mangled the id and the original is lost`},
		{"a,2024-01-02,1.00,EUR,4.4E+10,,,,", `column "key": "4.4E+10" is in scientific notation: a spreadsheet mangled the id and the original is lost`},
		{"a,2024-01-02,1.00,EUR,,\"1,2E+11\",,,", `column "pkey": "1,2E+11" is in scientific notation: a spreadsheet mangled the id and the original is lost`},
		{"a,2024-01-02,1.00,EUR,,,9e+20,,", `column "pi": "9e+20" is in scientific notation: a spreadsheet mangled the id and the original is lost`},
		{"a,2024-01-02,1.00,EUR,,,,2.5E+17,", `column "src": "2.5E+17" is in scientific notation: a spreadsheet mangled the id and the original is lost`},
		{"a,2024-01-02,1.00,EUR,,,,,0.001", `column "fee": amount "0.001" has more decimals than the currency allows (2)`},
		{"a,02/01/2024,1.00,EUR,,,,,", `column "date": "02/01/2024" is not an ISO date or time such as 2024-03-31 or 2024-03-31T14:05:00Z (set time_layout for other forms)`},
		{"a,2024-02-30,1.00,EUR,,,,,", `column "date": "2024-02-30" is not an ISO date or time such as 2024-03-31 or 2024-03-31T14:05:00Z (set time_layout for other forms)`},
		{"a,,1.00,EUR,,,,,", `column "date" is empty: no date`},
		{"a,2024-01-02,1.00,EUR", `short row: 4 fields where the header has 9`},
		{"a,2024-01-02,1.00,EUR,,,,,,x", `long row: 10 fields where the header has 9 (a delimiter inside an unquoted value?)`},
		{`a,2024-01-02,"1.00"x,EUR,,,,,`, `malformed CSV at character 19: extraneous or missing " in quoted-field`},
		{`a,2024-01-02,1"00,EUR,,,,,`, `malformed CSV at character 15: bare " in non-quoted-field`},
	}
	for _, tt := range tests {
		rec, err := parse(m, header+tt.row+"\n")
		if err != nil {
			t.Fatalf("Parse(%s): %v", tt.row, err)
		}
		if diff := cmp.Diff([]ingesttest.Call{{Call: "reject", Line: 2, Reason: tt.want}}, rec.Outcomes()); diff != "" {
			t.Errorf("Parse(%s) (-want +got):\n%s", tt.row, diff)
		}
	}
}

func TestTwoMalformedRowsStayApart(t *testing.T) {
	m := mustMapping(t, simple)
	rec, err := parse(m, "id,date,amount,currency\na,2024-01-02,1\"0,EUR\nb,2024-01-02,2\"0,EUR\nc,2024-01-02,3.00,EUR\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []ingesttest.Call{
		{Call: "reject", Line: 2, Reason: `malformed CSV at character 15: bare " in non-quoted-field`},
		{Call: "reject", Line: 3, Reason: `malformed CSV at character 15: bare " in non-quoted-field`},
		{Call: "evidence", Line: 4},
	}
	if diff := cmp.Diff(want, rec.Outcomes()); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

func TestKindsAndStatuses(t *testing.T) {
	m := mustMapping(t, `{"provider": "p", "currency": "EUR", "columns": {"time": "t", "amount": "a", "kind": "k", "status": "s"},
		"kinds": {"Sale": "charge", " REFUND ": "refund", "hold": "ignore"},
		"statuses": {"PENDING": "pending", "declined": "failed", "void": "ignore", "ok": "final"}}`)
	in := "t,a,k,s\n" +
		"2024-01-02,1,sale,ok\n" +
		"2024-01-02,-1,refund,Pending\n" +
		"2024-01-02,1,SALE,DECLINED\n" +
		"2024-01-02,1,bonus,\n" +
		"2024-01-02,1,HOLD,ok\n" +
		"2024-01-02,1,sale,VOID\n" +
		",,,\n"
	rec, err := parse(m, in)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Kind            reconcile.Kind
		RawKind         string
		Pending, Failed bool
	}
	var gots []got
	for _, e := range rec.Records() {
		gots = append(gots, got{e.Kind, e.RawKind, e.Pending, e.Failed})
	}
	wantEv := []got{
		{reconcile.KindCharge, "sale", false, false},
		{reconcile.KindRefund, "refund", true, false},
		{reconcile.KindCharge, "SALE", false, true},
		{reconcile.KindOther, "bonus", false, false},
	}
	if diff := cmp.Diff(wantEv, gots); diff != "" {
		t.Errorf("evidence (-want +got):\n%s", diff)
	}
	wantIgn := []ingesttest.Call{
		{Call: "ignore", Line: 6, Reason: `k "HOLD" is mapped to ignore`},
		{Call: "ignore", Line: 7, Reason: `s "VOID" is mapped to ignore`},
		{Call: "ignore", Line: 8, Reason: "empty row"},
	}
	if diff := cmp.Diff(wantIgn, rec.Outcomes()[4:]); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	fixed := mustMapping(t, `{"provider": "p", "currency": "EUR", "kind": "payout", "columns": {"time": "t", "amount": "a"}}`)
	rec, err = parse(fixed, "t,a\n2024-01-02,-9\n")
	if ev := rec.Records(); err != nil || len(ev) != 1 || ev[0].Kind != reconcile.KindPayout || ev[0].RawKind != "" {
		t.Errorf("fixed kind: %v %v, want one payout", err, rec.Calls)
	}
}

func TestFatal(t *testing.T) {
	m := mustMapping(t, `{"provider": "p", "skip_rows": 2, "columns": {"tx_id": "Ref", "time": "Date", "amount": "Amount", "currency": "Currency"}, "metadata": {"iban": "Account"}}`)
	tests := []struct {
		name, in, want string
	}{
		{"missing columns", "pre\npre\nref;date;Value;Note\n", "line 3: missing required column(s) Amount, Currency, Account (the header has: ref, date, Value, Note)"},
		{"empty after preamble", "pre\npre\n", "line 3: no header row: the file is empty"},
		{"ends in preamble", "pre\n", "line 2: the file ends within the 2 lines of skip_rows, before the header"},
		{"empty", "", "line 1: the file ends within the 2 lines of skip_rows, before the header"},
	}
	for _, tt := range tests {
		rec, err := parse(m, tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: Parse error = %v, want %s", tt.name, err, tt.want)
		}
		if len(rec.Outcomes()) != 0 {
			t.Errorf("%s: outcomes %v, want none", tt.name, rec.Calls)
		}
	}
	if err := Parse(context.Background(), strings.NewReader("a\n"), Options{}, &ingesttest.Recorder{}); err == nil {
		t.Errorf("Parse without a mapping succeeded")
	}
	bad := &Mapping{Provider: "p"}
	var fe *FieldError
	if err := Parse(context.Background(), strings.NewReader("a\n"), Options{Mapping: bad}, &ingesttest.Recorder{}); !errors.As(err, &fe) {
		t.Errorf("Parse with an invalid mapping = %v, want a *FieldError", err)
	}
}

func TestLinesWithPreambleBOMAndQuotedNewlines(t *testing.T) {
	m := mustMapping(t, `{"provider": "p", "skip_rows": 1, "currency": "EUR", "columns": {"time": "t", "amount": "a", "description": "d"}}`)
	in := "\ufeffExport of 2024-01-02\r\nt;a;d\r\n2024-01-02;1;\"two\r\nlines\"\r\n\r\n2024-01-02;2;x\r\n"
	rec, err := parse(m, in)
	if err != nil {
		t.Fatal(err)
	}
	ev := rec.Records()
	if len(ev) != 2 || ev[0].Line != 3 || ev[1].Line != 6 || ev[0].Description != "two\nlines" {
		t.Errorf("Parse = %v, want evidence on lines 3 and 6", rec.Calls)
	}
	if want := "2024-01-02;1;\"two\nlines\""; ev[0].Raw != want {
		t.Errorf("Raw = %q, want %q", ev[0].Raw, want)
	}
}

func TestSharedMappingIsNotWritten(t *testing.T) {
	m := mustMapping(t, simple)
	before := *m
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			rec := &ingesttest.Recorder{}
			Parse(context.Background(), strings.NewReader("id,date,amount,currency\nx,2024-01-02,1,EUR\n"), Options{Mapping: m}, rec)
		}()
	}
	for range 4 {
		<-done
	}
	if !cmp.Equal(before, *m, cmp.AllowUnexported(Mapping{}), cmp.Comparer(func(a, b *time.Location) bool { return a == b })) {
		t.Errorf("Parse changed the shared mapping")
	}
}

func TestSinkErrorStopsParse(t *testing.T) {
	err := Parse(context.Background(), strings.NewReader("id,date,amount,currency\nx,2024-01-02,1,EUR\ny,2024-01-02,1,EUR\n"), Options{Mapping: mustMapping(t, simple)}, &ingesttest.FailingSink{On: "evidence"})
	if !errors.Is(err, ingesttest.ErrSink) {
		t.Errorf("Parse with a failing sink = %v, want %v", err, ingesttest.ErrSink)
	}
}

func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := "id,date,amount,currency\n" + strings.Repeat("x,2024-01-02,1,EUR\n", 5000)
	err := Parse(ctx, bytes.NewReader([]byte(in)), Options{Mapping: mustMapping(t, simple)}, &ingesttest.Recorder{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Parse with a cancelled context = %v, want %v", err, context.Canceled)
	}
}

// A skip_rows preamble line is bounded like any other line: a file whose
// preamble never ends is refused, not held.
func TestSkipRowsLineIsBounded(t *testing.T) {
	var js map[string]any
	if err := json.Unmarshal([]byte(simple), &js); err != nil {
		t.Fatal(err)
	}
	js["skip_rows"] = 1
	b, _ := json.Marshal(js)
	in := io.MultiReader(io.LimitReader(ones{}, tabular.MaxLine+1<<20), strings.NewReader("\nid,date,amount,currency\nx,2024-01-02,1,EUR\n"))
	err := Parse(context.Background(), in, Options{Mapping: mustMapping(t, string(b))}, &ingesttest.Recorder{})
	if err == nil || !strings.Contains(err.Error(), "skip_rows") {
		t.Errorf("Parse(a 65 MiB preamble line) = %v, want it refused at the bound", err)
	}
}

type ones struct{}

func (ones) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = '1'
	}
	return len(b), nil
}
