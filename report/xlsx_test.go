package report

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/xuri/excelize/v2"

	"reconcile"
)

// openXLSX writes r's spreadsheet and opens it again with excelize.
func openXLSX(t *testing.T, r *Result, esc []Escalation) *excelize.File {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteXLSX(&buf, r, esc); err != nil {
		t.Fatalf("WriteXLSX: %v", err)
	}
	f, err := excelize.OpenReader(&buf)
	if err != nil {
		t.Fatalf("open the written spreadsheet: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// rows reads a sheet's raw cell values: numbers as written, not formatted.
func rows(t *testing.T, f *excelize.File, sheet string) [][]string {
	t.Helper()
	rs, err := f.GetRows(sheet, excelize.Options{RawCellValue: true})
	if err != nil {
		t.Fatalf("GetRows(%q): %v", sheet, err)
	}
	return rs
}

func TestXLSXSheetsInOrderOnlyClassesWithFindings(t *testing.T) {
	f := openXLSX(t, sampleResult(), sampleEscalations())
	want := []string{"Summary", "Duplicated", "Missing", "Pending", "Mismatched", "Unexpected", "Deferred", "Compensation in doubt",
		"Actions", "Rejected rows", "Escalations", "Orphans"}
	if diff := cmp.Diff(want, f.GetSheetList()); diff != "" {
		t.Errorf("sheets (-want +got):\n%s", diff)
	}

	r := &Result{RunID: "r", Counts: map[string]int{"missing": 1},
		Discrepancies: []Discrepancy{{Class: reconcile.ClassMissing, EffectKey: "k", Provider: "stripe", Currency: "EUR", ExpectedMinor: 100}}}
	f = openXLSX(t, r, nil)
	want = []string{"Summary", "Missing", "Actions", "Rejected rows", "Escalations"}
	if diff := cmp.Diff(want, f.GetSheetList()); diff != "" {
		t.Errorf("sheets of a run without orphans (-want +got):\n%s", diff)
	}
	for _, s := range rows(t, f, "Summary") {
		if len(s) > 0 && strings.Contains(strings.ToLower(s[0]), "orphan") {
			t.Errorf("Summary mentions orphans in a run without any: %q", s)
		}
	}
}

func TestXLSXInputTextStaysLiteralText(t *testing.T) {
	for _, text := range trickyTexts {
		t.Run(text, func(t *testing.T) {
			r := &Result{RunID: text, AsOf: text, Counts: map[string]int{},
				Inputs: []Input{{URI: text, Format: text}},
				Discrepancies: []Discrepancy{{Class: reconcile.ClassMissing, EffectKey: text, Provider: text, Currency: "EUR", Reason: text,
					Transactions: []string{text}, Actions: []Action{{Kind: reconcile.ActionRedeliver, Key: text, Target: text, Outcome: reconcile.OutcomePlanned, Made: text}}}},
				Rejected: []Rejected{{URI: text, Line: 2, Reason: text, Raw: text}},
			}
			f := openXLSX(t, r, []Escalation{{Key: text, Subject: text, Reason: text, Note: text}})
			for _, c := range []struct {
				sheet string
				ref   string
			}{
				{"Summary", "B3"}, {"Summary", "B4"}, // run id, as of (text that is no time)
				{"Missing", "A2"}, {"Missing", "B2"}, {"Missing", "H2"}, {"Missing", "I2"}, // key, provider, transaction, reason
				{"Actions", "A2"}, {"Actions", "G2"}, {"Actions", "H2"}, {"Actions", "I2"}, // key, action key, target, made
				{"Rejected rows", "A2"}, {"Rejected rows", "C2"}, {"Rejected rows", "D2"},
				{"Escalations", "A3"}, {"Escalations", "B3"}, {"Escalations", "D3"}, {"Escalations", "H3"}, // key, subject, reason, note
			} {
				typ, err := f.GetCellType(c.sheet, c.ref)
				if err != nil {
					t.Fatal(err)
				}
				if typ != excelize.CellTypeInlineString && typ != excelize.CellTypeSharedString {
					t.Errorf("%s!%s is of type %v, want a string", c.sheet, c.ref, typ)
				}
				if formula, _ := f.GetCellFormula(c.sheet, c.ref); formula != "" {
					t.Errorf("%s!%s has formula %q", c.sheet, c.ref, formula)
				}
				got, _ := f.GetCellValue(c.sheet, c.ref)
				if got != text {
					t.Errorf("%s!%s = %q, want %q", c.sheet, c.ref, got, text)
				}
				style, _ := f.GetCellStyle(c.sheet, c.ref)
				if s, _ := f.GetStyle(style); s.CustomNumFmt == nil || *s.CustomNumFmt != "@" {
					t.Errorf("%s!%s has no text number format", c.sheet, c.ref)
				}
			}
			// The input's URI, in the summary's table of inputs.
			found := false
			for _, row := range rows(t, f, "Summary") {
				found = found || len(row) > 1 && row[0] == text && row[1] == text
			}
			if !found {
				t.Errorf("Summary has no input row %q", text)
			}
		})
	}
}

func TestXLSXAmountsAreNumbersInTheCurrencyDecimals(t *testing.T) {
	for _, tc := range []struct {
		provider, cur string
		minor         int64
		raw, shown    string
		format        string
	}{
		{"stripe", "EUR", 1999, "19.99", "19.99", "#,##0.00;[Red]-#,##0.00"},
		{"stripe", "EUR", -1420, "-14.2", "-14.20", "#,##0.00;[Red]-#,##0.00"},
		{"stripe", "EUR", 123456789012345, "1234567890123.45", "1,234,567,890,123.45", "#,##0.00;[Red]-#,##0.00"},
		{"stripe", "EUR", 10, "0.1", "0.10", "#,##0.00;[Red]-#,##0.00"},
		{"stripe", "JPY", 1234567, "1234567", "1,234,567", "#,##0;[Red]-#,##0"},
		{"stripe", "JPY", -5, "-5", "-5", "#,##0;[Red]-#,##0"},
		{"stripe", "KWD", 12345, "12.345", "12.345", "#,##0.000;[Red]-#,##0.000"},
		{"stripe", "KWD", -1, "-0.001", "-0.001", "#,##0.000;[Red]-#,##0.000"},
		{"stripe", "ISK", 12345, "123.45", "123.45", "#,##0.00;[Red]-#,##0.00"}, // Stripe: two decimals
		{"bank", "ISK", 12345, "12345", "12,345", "#,##0;[Red]-#,##0"},          // ISO 4217: none
		{"paypal", "HUF", 700, "700", "700", "#,##0;[Red]-#,##0"},
	} {
		t.Run(tc.provider+" "+tc.raw+" "+tc.cur, func(t *testing.T) {
			r := &Result{Counts: map[string]int{}, Discrepancies: []Discrepancy{{Class: reconcile.ClassMismatched, EffectKey: "k",
				Provider: tc.provider, Currency: tc.cur, ExpectedMinor: tc.minor, ObservedMinor: tc.minor}}}
			f := openXLSX(t, r, nil)
			for _, ref := range []string{"E2", "F2"} { // G2 and H2, the difference and at risk, are 0
				if typ, _ := f.GetCellType("Mismatched", ref); typ != excelize.CellTypeUnset && typ != excelize.CellTypeNumber {
					t.Errorf("%s is of type %v, want a number", ref, typ)
				}
				raw, _ := f.GetCellValue("Mismatched", ref, excelize.Options{RawCellValue: true})
				if raw != tc.raw {
					t.Errorf("%s holds %q, want %q", ref, raw, tc.raw)
				}
				exp, _ := reconcile.Exponent(tc.provider, tc.cur)
				if got, err := reconcile.ParseMinor(raw, exp, '.'); err != nil || got != tc.minor {
					t.Errorf("%s holds %q = %d minor units (%v), want exactly %d", ref, raw, got, err, tc.minor)
				}
				style, _ := f.GetCellStyle("Mismatched", ref)
				if s, _ := f.GetStyle(style); s.CustomNumFmt == nil || *s.CustomNumFmt != tc.format {
					t.Errorf("%s has number format %v, want %q", ref, s.CustomNumFmt, tc.format)
				}
			}
		})
	}
}

func TestXLSXMixedDecimalsOfOneCurrencyAreNotAdded(t *testing.T) {
	r := &Result{Counts: map[string]int{}, Discrepancies: []Discrepancy{
		{Class: reconcile.ClassMissing, EffectKey: "a", Provider: "stripe", Currency: "ISK", ExpectedMinor: 12345},
		{Class: reconcile.ClassMissing, EffectKey: "b", Provider: "bank", Currency: "ISK", ExpectedMinor: 500},
	}}
	f := openXLSX(t, r, nil)
	got := map[string]string{}
	for _, row := range rows(t, f, "Summary") {
		if len(row) > 3 && row[0] == "Missing" {
			got[row[1]] = row[3]
		}
	}
	want := map[string]string{"ISK (2 decimals)": "123.45", "ISK (0 decimals)": "500"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("missing money per currency in the Summary (-want +got):\n%s", diff)
	}
}

func TestXLSXDatesAreDateCells(t *testing.T) {
	r, esc := sampleResult(), sampleEscalations()
	f := openXLSX(t, r, esc)
	check := func(sheet, ref string, want time.Time) {
		t.Helper()
		raw, _ := f.GetCellValue(sheet, ref, excelize.Options{RawCellValue: true})
		if _, err := strconv.ParseFloat(raw, 64); err != nil {
			t.Errorf("%s!%s holds %q, want a date serial number", sheet, ref, raw)
		}
		shown, _ := f.GetCellValue(sheet, ref)
		if w := want.UTC().Format("2006-01-02 15:04:05"); shown != w {
			t.Errorf("%s!%s shows %q, want %q", sheet, ref, shown, w)
		}
	}
	check("Duplicated", "C2", r.Discrepancies[0].Time)
	check("Summary", "B6", r.StartedAt)
	check("Summary", "B7", r.FinishedAt)
	check("Escalations", "F3", *esc[0].OpenedAt)
	check("Escalations", "G3", *esc[0].PagedAt)
	check("Escalations", "H4", *esc[1].ResolvedAt)
	if v, _ := f.GetCellValue("Escalations", "H3"); v != "" {
		t.Errorf("an open escalation's resolved time shows %q, want an empty cell", v)
	}
}

func TestXLSXTableSheetsHaveFrozenHeaderAndFilter(t *testing.T) {
	r := sampleResult()
	f := openXLSX(t, r, sampleEscalations())
	filters := map[string]string{}
	for _, n := range f.GetDefinedName() {
		if n.Name == "_xlnm._FilterDatabase" {
			filters[n.Scope] = n.RefersTo
		}
	}
	for sheet, want := range map[string]string{
		"Duplicated":    "'Duplicated'!$A$1:$M$3",
		"Unexpected":    "'Unexpected'!$A$1:$K$3",
		"Actions":       "'Actions'!$A$1:$J$9",
		"Rejected rows": "'Rejected rows'!$A$1:$D$4",
		"Escalations":   "'Escalations'!$A$2:$J$4", // below its caption
		"Orphans":       "'Orphans'!$A$1:$G$2",
	} {
		top := 1
		if sheet == "Escalations" {
			top = 2
		}
		p, err := f.GetPanes(sheet)
		if err != nil || !p.Freeze || p.YSplit != top || p.TopLeftCell != "A"+strconv.Itoa(top+1) {
			t.Errorf("GetPanes(%q) = %+v, %v, want the first %d rows frozen", sheet, p, err, top)
		}
		if got := filters[sheet]; got != want {
			t.Errorf("autofilter of %q = %q, want %q", sheet, got, want)
		}
		if h, _ := f.GetCellValue(sheet, "A"+strconv.Itoa(top)); h == "" {
			t.Errorf("%q has no header", sheet)
		}
	}
	reason, _ := excelize.ColumnNumberToName(columnOf(rows(t, f, "Duplicated")[0], "Reason") + 1)
	if w, _ := f.GetColWidth("Duplicated", reason); w < 30 {
		t.Errorf("the Reason column %s is %v wide, want room for words", reason, w)
	}
	// Two actions: a row two lines high, not one.
	if h, _ := f.GetRowHeight("Duplicated", 3); h < 2*lineHeight {
		t.Errorf("a row of two actions is %v points high", h)
	}
}

func TestXLSXCutsTextLongerThanACell(t *testing.T) {
	r := sampleResult()
	f := openXLSX(t, r, nil)
	got, _ := f.GetCellValue("Rejected rows", "D4")
	if n := utf16Len(got); n > maxCellText {
		t.Errorf("the cell holds %d UTF-16 units, more than %d", n, maxCellText)
	}
	if !strings.HasPrefix(got, "[CUT to fit a cell: the full text has 40000 characters") || !strings.HasSuffix(got, " …") {
		t.Errorf("the cut cell does not say so: starts %q, ends %q", got[:80], got[len(got)-20:])
	}
	kept := strings.TrimSuffix(got[strings.Index(got, "] ")+2:], " …")
	if !strings.HasPrefix(longRaw(), kept) || len(kept) < 32000 {
		t.Errorf("the cut cell keeps %d bytes that are not the start of the row", len(kept))
	}
}

func TestFitCell(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		cut  bool
	}{
		{"short", "abc", false},
		{"exactly a cell", strings.Repeat("x", maxCellText), false},
		{"a cell of pairs", strings.Repeat("🚀", maxCellText/2), false},
		{"one unit over", strings.Repeat("x", maxCellText+1), true},
		{"pairs one unit over", "xx" + strings.Repeat("🚀", maxCellText/2), true},
		{"40k characters", longRaw(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fitCell(tc.in)
			if !tc.cut {
				if got != tc.in {
					t.Errorf("fitCell changed text of %d units", utf16Len(tc.in))
				}
				return
			}
			if n := utf16Len(got); n > maxCellText || n < maxCellText-2 {
				t.Errorf("fitCell = %d UTF-16 units, want just under %d", n, maxCellText)
			}
			if !utf8.ValidString(got) || !strings.HasPrefix(got, "[CUT") {
				t.Errorf("fitCell = %q…, want valid text starting with the marker", got[:40])
			}
		})
	}
}

// TestXLSXTotalsEqualJSON sums every amount column of every class sheet
// as a spreadsheet would, in float64, and checks that the sums rounded to
// the currency's decimals are the JSON's minor units exactly; and that the
// Summary's figures are.
func TestXLSXTotalsEqualJSON(t *testing.T) {
	r := randomResult(sampleResult(), 7, 3000)
	want := sumJSON(t, r)
	f := openXLSX(t, r, nil)
	exps := map[string]int{} // one exponent per currency in this world
	for _, d := range r.Discrepancies {
		exps[d.Currency], _ = reconcile.Exponent(d.Provider, d.Currency)
	}
	toMinor := func(sum float64, cur string) int64 { return int64(math.Round(sum * math.Pow10(exps[cur]))) }

	got := jsonSums{map[[2]string]int64{}, map[[2]string]int64{}, map[[2]string]int64{}, map[string]int64{}}
	for _, c := range reconcile.Classes[1:] {
		sums := map[string]*[3]float64{}
		rs := rows(t, f, sheetName(c))
		cols := []int{columnOf(rs[0], "Expected"), columnOf(rs[0], "Observed"), columnOf(rs[0], "At risk")}
		for i, row := range rs {
			if i == 0 {
				continue
			}
			s := sums[row[3]]
			if s == nil {
				s = &[3]float64{}
				sums[row[3]] = s
			}
			for j, col := range cols {
				v, err := strconv.ParseFloat(row[col], 64)
				if err != nil {
					t.Fatalf("%s row %d column %d: %v", sheetName(c), i+1, 5+j, err)
				}
				s[j] += v
			}
		}
		for cur, s := range sums {
			k := [2]string{string(c), cur}
			got.expected[k], got.observed[k], got.atRisk[k] = toMinor(s[0], cur), toMinor(s[1], cur), toMinor(s[2], cur)
		}
	}
	// The Summary's money per class and currency, read exactly.
	summary := jsonSums{map[[2]string]int64{}, map[[2]string]int64{}, map[[2]string]int64{}, map[string]int64{}}
	section := ""
	for _, row := range rows(t, f, "Summary") {
		if len(row) == 1 {
			section = row[0]
			continue
		}
		exact := func(s, cur string) int64 {
			v, err := reconcile.ParseMinor(s, exps[cur], '.')
			if err != nil {
				t.Fatalf("Summary %q: %v", row, err)
			}
			return v
		}
		switch {
		case section == "Money per class and currency" && len(row) == 6 && row[0] != "Class":
			k := [2]string{classOf(t, row[0]), row[1]}
			summary.expected[k], summary.observed[k], summary.atRisk[k] = exact(row[3], row[1]), exact(row[4], row[1]), exact(row[5], row[1])
		case section == "Money at risk per currency" && len(row) >= 2 && row[0] != "Currency":
			summary.moneyAtRisk[row[0]] = exact(row[1], row[0])
		}
	}
	opt := cmp.AllowUnexported(jsonSums{})
	if diff := cmp.Diff(want, summary, opt); diff != "" {
		t.Errorf("Summary figures against the JSON (-want +got):\n%s", diff)
	}
	got.moneyAtRisk = want.moneyAtRisk // not a figure of the class sheets
	if diff := cmp.Diff(want, got, opt); diff != "" {
		t.Errorf("class sheet totals against the JSON (-want +got):\n%s", diff)
	}
}

func TestXLSXSplitsTablesLongerThanASheet(t *testing.T) {
	defer func(n int) { maxSheetRows = n }(maxSheetRows)
	maxSheetRows = 2
	r := &Result{Counts: map[string]int{"missing": 5}}
	for i := range 5 {
		r.Discrepancies = append(r.Discrepancies, Discrepancy{Class: reconcile.ClassMissing, EffectKey: strconv.Itoa(i), Provider: "stripe", Currency: "EUR", ExpectedMinor: 1})
	}
	for i := range 3 {
		r.Rejected = append(r.Rejected, Rejected{URI: "f.csv", Line: i + 2, Reason: "bad"})
	}
	f := openXLSX(t, r, nil)
	want := []string{"Summary", "Missing", "Missing (2)", "Missing (3)", "Actions", "Rejected rows", "Rejected rows (2)", "Escalations"}
	if diff := cmp.Diff(want, f.GetSheetList()); diff != "" {
		t.Fatalf("sheets (-want +got):\n%s", diff)
	}
	var keys []string
	for _, sheet := range want[1:4] {
		rs := rows(t, f, sheet)
		if rs[0][0] != "Effect key" {
			t.Errorf("%s has no header: %q", sheet, rs[0])
		}
		for _, row := range rs[1:] {
			keys = append(keys, row[0])
		}
	}
	if diff := cmp.Diff([]string{"0", "1", "2", "3", "4"}, keys); diff != "" {
		t.Errorf("effect keys over the Missing sheets (-want +got):\n%s", diff)
	}
	filters := map[string]string{}
	for _, n := range f.GetDefinedName() {
		if n.Name == "_xlnm._FilterDatabase" {
			filters[n.Scope] = n.RefersTo
		}
	}
	if got := filters["Missing (3)"]; got != "'Missing (3)'!$A$1:$K$2" {
		t.Errorf("filter of the last Missing sheet = %q", got)
	}
	found := false
	for _, row := range rows(t, f, "Summary") {
		found = found || len(row) > 2 && row[0] == "Missing" && row[2] == "Missing to Missing (3)"
	}
	if !found {
		t.Errorf("the Summary does not say the missing findings fill three sheets")
	}
}

func TestActionLinesLineUp(t *testing.T) {
	r := sampleResult()
	got := actionLines(&r.Discrepancies[1], 0) // two refunds of a JPY duplicate
	want := "compensate 5,000 JPY: applied\ncompensate 5,000 JPY: refused"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actionLines (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ in, want string }{
		{"0", "0"}, {"999", "999"}, {"1000", "1,000"}, {"-1234567.891", "-1,234,567.891"}, {"123456.78", "123,456.78"}, {"-0.05", "-0.05"},
	} {
		if got := groupThousands(tc.in); got != tc.want {
			t.Errorf("groupThousands(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// classOf is the class the Summary names name.
func classOf(t *testing.T, name string) string {
	t.Helper()
	for _, c := range reconcile.Classes {
		if className(c) == name {
			return string(c)
		}
	}
	t.Fatalf("the Summary names a class %q that is none", name)
	return ""
}
