package report

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xuri/excelize/v2"

	"reconcile"
)

// The tests of this file are what a controller reads the workbook for:
// the verdict and the figures to tie out first, the difference of a
// mismatch, cells a filter and a formula can use, and a workbook that reads
// right in other tools and on paper.

// cleanResult is a run that needs no person: one missing charge, made
// again.
func cleanResult() *Result {
	return &Result{RunID: "run-clean", AsOf: "2026-11-28T00:00:00Z", Applied: true, Counts: map[string]int{"confirmed": 5, "missing": 1},
		Inputs: []Input{{URI: "s3://settlements/clean.csv", Format: "stripe-itemized", Rows: 6, Evidence: 6}},
		Discrepancies: []Discrepancy{{Class: reconcile.ClassMissing, EffectKey: "k", Provider: "stripe", Currency: "EUR", ExpectedMinor: 100,
			Actions: []Action{{Kind: reconcile.ActionRedeliver, Key: "k", Outcome: reconcile.OutcomeApplied, AmountMinor: 100, Currency: "EUR", Made: "pi_1"}}}},
		StartedAt: t0, FinishedAt: t0.Add(time.Minute)}
}

// headings are the Summary's section headings (a row of one cell), by row
// index.
func headings(rs [][]string) map[string]int {
	out := map[string]int{}
	for i, row := range rs {
		if len(row) == 1 && row[0] != "" && i > 0 {
			out[row[0]] = i
		}
	}
	return out
}

// section is the rows of a Summary section below its header row, up to the
// next blank row.
func section(t *testing.T, rs [][]string, heading string) [][]string {
	t.Helper()
	at, ok := headings(rs)[heading]
	if !ok {
		t.Fatalf("the Summary has no section %q", heading)
		return nil
	}
	var out [][]string
	for _, row := range rs[at+2:] {
		if len(row) == 0 {
			break
		}
		out = append(out, row)
	}
	return out
}

func TestXLSXSummaryOpensWithTheVerdict(t *testing.T) {
	for _, tc := range []struct {
		name    string
		r       *Result
		verdict string
		reasons []string
	}{
		{"needs a person", sampleResult(), "Verdict: needs a person", []string{"2 mismatched amounts", "2 unexpected transactions",
			"1 compensation in doubt", "1 action refused by the provider", "2 findings handed to a person", "1 orphan"}},
		{"reconciled", cleanResult(), "Verdict: reconciled", []string{"nothing needs a person"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := openXLSX(t, tc.r, nil)
			rs := rows(t, f, "Summary")
			if got := rs[1][0]; got != tc.verdict {
				t.Errorf("Summary A2 = %q, want %q", got, tc.verdict)
			}
			if tc.r.NeedsPerson() != strings.HasSuffix(tc.verdict, "needs a person") {
				t.Fatalf("the test's verdict disagrees with NeedsPerson")
			}
			for _, w := range tc.reasons {
				if len(rs[1]) < 2 || !strings.Contains(rs[1][1], w) {
					t.Errorf("Summary B2 = %q, want it to say %q", rs[1][1:], w)
				}
			}
			h := headings(rs)
			order := []string{"Money at risk per currency", "Confirmed volume per currency", "Gross, fees and net per input and currency",
				"Inputs", "Findings per class", "Money per class and currency", "Actions", "Elsewhere in this workbook"}
			var got []string
			for _, name := range order {
				if _, ok := h[name]; ok {
					got = append(got, name)
				}
			}
			slices.SortFunc(got, func(a, b string) int { return h[a] - h[b] })
			if diff := cmp.Diff(order, got); diff != "" {
				t.Errorf("Summary sections in order (-want +got):\n%s", diff)
			}
			if at := h["Money at risk per currency"]; at > 14 {
				t.Errorf("money at risk starts on row %d, below what a screen shows first", at+1)
			}
		})
	}
}

