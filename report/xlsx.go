package report

import (
	"archive/zip"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"

	"reconcile"
)

// maxCellText is the most UTF-16 code units a cell holds in Excel and
// LibreOffice; excelize silently cuts longer text.
const maxCellText = 32767

// WriteXLSX writes the discrepancy spreadsheet of a run to w: a summary,
// one sheet per class that has findings, the actions, the rejected rows,
// the escalations and, when there are any, the orphans. The escalations
// are those open when the workbook is written, and its Escalations sheet
// says so with the time. Sheets that can hold a row per finding are
// streamed, so memory stays bounded however large the run.
func WriteXLSX(w io.Writer, r *Result, escalations []Escalation) error {
	f := excelize.NewFile()
	defer f.Close()
	// excelize builds the whole file in a buffer before it copies it to w;
	// a zip writer of its own, pointed straight at w, streams the file and
	// leaves that buffer empty. (excelize's fix of the zip64 local headers
	// of a sheet over 4 GiB, some ten million rows, is then skipped.)
	f.SetZipWriter(func(io.Writer) excelize.ZipWriter { return zip.NewWriter(w) })
	b, err := newBook(f, r)
	if err != nil {
		return err
	}
	if err := f.SetSheetName(f.GetSheetName(0), "Summary"); err != nil {
		return err
	}
	if err := b.summary(r, escalations); err != nil {
		return fmt.Errorf("write sheet Summary: %w", err)
	}
	for _, c := range reconcile.Classes {
		if c == reconcile.ClassConfirmed || b.shapes[c] == nil {
			continue
		}
		if err := b.classSheet(r, c); err != nil {
			return fmt.Errorf("write sheet %s: %w", sheetName(c), err)
		}
	}
	if err := b.actionsSheet(r); err != nil {
		return fmt.Errorf("write sheet %s: %w", actionsSheet, err)
	}
	if err := b.rejectedSheet(r.Rejected); err != nil {
		return fmt.Errorf("write sheet %s: %w", rejectedSheet, err)
	}
	if err := b.escalationsSheet(escalations); err != nil {
		return fmt.Errorf("write sheet Escalations: %w", err)
	}
	if len(r.Orphans) > 0 {
		if err := b.orphansSheet(r.Orphans); err != nil {
			return fmt.Errorf("write sheet Orphans: %w", err)
		}
	}
	// The Summary, the first sheet, is the active one already. Setting it
	// again would make excelize read every streamed sheet back into memory.
	return f.Write(w)
}

// xlsxNow is the clock that dates the workbook: the escalations it lists
// are those open then. A variable, so that a test can set it.
var xlsxNow = time.Now

// book is a workbook being written, with its cell styles.
type book struct {
	f  *excelize.File
	st struct {
		title, heading, captionWrap, header, headerRight, label, alert, alertWrap, good, goodWrap,
		text, wrap, plain, count, date int
	}
	moneyStyles map[int]int // by exponent
	exps        map[[2]string]int
	// shapes are the columns of each class's sheet, nil for a class
	// without findings.
	shapes map[reconcile.Class]*shape
	// written is when the workbook is written; pageHeader is what every printed
	// page says at its top right.
	written    time.Time
	pageHeader string
}

func newBook(f *excelize.File, r *Result) (*book, error) {
	b := &book{f: f, moneyStyles: map[int]int{}, exps: map[[2]string]int{}, written: xlsxNow().UTC()}
	b.shapes = b.classShapes(r)
	b.pageHeader = "Run " + r.RunID
	if t, err := time.Parse(time.RFC3339, r.AsOf); err == nil {
		b.pageHeader += ", as of " + t.UTC().Format("2006-01-02 15:04") + " UTC"
	} else if r.AsOf != "" {
		b.pageHeader += ", as of " + r.AsOf
	}
	// Text is indented by one level so that it does not run into a number
	// aligned right in the column before it.
	top := &excelize.Alignment{Vertical: "top", Horizontal: "left", Indent: 1}
	wrap := &excelize.Alignment{Vertical: "top", Horizontal: "left", Indent: 1, WrapText: true}
	num := &excelize.Alignment{Vertical: "top"}
	// Sheets print without gridlines: a light rule under every cell of data
	// keeps the eye on its row on paper.
	rule := []excelize.Border{{Type: "bottom", Color: "D9D9D9", Style: 1}}
	bold := &excelize.Font{Family: "Calibri", Bold: true, Size: 11}
	red := &excelize.Font{Family: "Calibri", Bold: true, Size: 12, Color: "9C0006"}
	green := &excelize.Font{Family: "Calibri", Bold: true, Size: 12, Color: "006100"}
	redFill := excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"FFC7CE"}}
	greenFill := excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"C6EFCE"}}
	headerFill := excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"D9E1F2"}}
	headerRule := []excelize.Border{{Type: "bottom", Color: "8EA9DB", Style: 1}}
	textFmt, plainFmt, countFmt, dateFmt := "@", "0", "#,##0", "yyyy-mm-dd hh:mm:ss"
	for _, x := range []struct {
		id *int
		s  excelize.Style
	}{
		{&b.st.title, excelize.Style{Font: &excelize.Font{Family: "Calibri", Bold: true, Size: 14}}},
		{&b.st.heading, excelize.Style{Font: &excelize.Font{Family: "Calibri", Bold: true, Size: 12}}},
		{&b.st.captionWrap, excelize.Style{Font: &excelize.Font{Family: "Calibri", Bold: true, Size: 12}, Alignment: wrap, CustomNumFmt: &textFmt}},
		{&b.st.header, excelize.Style{Font: bold, Fill: headerFill, Border: headerRule,
			Alignment: &excelize.Alignment{Vertical: "center", Horizontal: "left", Indent: 1, WrapText: true}, CustomNumFmt: &textFmt}},
		{&b.st.headerRight, excelize.Style{Font: bold, Fill: headerFill, Border: headerRule,
			Alignment: &excelize.Alignment{Vertical: "center", Horizontal: "right", WrapText: true}, CustomNumFmt: &textFmt}},
		{&b.st.label, excelize.Style{Font: bold, Alignment: top, Border: rule, CustomNumFmt: &textFmt}},
		{&b.st.alert, excelize.Style{Font: red, Fill: redFill, Alignment: top, CustomNumFmt: &textFmt}},
		{&b.st.alertWrap, excelize.Style{Font: red, Fill: redFill, Alignment: wrap, CustomNumFmt: &textFmt}},
		{&b.st.good, excelize.Style{Font: green, Fill: greenFill, Alignment: top, CustomNumFmt: &textFmt}},
		{&b.st.goodWrap, excelize.Style{Font: green, Fill: greenFill, Alignment: wrap, CustomNumFmt: &textFmt}},
		{&b.st.text, excelize.Style{Alignment: top, Border: rule, CustomNumFmt: &textFmt}},
		{&b.st.wrap, excelize.Style{Alignment: wrap, Border: rule, CustomNumFmt: &textFmt}},
		{&b.st.plain, excelize.Style{Alignment: num, Border: rule, CustomNumFmt: &plainFmt}},
		{&b.st.count, excelize.Style{Alignment: num, Border: rule, CustomNumFmt: &countFmt}},
		{&b.st.date, excelize.Style{Alignment: top, Border: rule, CustomNumFmt: &dateFmt}},
	} {
		id, err := f.NewStyle(&x.s)
		if err != nil {
			return nil, err
		}
		*x.id = id
	}
	return b, nil
}

// exponent is the number of decimals of the provider's minor units of cur,
// which is what the result's amounts are in; ISO 4217's when the provider
// has no table of its own, and 2 for a currency nobody knows.
func (b *book) exponent(provider, cur string) int {
	k := [2]string{provider, cur}
	if e, ok := b.exps[k]; ok {
		return e
	}
	e, err := reconcile.Exponent(provider, cur)
	if err != nil {
		e = 2
	}
	b.exps[k] = e
	return e
}

// text is a cell of text from anywhere, inputs included. excelize writes a
// Go string as an inline string cell, never as a formula or a number, so
// "=HYPERLINK(…)" or "0012" stays exactly that; the text number format
// keeps it text when someone edits the cell. Empty text is an empty cell,
// with the style of its column: a filter finds it among the blanks, and the
// rule under its row runs on when the row is printed.
func (b *book) text(s string) any {
	if s == "" {
		return b.blank(b.st.text)
	}
	return excelize.Cell{StyleID: b.st.text, Value: fitCell(s)}
}