func TestXLSXSummaryConfirmedVolume(t *testing.T) {
	// Without volumes in the result, the count, and the summary says that
	// is all it has.
	f := openXLSX(t, sampleResult(), nil)
	got := section(t, rows(t, f, "Summary"), "Confirmed volume per currency")
	if len(got) != 1 || len(got[0]) < 3 || got[0][0] != "All currencies" || got[0][1] != "120" || !strings.Contains(got[0][2], "not in the result") {
		t.Errorf("confirmed volume without amounts = %q, want one row of the count 120 saying the amounts are not in the result", got)
	}

	defer func(f func(*Result) []Volume) { confirmedVolumes = f }(confirmedVolumes)
	confirmedVolumes = func(*Result) []Volume {
		return []Volume{{Provider: "stripe", Currency: "JPY", Count: 20, AmountMinor: 1234567},
			{Provider: "stripe", Currency: "EUR", Count: 100, AmountMinor: 123456789}}
	}
	f = openXLSX(t, sampleResult(), nil)
	got = section(t, rows(t, f, "Summary"), "Confirmed volume per currency")
	want := [][]string{{"EUR", "100", "1234567.89"}, {"JPY", "20", "1234567"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("confirmed volume per currency (-want +got):\n%s", diff)
	}
}

func TestXLSXSummaryInputTotals(t *testing.T) {
	r := sampleResult()
	f := openXLSX(t, r, nil)
	got := section(t, rows(t, f, "Summary"), "Gross, fees and net per input and currency")
	if len(got) != 1 || !strings.Contains(got[0][0], "Not in the result") {
		t.Errorf("input totals without totals in the result = %q, want a row saying they are not in the result", got)
	}

	defer func(f func(*Input) []Volume) { inputTotals = f }(inputTotals)
	inputTotals = func(in *Input) []Volume {
		if in.Format != "stripe-itemized" {
			return nil
		}
		return []Volume{
			{Provider: "stripe", Currency: "EUR", Kind: reconcile.KindCharge, Count: 120, AmountMinor: 1_000_000, FeeMinor: 29_000},
			{Provider: "stripe", Currency: "EUR", Kind: reconcile.KindRefund, Count: 3, AmountMinor: -4_500},
			{Provider: "stripe", Currency: "JPY", Kind: reconcile.KindCharge, Count: 8, AmountMinor: 80_000, FeeMinor: 2_900},
		}
	}
	f = openXLSX(t, r, nil)
	got = section(t, rows(t, f, "Summary"), "Gross, fees and net per input and currency")
	uri := r.Inputs[0].URI
	want := [][]string{
		{uri, "EUR", "charge", "120", "10000", "290", "9710"},
		{"", "EUR", "refund", "3", "-45", "0", "-45"},
		{"", "EUR", "all kinds", "123", "9955", "290", "9665"},
		{"", "JPY", "charge", "8", "80000", "2900", "77100"}, // one kind: its total is its row
		{r.Inputs[1].URI, "", "", "", "", "", "ingested before: not read again in this run"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gross, fees and net per input and currency (-want +got):\n%s", diff)
	}
}

// column is the index of the column titled title in a header row, or -1.
func columnOf(header []string, title string) int { return slices.Index(header, title) }

func TestXLSXMismatchedRowsShowTheDifference(t *testing.T) {
	r := sampleResult()
	f := openXLSX(t, r, nil)
	rs := rows(t, f, "Mismatched")
	col := columnOf(rs[0], "Difference")
	if col < 0 {
		t.Fatalf("the Mismatched sheet has no Difference column: %q", rs[0])
	}
	i := 0
	for _, d := range r.Discrepancies {
		if d.Class != reconcile.ClassMismatched {
			continue
		}
		i++
		exp, _ := reconcile.Exponent(d.Provider, d.Currency)
		got, err := reconcile.ParseMinor(rs[i][col], exp, '.')
		if want := d.ObservedMinor - d.ExpectedMinor; err != nil || got != want {
			t.Errorf("Difference of %s = %q (%v), want %d minor units (observed − expected)", d.EffectKey, rs[i][col], err, want)
		}
		ref, _ := excelize.CoordinatesToCellName(col+1, i+1)
		style, _ := f.GetCellStyle("Mismatched", ref)
		if s, _ := f.GetStyle(style); s.CustomNumFmt == nil || !strings.HasPrefix(*s.CustomNumFmt, "#,##0") {
			t.Errorf("Difference %s has number format %v, want the currency's", ref, s.CustomNumFmt)
		}
	}
}

func TestXLSXCellsAFilterCanUse(t *testing.T) {
	r := sampleResult()
	f := openXLSX(t, r, sampleEscalations())

	// No dash for an empty cell: an empty cell.
	for _, sheet := range f.GetSheetList() {
		for i, row := range rows(t, f, sheet) {
			for j, v := range row {
				if slices.Contains(strings.Split(v, "\n"), "—") {
					ref, _ := excelize.CoordinatesToCellName(j+1, i+1)
					t.Errorf("%s!%s = %q, want an empty cell for nothing", sheet, ref, v)
				}
			}
		}
	}

	// As of is a date.
	rs := rows(t, f, "Summary")
	at := slices.IndexFunc(rs, func(row []string) bool { return len(row) > 0 && row[0] == "As of (UTC)" })
	if at < 0 {
		t.Fatalf("the Summary has no row As of (UTC)")
	}
	ref, _ := excelize.CoordinatesToCellName(2, at+1)
	raw, _ := f.GetCellValue("Summary", ref, excelize.Options{RawCellValue: true})
	shown, _ := f.GetCellValue("Summary", ref)
	if _, err := strconv.ParseFloat(raw, 64); err != nil || shown != "2026-11-28 00:00:00" {
		t.Errorf("As of holds %q shown %q, want a date serial number shown 2026-11-28 00:00:00", raw, shown)
	}

	// One transaction id to a cell: each one is a whole cell of its
	// finding's row, and a filter on the column finds it.
	for _, c := range []reconcile.Class{reconcile.ClassDuplicated, reconcile.ClassMismatched, reconcile.ClassUnexpected} {
		rs := rows(t, f, sheetName(c))
		i := 0
		for _, d := range r.Discrepancies {
			if d.Class != c {
				continue
			}
			i++
			for k, id := range d.Transactions {
				title := "Transaction"
				if k > 0 {
					title += " " + strconv.Itoa(k+1)
				}
				col := columnOf(rs[0], title)
				if col < 0 || col >= len(rs[i]) || rs[i][col] != id {
					t.Errorf("%s row %d: no column %q holding %q alone: header %q, row %q", sheetName(c), i+1, title, id, rs[0], rs[i])
				}
			}
		}
	}

	// Every action on a row of its own, its amount a number, what it made
	// a cell of its own.
	rs = rows(t, f, actionsSheet)
	var got [][]string
	for _, row := range rs[1:] {
		got = append(got, row[:min(len(row), 7)])
	}
	want := [][]string{
		{"order-1001:charge", "Duplicated", "compensate", "applied", "EUR", "19.99", "order-1001:charge:compensate:ch_1B"},
		{"order-1002:charge", "Duplicated", "compensate", "applied", "JPY", "5000", "order-1002:charge:compensate:ch_2B"},
		{"order-1002:charge", "Duplicated", "compensate", "refused", "JPY", "5000", "order-1002:charge:compensate:ch_2C"},
		{"0012", "Missing", "redeliver", "applied", "KWD", "12.345", "0012"},
		{"1E5", "Missing", "redeliver", "planned", "EUR", "-14.2", "1E5"},
		{"@SUM(A1)", "Mismatched", "escalate", "escalated", "", "", "@SUM(A1):escalate"},
		{"order-1005:charge", "Deferred", "redeliver", "deferred", "EUR", "0.01", "order-1005:charge"},
		{"order-1006:charge:compensate:ch_6B", "Compensation in doubt", "escalate", "escalated", "", "", "order-1006:charge:compensate:ch_6B:escalate"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the %s sheet (-want +got):\n%s", actionsSheet, diff)
	}
	made := columnOf(rs[0], "Made")
	if made < 0 || rs[1][made] != "re_9Z" || len(rs[4]) > made && rs[4][made] != "pi_3C" {
		t.Errorf("the %s sheet's Made column %d: %q, want re_9Z and pi_3C alone in their cells", actionsSheet, made, rs[:5])
	}
}

func TestXLSXEscalationsSheetSaysWhenItWasRead(t *testing.T) {
	defer func(f func() time.Time) { xlsxNow = f }(xlsxNow)
	xlsxNow = func() time.Time { return time.Date(2026, 11, 29, 6, 0, 0, 0, time.FixedZone("CET", 3600)) }
	esc := sampleEscalations()[:1] // open, as the run gives them
	f := openXLSX(t, sampleResult(), esc)
	rs := rows(t, f, "Escalations")
	if want := "Escalations open at 2026-11-29 05:00:00 UTC, when this workbook was written: 1."; len(rs) == 0 || rs[0][0] != want {
		t.Fatalf("Escalations A1 = %q, want %q", rs[:min(1, len(rs))], want)
	}
	// Given resolved escalations too, it does not call them open.
	mixed := rows(t, openXLSX(t, sampleResult(), sampleEscalations()), "Escalations")
	if want := "Escalations as they stood at 2026-11-29 05:00:00 UTC, when this workbook was written: 1 open, 1 resolved."; mixed[0][0] != want {
		t.Errorf("Escalations A1 with a resolved escalation = %q, want %q", mixed[0][0], want)
	}
	if len(rs) != 2+len(esc) || rs[1][0] != "Key" || rs[2][0] != esc[0].Key {
		t.Errorf("Escalations rows = %q, want the caption, the header and %d escalations", rs, len(esc))
	}
	p, err := f.GetPanes("Escalations")
	if err != nil || !p.Freeze || p.YSplit != 2 {
		t.Errorf("GetPanes(Escalations) = %+v, %v, want the caption and header frozen", p, err)
	}
	for _, row := range rows(t, f, "Summary") {
		if len(row) > 2 && row[0] == "Escalations" && !strings.Contains(row[2], "2026-11-29 05:00:00 UTC") {
			t.Errorf("the Summary's line of escalations %q does not say when they were open", row)
		}
	}
}

func TestXLSXClassNamesAgree(t *testing.T) {
	r := sampleResult()
	f := openXLSX(t, r, sampleEscalations())
	rs := rows(t, f, "Summary")
	var classes []string
	for _, row := range section(t, rs, "Findings per class") {
		classes = append(classes, row[0])
		if len(row) > 2 && row[2] != "" && row[2] != row[0] {
			t.Errorf("Summary names class %q and its sheet %q", row[0], row[2])
		}
	}
	want := []string{"Confirmed", "Duplicated", "Missing", "Pending", "Mismatched", "Unexpected", "Deferred", "Compensation in doubt"}
	if diff := cmp.Diff(want, classes); diff != "" {
		t.Errorf("classes of the Summary (-want +got):\n%s", diff)
	}
	for _, row := range section(t, rs, "Money per class and currency") {
		if !slices.Contains(want, row[0]) {
			t.Errorf("Money per class names class %q, not as the sheets do", row[0])
		}
	}
	sheets := f.GetSheetList()
	for _, c := range want[1:] {
		if !slices.Contains(sheets, c) {
			t.Errorf("no sheet %q among %q", c, sheets)
		}
	}
	esc := rows(t, f, "Escalations")
	col := columnOf(esc[1], "Class")
	if col < 0 || len(esc) < 4 {
		t.Fatalf("the Escalations sheet has no caption, header and two rows with a column Class: %q", esc)
	}
	if got := []string{esc[2][col], esc[3][col]}; !cmp.Equal(got, []string{"Mismatched", "Compensation in doubt"}) {
		t.Errorf("the Escalations sheet's classes = %q, want Mismatched and Compensation in doubt", got)
	}
}

// sheetXML is every worksheet's XML in an xlsx, by sheet name.
func sheetXML(t *testing.T, data []byte) map[string]string {
	t.Helper()
	z, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		rc, err := z.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var wb struct {
		Sheets []struct {
			Name string `xml:"name,attr"`
			ID   string `xml:"http://schemas.openxmlformats.org/officeDocument/2006/relationships id,attr"`
		} `xml:"sheets>sheet"`
	}
	var rels struct {
		Rel []struct {
			ID     string `xml:"Id,attr"`
			Target string `xml:"Target,attr"`
		} `xml:"Relationship"`
	}
	if err := xml.Unmarshal(read("xl/workbook.xml"), &wb); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(read("xl/_rels/workbook.xml.rels"), &rels); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range wb.Sheets {
		for _, rel := range rels.Rel {
			if rel.ID == s.ID {
				out[s.Name] = string(read(path.Join("xl", strings.TrimPrefix(rel.Target, "/xl/"))))
			}
		}
	}
	return out
}

var (
	dimensionRE = regexp.MustCompile(`<dimension ref="([^"]*)"`)
	cellRE      = regexp.MustCompile(`<c r="([A-Z]+[0-9]+)"`)
)

func TestXLSXDimensionIsTheUsedRange(t *testing.T) {
	defer func(n int) { maxSheetRows = n }(maxSheetRows)
	maxSheetRows = 3
	var buf bytes.Buffer
	if err := WriteXLSX(&buf, sampleResult(), sampleEscalations()); err != nil {
		t.Fatal(err)
	}
	sheets := sheetXML(t, buf.Bytes())
	if len(sheets) < 10 {
		t.Fatalf("found %d sheets in the xlsx", len(sheets))
	}
	for name, x := range sheets {
		m := dimensionRE.FindStringSubmatch(x)
		if m == nil {
			t.Errorf("%s has no <dimension>", name)
			continue
		}
		maxCol, maxRow := 0, 0
		for _, c := range cellRE.FindAllStringSubmatch(x, -1) {
			col, row, err := excelize.CellNameToCoordinates(c[1])
			if err != nil {
				t.Fatal(err)
			}
			maxCol, maxRow = max(maxCol, col), max(maxRow, row)
		}
		last, _ := excelize.CoordinatesToCellName(maxCol, maxRow)
		if want := "A1:" + last; m[1] != want {
			t.Errorf("%s: <dimension ref=%q>, want %q, the cells written", name, m[1], want)
		}
	}
}

// printableInches is the width a landscape page has for cells: US Letter
// (narrower than A4) less the margins the workbook sets.
const printableInches = 11 - 2*0.4

// printScale is the scale a sheet of columns this wide prints at on pages
// pages wide: a column of width w is 7w+5 pixels of 96 an inch.
func printScale(widths []float64, pages int) float64 {
	px := 0.0
	for _, w := range widths {
		px += math.Trunc(7*w + 5)
	}
	return math.Min(1, float64(pages)*printableInches*96/px)
}

func TestXLSXPrintsLegibly(t *testing.T) {
	r := sampleResult()
	f := openXLSX(t, r, sampleEscalations())
	titles := map[string]string{}
	for _, n := range f.GetDefinedName() {
		if n.Name == "_xlnm.Print_Titles" {
			titles[n.Scope] = n.RefersTo
		}
	}
	for _, sheet := range f.GetSheetList() {
		pl, err := f.GetPageLayout(sheet)
		if err != nil {
			t.Fatal(err)
		}
		pages := 2
		if sheet == "Summary" {
			pages = 1
		}
		if pl.Orientation == nil || *pl.Orientation != "landscape" || pl.FitToWidth == nil || *pl.FitToWidth != pages ||
			pl.FitToHeight == nil || *pl.FitToHeight != 0 || pl.PageOrder == nil || *pl.PageOrder != "overThenDown" {
			t.Errorf("%s prints %v, %v pages wide, %v pages high, %v; want landscape, %d wide, as many high as it takes, across then down",
				sheet, deref(pl.Orientation), deref(pl.FitToWidth), deref(pl.FitToHeight), deref(pl.PageOrder), pages)
		}
		if p, _ := f.GetSheetProps(sheet); p.FitToPage == nil || !*p.FitToPage {
			t.Errorf("%s does not fit its pages", sheet)
		}
		m, _ := f.GetPageMargins(sheet)
		if m.Left == nil || *m.Left != 0.4 || m.Right == nil || *m.Right != 0.4 {
			t.Errorf("%s has margins %v and %v, want 0.4 inches", sheet, deref(m.Left), deref(m.Right))
		}
		hf, _ := f.GetHeaderFooter(sheet)
		if hf == nil {
			hf = &excelize.HeaderFooterOptions{}
		}
		if !strings.Contains(hf.OddFooter, "&P") || !strings.Contains(hf.OddHeader, r.RunID) {
			t.Errorf("%s prints header %q and footer %q, want the run and page numbers", sheet, hf.OddHeader, hf.OddFooter)
		}
		cols, _ := f.GetCols(sheet)
		var widths []float64
		for i := range cols {
			name, _ := excelize.ColumnNumberToName(i + 1)
			w, _ := f.GetColWidth(sheet, name)
			widths = append(widths, w)
		}
		if s := printScale(widths, pages); s < 0.8 {
			t.Errorf("%s is %v characters wide: it prints at %.0f%% on %d landscape pages, want 80%% or more", sheet, widths, 100*s, pages)
		}
		if sheet == "Summary" {
			continue
		}
		want := "'" + sheet + "'!$A:$A,'" + sheet + "'!$1:$1"
		switch sheet {
		case "Escalations":
			want = "'Escalations'!$A:$A,'Escalations'!$1:$2"
		case rejectedSheet:
			want = "'Rejected rows'!$A:$B,'Rejected rows'!$1:$1"
		}
		if titles[sheet] != want {
			t.Errorf("%s repeats rows %q on every page, want %q", sheet, titles[sheet], want)
		}
		// Without gridlines in print, a rule under every row keeps the eye
		// on its row.
		style, _ := f.GetCellStyle(sheet, "A"+strconv.Itoa(len(rows(t, f, sheet))))
		if s, _ := f.GetStyle(style); s == nil || !slices.ContainsFunc(s.Border, func(b excelize.Border) bool { return b.Type == "bottom" }) {
			t.Errorf("%s: the last row has no rule below it", sheet)
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// A mismatch in another currency has no difference: the observed amount
// is in its own currency, and the Summary adds it to that currency.
func TestXLSXMismatchInAnotherCurrency(t *testing.T) {
	r := &Result{Counts: map[string]int{"mismatched": 2}, Discrepancies: []Discrepancy{
		{Class: reconcile.ClassMismatched, EffectKey: "a", Provider: "stripe", Currency: "JPY", ExpectedMinor: 5000, ObservedMinor: 3512, ObservedCurrency: "USD"},
		{Class: reconcile.ClassMismatched, EffectKey: "b", Provider: "stripe", Currency: "JPY", ExpectedMinor: 700, ObservedMinor: 690},
	}}
	f := openXLSX(t, r, nil)
	rs := rows(t, f, "Mismatched")
	get := func(row int, title string) string {
		col := columnOf(rs[0], title)
		if col < 0 {
			t.Fatalf("the Mismatched sheet has no column %q: %q", title, rs[0])
		}
		if col >= len(rs[row]) {
			return ""
		}
		return rs[row][col]
	}
	got := [][]string{
		{get(1, "Expected"), get(1, "Observed"), get(1, "Observed currency"), get(1, "Difference"), get(1, "At risk")},
		{get(2, "Expected"), get(2, "Observed"), get(2, "Observed currency"), get(2, "Difference"), get(2, "At risk")},
	}
	want := [][]string{{"5000", "35.12", "USD", "", "5000"}, {"700", "690", "", "-10", "10"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Mismatched expected, observed, observed currency, difference, at risk (-want +got):\n%s", diff)
	}
	money := map[string][]string{}
	for _, row := range section(t, rows(t, f, "Summary"), "Money per class and currency") {
		money[row[1]] = row[2:]
	}
	wantMoney := map[string][]string{"JPY": {"2", "5700", "690", "5010"}, "USD": {"0", "0", "35.12", "0"}}
	if diff := cmp.Diff(wantMoney, money); diff != "" {
		t.Errorf("the Summary's mismatched money per currency: findings, expected, observed, at risk (-want +got):\n%s", diff)
	}
}

// Beside the money at risk, what this run repaired and the provider has
// yet to confirm, as the JSON result has it.
func TestXLSXSummaryMoneyRepaired(t *testing.T) {
	r := sampleResult()
	f := openXLSX(t, r, nil)
	rs := rows(t, f, "Summary")
	at := headings(rs)["Money at risk per currency"]
	col := columnOf(rs[at+1], "Repaired (unconfirmed)")
	if col < 0 {
		t.Fatalf("money at risk has no column of money repaired: %q", rs[at+1])
	}
	got := map[string]int64{}
	for _, row := range section(t, rs, "Money at risk per currency") {
		exp := expOf(r, row[0])
		if col < len(row) && row[col] != "0" {
			v, err := reconcile.ParseMinor(row[col], exp, '.')
			if err != nil {
				t.Fatalf("repaired %q: %v", row, err)
			}
			got[row[0]] = v
		}
	}
	if diff := cmp.Diff(r.MoneyRepaired(), got); diff != "" {
		t.Errorf("money repaired per currency (-JSON +Summary):\n%s", diff)
	}
}