// wrapped is a text cell that wraps at the column's width.
func (b *book) wrapped(s string) any {
	if s == "" {
		return b.blank(b.st.text)
	}
	return excelize.Cell{StyleID: b.st.wrap, Value: fitCell(s)}
}

// blank is an empty cell of the given style: no value at all, neither a
// dash nor an empty string.
func (b *book) blank(style int) any { return excelize.Cell{StyleID: style} }

// numericTitles are the titles of columns of numbers, whose headers align
// right like the numbers below them.
var numericTitles = map[string]bool{"Rows": true, "Evidence": true, "Rejected": true, "Ignored": true, "Count": true,
	"Findings": true, "Expected": true, "Observed": true, "At risk": true, "Amount": true, "Line": true,
	"Stale fence": true, "Current fence": true, "Difference": true, "Effects": true, "Gross": true, "Fees": true, "Net": true,
	"Repaired (unconfirmed)": true, "Findings at risk": true}

// header is a cell of a header row.
func (b *book) header(title string) any {
	if numericTitles[title] {
		return b.styled(b.st.headerRight, title)
	}
	return b.styled(b.st.header, title)
}

func (b *book) styled(style int, s string) any {
	return excelize.Cell{StyleID: style, Value: fitCell(s)}
}

// plain is an integer without thousands separators: a line, a fence.
func (b *book) plain(n int64) any { return excelize.Cell{StyleID: b.st.plain, Value: n} }

// count is an integer with thousands separators.
func (b *book) count(n int64) any { return excelize.Cell{StyleID: b.st.count, Value: n} }

// date is a date-time cell in UTC, or an empty cell for the zero time.
func (b *book) date(t time.Time) any {
	if t.IsZero() {
		return b.blank(b.st.date)
	}
	return excelize.Cell{StyleID: b.st.date, Value: t.UTC()}
}

// money is an amount of minor units as a number in major units, shown with
// the currency's decimals. The float64 is only what the cell holds: it is
// the double nearest the exact decimal (both operands are exact and the
// division is correctly rounded), which excelize writes in its shortest
// form, so it reads back as exactly FormatMinor(minor, exp) for any amount
// of up to 15 significant digits, the precision of a spreadsheet cell.
func (b *book) money(minor int64, exp int) any {
	style, ok := b.moneyStyles[exp]
	if !ok {
		f := "#,##0"
		if exp > 0 {
			f += "." + strings.Repeat("0", exp)
		}
		f += ";[Red]-" + f
		var err error
		st := &excelize.Style{CustomNumFmt: &f, Alignment: &excelize.Alignment{Vertical: "top"},
			Border: []excelize.Border{{Type: "bottom", Color: "D9D9D9", Style: 1}}}
		if style, err = b.f.NewStyle(st); err != nil {
			style = 0 // only when the style table is full; the number is still right
		}
		b.moneyStyles[exp] = style
	}
	// One division by the exact 10^exp is correctly rounded; dividing by 10
	// exp times would round exp times.
	return excelize.Cell{StyleID: style, Value: float64(minor) / math.Pow10(exp)}
}

// fitCell cuts text longer than a cell holds, saying so at the start of
// the cell, where it shows even when the row is too short for the text.
func fitCell(s string) string {
	if len(s) <= maxCellText || utf16Len(s) <= maxCellText { // no character takes more UTF-16 units than bytes
		return s
	}
	const end = " …"
	marker := fmt.Sprintf("[CUT to fit a cell: the full text has %d characters, in the JSON result] ", utf8.RuneCountInString(s))
	keep, used := maxCellText-utf16Len(marker)-utf16Len(end), 0
	for i, r := range s {
		n := utf16.RuneLen(r)
		if n < 0 {
			n = 1
		}
		if used+n > keep {
			return marker + s[:i] + end
		}
		used += n
	}
	return s
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if l := utf16.RuneLen(r); l > 0 {
			n += l
		} else {
			n++
		}
	}
	return n
}

// sheet is a sheet being streamed, row by row.
type sheet struct {
	sw     *excelize.StreamWriter
	row    int
	widths []float64
	wraps  map[int]bool // the styles of text that wraps
}

// add writes the next row. A row whose wrapped text takes more than one
// line gets the height of those lines: LibreOffice does not fit rows to
// their text when it opens a file, and would show the first line only.
func (s *sheet) add(cells ...any) error { return s.addLines(1, cells...) }

// addLines writes the next row at least lines lines high.
func (s *sheet) addLines(lines int, cells ...any) error {
	s.row++
	ref, err := excelize.CoordinatesToCellName(1, s.row)
	if err != nil {
		return err
	}
	for i, c := range cells {
		if c, ok := c.(excelize.Cell); ok && s.wraps[c.StyleID] && i < len(s.widths) {
			text, _ := c.Value.(string)
			lines = max(lines, wrappedLines(text, s.widths[i]))
		}
	}
	if lines == 1 {
		return s.sw.SetRow(ref, cells)
	}
	return s.sw.SetRow(ref, cells, excelize.RowOpts{Height: min(float64(lines)*lineHeight, excelize.MaxRowHeight)})
}

// lineHeight is the height in points of a line of 11 point Calibri.
const lineHeight = 15

// wrappedLines estimates how many lines text takes in a column width
// characters wide, counting a character of text as wide as a digit.
func wrappedLines(text string, width float64) int {
	per := max(int(width)-1, 1)
	lines, n := 0, 0
	for _, r := range text {
		if r == '\n' {
			lines += max(1, (n+per-1)/per)
			n = 0
			continue
		}
		n++
	}
	return lines + max(1, (n+per-1)/per)
}

// Margins of a printed page, in inches: narrow at the sides, so that more
// of a wide sheet fits a page.
const (
	sideMargin   = 0.4
	topMargin    = 0.6
	headerMargin = 0.3
)

// maxHeaderText is how much text Excel takes in a page header or footer.
const maxHeaderText = 255

// newSheet adds a sheet (or takes the first one, named already) with the
// given column widths, that prints landscape pages wide, and whose used
// range is rows by cols.
func (b *book) newSheet(name string, widths []float64, rows, cols, pages int) (*sheet, error) {
	if i, _ := b.f.GetSheetIndex(name); i < 0 {
		if _, err := b.f.NewSheet(name); err != nil {
			return nil, err
		}
	}
	// The stream writer copies these from the sheet when it starts, the
	// used range too: without it, the sheet says its cells are A1 alone,
	// which a reader that trusts it (openpyxl's read-only mode, Power BI)
	// takes at its word.
	last, err := excelize.CoordinatesToCellName(max(cols, 1), max(rows, 1))
	if err != nil {
		return nil, err
	}
	if err := b.f.SetSheetDimension(name, "A1:"+last); err != nil {
		return nil, err
	}
	// A row too wide for a page goes on across the next page before the
	// rows below it do, so that the halves of a row are on facing pages.
	landscape, tall, order := "landscape", 0, "overThenDown"
	err = b.f.SetPageLayout(name, &excelize.PageLayoutOptions{Orientation: &landscape, FitToWidth: &pages, FitToHeight: &tall, PageOrder: &order})
	if err != nil {
		return nil, err
	}
	fit := true
	if err := b.f.SetSheetProps(name, &excelize.SheetPropsOptions{FitToPage: &fit}); err != nil {
		return nil, err
	}
	side, top, hf := sideMargin, topMargin, headerMargin
	err = b.f.SetPageMargins(name, &excelize.PageLayoutMarginsOptions{Left: &side, Right: &side, Top: &top, Bottom: &top, Header: &hf, Footer: &hf})
	if err != nil {
		return nil, err
	}
	if err := b.f.SetHeaderFooter(name, b.headerFooter()); err != nil {
		return nil, err
	}
	sw, err := b.f.NewStreamWriter(name)
	if err != nil {
		return nil, err
	}
	for i, w := range widths {
		if err := sw.SetColWidth(i+1, i+1, w); err != nil {
			return nil, err
		}
	}
	wraps := map[int]bool{b.st.wrap: true, b.st.header: true, b.st.headerRight: true, b.st.captionWrap: true}
	return &sheet{sw: sw, widths: widths, wraps: wraps}, nil
}

// headerFooter is what every printed page says: the sheet and the run at
// the top, when the workbook was written and the page number at the
// bottom.
func (b *book) headerFooter() *excelize.HeaderFooterOptions {
	// Cut to what a header holds, even when every character is an "&",
	// which starts a code in a header: "&&" is the character itself.
	run := b.pageHeader
	if r := []rune(run); len(r) > maxHeaderText/3 {
		run = string(r[:maxHeaderText/3]) + "…"
	}
	run = strings.ReplaceAll(run, "&", "&&")
	return &excelize.HeaderFooterOptions{
		OddHeader: "&L&\"-,Bold\"&A&R" + run,
		OddFooter: "&LWritten " + b.written.Format("2006-01-02 15:04") + " UTC&RPage &P of &N",
	}
}

// maxSheetRows is how many rows a sheet holds below its header: Excel's
// limit. A variable, so that a test can lower it.
var maxSheetRows = excelize.TotalRows - 1

// table is a table of n rows streamed into sheets below a frozen header
// row, with an autofilter: into one sheet named name, or when the rows do
// not fit into one, into name, "name (2)", and so on. A table with a
// caption has it on the row above the header, on every sheet.
type table struct {
	b       *book
	name    string
	caption string
	repeat  int // the columns every printed page repeats: 1 unless set
	cols    []column
	left    int // rows not yet written
	parts   int
	s       *sheet
}

func (b *book) table(name string, cols []column, n int) *table {
	return &table{b: b, name: name, cols: cols, left: n}
}

// top is how many rows of a sheet of the table are above its first row of
// data: the header, and the caption when it has one.
func (t *table) top() int {
	if t.caption != "" {
		return 2
	}
	return 1
}

// sheetParts is how many sheets a table of n rows takes.
func sheetParts(n int) int { return max(1, (n+maxSheetRows-1)/maxSheetRows) }

func (t *table) add(cells ...any) error {
	if t.s == nil || t.s.row > maxSheetRows {
		if err := t.next(); err != nil {
			return err
		}
	}
	t.left--
	return t.s.add(cells...)
}

// close finishes the last sheet, or writes the header of an empty table.
func (t *table) close() error {
	if t.s == nil {
		if err := t.next(); err != nil {
			return err
		}
	}
	return t.s.sw.Flush()
}

// next finishes the sheet being written and starts the next one.
func (t *table) next() error {
	if t.s != nil {
		if err := t.s.sw.Flush(); err != nil {
			return err
		}
	}
	t.parts++
	name := t.name
	if t.parts > 1 {
		name = fmt.Sprintf("%s (%d)", t.name, t.parts)
	}
	b := t.b
	if _, err := b.f.NewSheet(name); err != nil {
		return err
	}
	// A sheet holds maxSheetRows+1 rows, the header and caption included.
	rows := t.top() + min(t.left, maxSheetRows+1-t.top())
	// The filter must be on the sheet before it is streamed: the stream
	// writer copies it from there when it finishes.
	first, _ := excelize.CoordinatesToCellName(1, t.top())
	last, err := excelize.CoordinatesToCellName(len(t.cols), rows)
	if err != nil {
		return err
	}
	if err := b.f.AutoFilter(name, first+":"+last, nil); err != nil {
		return err
	}
	// Every printed page repeats the header, and the first column, which
	// names the row, on the second page of a row too wide for one.
	lastTitle, _ := excelize.ColumnNumberToName(max(t.repeat, 1))
	titles := fmt.Sprintf("'%s'!$A:$%s,'%s'!$1:$%d", name, lastTitle, name, t.top())
	if err := b.f.SetDefinedName(&excelize.DefinedName{Name: "_xlnm.Print_Titles", Scope: name, RefersTo: titles}); err != nil {
		return err
	}
	widths := make([]float64, len(t.cols))
	header := make([]any, len(t.cols))
	for i, c := range t.cols {
		widths[i], header[i] = c.width, b.header(c.title)
	}
	if t.s, err = b.newSheet(name, widths, rows, len(t.cols), 2); err != nil {
		return err
	}
	below, _ := excelize.CoordinatesToCellName(1, t.top()+1)
	err = t.s.sw.SetPanes(&excelize.Panes{Freeze: true, YSplit: t.top(), TopLeftCell: below, ActivePane: "bottomLeft",
		Selection: []excelize.Selection{{SQRef: below, ActiveCell: below, Pane: "bottomLeft"}}})
	if err != nil {
		return err
	}
	if t.caption != "" {
		// It wraps in the first column, which every printed page shows.
		if err := t.s.add(b.styled(b.st.captionWrap, t.caption)); err != nil {
			return err
		}
	}
	return t.s.add(header...)
}
