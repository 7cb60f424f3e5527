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
// one sheet per class that has findings, the rejected rows, the
// escalations and, when there are any, the orphans. Sheets that can hold a
// row per finding are streamed, so memory stays bounded however large the
// run.
func WriteXLSX(w io.Writer, r *Result, escalations []Escalation) error {
	f := excelize.NewFile()
	defer f.Close()
	// excelize builds the whole file in a buffer before it copies it to w;
	// a zip writer of its own, pointed straight at w, streams the file and
	// leaves that buffer empty. (excelize's fix of the zip64 local headers
	// of a sheet over 4 GiB, some ten million rows, is then skipped.)
	f.SetZipWriter(func(io.Writer) excelize.ZipWriter { return zip.NewWriter(w) })
	b, err := newBook(f)
	if err != nil {
		return err
	}
	if err := f.SetSheetName(f.GetSheetName(0), "Summary"); err != nil {
		return err
	}
	if err := b.summary(r, escalations); err != nil {
		return fmt.Errorf("write sheet Summary: %w", err)
	}
	byClass := map[reconcile.Class]int{}
	for i := range r.Discrepancies {
		byClass[r.Discrepancies[i].Class]++
	}
	for _, c := range reconcile.Classes {
		if c == reconcile.Confirmed || byClass[c] == 0 {
			continue
		}
		if err := b.classSheet(r, c, byClass[c]); err != nil {
			return fmt.Errorf("write sheet %s: %w", sheetName(c), err)
		}
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

// rejectedSheet is the name of the sheet of rejected input rows.
const rejectedSheet = "Rejected rows"

// sheetName is the name of a class's sheet: "Duplicated".
func sheetName(c reconcile.Class) string {
	s := string(c)
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// column is a column of a table sheet: its title and width in characters.
type column struct {
	title string
	width float64
}

var classColumns = []column{
	{"Effect key", 38}, {"Provider", 11}, {"Time (UTC)", 20}, {"Currency", 11},
	{"Expected", 18}, {"Observed", 18}, {"At risk", 18}, {"Transactions", 24},
	{"Reason", 44}, {"Actions", 38}, {"Action keys", 44}, {"Made", 16}, {"Action notes", 44},
}

// classSheet writes the n findings of class c, in the order of the result.
func (b *book) classSheet(r *Result, c reconcile.Class, n int) error {
	s := b.table(sheetName(c), classColumns, n)
	row := make([]any, len(classColumns))
	for i := range r.Discrepancies {
		d := &r.Discrepancies[i]
		if d.Class != c {
			continue
		}
		exp := b.exponent(d.Provider, d.Currency)
		row[0], row[1], row[2], row[3] = b.text(d.EffectKey), b.text(d.Provider), b.date(d.Time), b.text(d.Currency)
		row[4], row[5], row[6] = b.money(d.ExpectedMinor, exp), b.money(d.ObservedMinor, exp), b.money(d.AtRisk(), exp)
		row[7], row[8] = b.wrapped(strings.Join(d.Transactions, "\n")), b.wrapped(d.Reason)
		what, keys, made, notes := actionLines(d, exp)
		row[9], row[10], row[11], row[12] = b.wrapped(what), b.wrapped(keys), b.wrapped(made), b.wrapped(notes)
		if err := s.add(row...); err != nil {
			return err
		}
	}
	return s.close()
}

// actionLines writes a finding's actions one per line, so that the lines
// of the four action columns line up: "compensate 12.34 EUR: applied".
func actionLines(d *Discrepancy, exp int) (what, keys, made, notes string) {
	var w, k, m, n []string
	for _, x := range d.Actions {
		line := string(x.Kind)
		if x.AmountMinor != 0 {
			cur := x.Currency
			if cur == "" {
				cur = d.Currency
			}
			line += " " + groupThousands(reconcile.FormatMinor(x.AmountMinor, exp)) + " " + cur
		}
		w = append(w, line+": "+string(x.Outcome))
		k = append(k, orDash(x.Key))
		m = append(m, orDash(x.Made))
		n = append(n, orDash(strings.Join(strings.Fields(x.Note), " ")))
	}
	return strings.Join(w, "\n"), strings.Join(k, "\n"), strings.Join(m, "\n"), strings.Join(n, "\n")
}

// groupThousands puts commas between the groups of three digits of a
// plain decimal, as the amount cells show them: "-1234567.89" becomes
// "-1,234,567.89".
func groupThousands(s string) string {
	sign, digits := "", s
	if strings.HasPrefix(s, "-") {
		sign, digits = "-", s[1:]
	}
	whole, frac, dot := strings.Cut(digits, ".")
	var b strings.Builder
	b.WriteString(sign)
	for i := range len(whole) {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(whole[i])
	}
	if dot {
		b.WriteString("." + frac)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

var rejectedColumns = []column{{"File", 40}, {"Line", 8}, {"Reason", 50}, {"Raw row", 100}}

func (b *book) rejectedSheet(rows []Rejected) error {
	s := b.table(rejectedSheet, rejectedColumns, len(rows))
	for _, x := range rows {
		if err := s.add(b.text(x.URI), b.plain(int64(x.Line)), b.wrapped(x.Reason), b.wrapped(x.Raw)); err != nil {
			return err
		}
	}
	return s.close()
}

var escalationColumns = []column{
	{"Key", 46}, {"Subject", 38}, {"Class", 12}, {"Reason", 50}, {"Status", 12},
	{"Opened (UTC)", 19}, {"Paged (UTC)", 19}, {"Resolved (UTC)", 19}, {"Resolved by", 16}, {"Note", 40},
}

func (b *book) escalationsSheet(rows []Escalation) error {
	s := b.table("Escalations", escalationColumns, len(rows))
	for _, x := range rows {
		err := s.add(b.text(x.Key), b.text(x.Subject), b.text(x.Class), b.wrapped(x.Reason), b.text(x.Status),
			b.date(x.OpenedAt), b.date(x.PagedAt), b.date(x.ResolvedAt), b.text(x.ResolvedBy), b.wrapped(x.Note))
		if err != nil {
			return err
		}
	}
	return s.close()
}

var orphanColumns = []column{
	{"Key", 40}, {"Stale owner", 20}, {"Stale fence", 12}, {"Stale result", 30},
	{"Current owner", 20}, {"Current fence", 12}, {"Current state", 16},
}

func (b *book) orphansSheet(rows []Orphan) error {
	s := b.table("Orphans", orphanColumns, len(rows))
	for _, x := range rows {
		err := s.add(b.text(x.Key), b.text(x.StaleOwner), b.plain(x.StaleFence), b.wrapped(x.StaleResult),
			b.text(x.CurrentOwner), b.plain(x.CurrentFence), b.text(x.CurrentState))
		if err != nil {
			return err
		}
	}
	return s.close()
}

// book is a workbook being written, with its cell styles.
type book struct {
	f  *excelize.File
	st struct {
		title, heading, header, headerRight, label, alert, text, wrap, plain, count, date int
	}
	moneyStyles map[int]int // by exponent
	exps        map[[2]string]int
}

func newBook(f *excelize.File) (*book, error) {
	b := &book{f: f, moneyStyles: map[int]int{}, exps: map[[2]string]int{}}
	// Text is indented by one level so that it does not run into a number
	// aligned right in the column before it.
	top := &excelize.Alignment{Vertical: "top", Horizontal: "left", Indent: 1}
	wrap := &excelize.Alignment{Vertical: "top", Horizontal: "left", Indent: 1, WrapText: true}
	num := &excelize.Alignment{Vertical: "top"}
	textFmt, plainFmt, countFmt, dateFmt := "@", "0", "#,##0", "yyyy-mm-dd hh:mm:ss"
	for _, x := range []struct {
		id *int
		s  excelize.Style
	}{
		{&b.st.title, excelize.Style{Font: &excelize.Font{Family: "Calibri", Bold: true, Size: 14}}},
		{&b.st.heading, excelize.Style{Font: &excelize.Font{Family: "Calibri", Bold: true, Size: 12}}},
		{&b.st.header, excelize.Style{
			Font:      &excelize.Font{Family: "Calibri", Bold: true, Size: 11},
			Fill:      excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"D9E1F2"}},
			Border:    []excelize.Border{{Type: "bottom", Color: "8EA9DB", Style: 1}},
			Alignment: &excelize.Alignment{Vertical: "center", Horizontal: "left", Indent: 1, WrapText: true}, CustomNumFmt: &textFmt}},
		{&b.st.headerRight, excelize.Style{
			Font:      &excelize.Font{Family: "Calibri", Bold: true, Size: 11},
			Fill:      excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"D9E1F2"}},
			Border:    []excelize.Border{{Type: "bottom", Color: "8EA9DB", Style: 1}},
			Alignment: &excelize.Alignment{Vertical: "center", Horizontal: "right", WrapText: true}, CustomNumFmt: &textFmt}},
		{&b.st.label, excelize.Style{Font: &excelize.Font{Family: "Calibri", Bold: true, Size: 11}, Alignment: top, CustomNumFmt: &textFmt}},
		{&b.st.alert, excelize.Style{Font: &excelize.Font{Family: "Calibri", Bold: true, Size: 11, Color: "9C0006"},
			Fill: excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"FFC7CE"}}, Alignment: top, CustomNumFmt: &textFmt}},
		{&b.st.text, excelize.Style{Alignment: top, CustomNumFmt: &textFmt}},
		{&b.st.wrap, excelize.Style{Alignment: wrap, CustomNumFmt: &textFmt}},
		{&b.st.plain, excelize.Style{Alignment: num, CustomNumFmt: &plainFmt}},
		{&b.st.count, excelize.Style{Alignment: num, CustomNumFmt: &countFmt}},
		{&b.st.date, excelize.Style{Alignment: top, CustomNumFmt: &dateFmt}},
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
// keeps it text when someone edits the cell.
func (b *book) text(s string) any {
	if s == "" {
		return nil
	}
	return excelize.Cell{StyleID: b.st.text, Value: fitCell(s)}
}

// wrapped is a text cell that wraps at the column's width.
func (b *book) wrapped(s string) any {
	if s == "" {
		return nil
	}
	return excelize.Cell{StyleID: b.st.wrap, Value: fitCell(s)}
}

// numericTitles are the titles of columns of numbers, whose headers align
// right like the numbers below them.
var numericTitles = map[string]bool{"Rows": true, "Evidence": true, "Rejected": true, "Ignored": true, "Count": true,
	"Findings": true, "Expected": true, "Observed": true, "At risk": true, "Amount": true, "Line": true,
	"Stale fence": true, "Current fence": true}

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
		return nil
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
		if style, err = b.f.NewStyle(&excelize.Style{CustomNumFmt: &f, Alignment: &excelize.Alignment{Vertical: "top"}}); err != nil {
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
	wrap   int // the style of text that wraps
}

// add writes the next row. A row whose wrapped text takes more than one
// line gets the height of those lines: LibreOffice does not fit rows to
// their text when it opens a file, and would show the first line only.
func (s *sheet) add(cells ...any) error {
	s.row++
	ref, err := excelize.CoordinatesToCellName(1, s.row)
	if err != nil {
		return err
	}
	lines := 1
	for i, c := range cells {
		if c, ok := c.(excelize.Cell); ok && c.StyleID == s.wrap && i < len(s.widths) {
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

// newSheet adds a sheet (or takes the first one, named already) with the
// given column widths.
func (b *book) newSheet(name string, widths []float64) (*sheet, error) {
	if i, _ := b.f.GetSheetIndex(name); i < 0 {
		if _, err := b.f.NewSheet(name); err != nil {
			return nil, err
		}
	}
	// The stream writer copies these from the sheet when it starts: landscape,
	// as wide as the page, so a printed sheet keeps its columns together.
	landscape, one, tall := "landscape", 1, 0
	err := b.f.SetPageLayout(name, &excelize.PageLayoutOptions{Orientation: &landscape, FitToWidth: &one, FitToHeight: &tall})
	if err != nil {
		return nil, err
	}
	fit := true
	if err := b.f.SetSheetProps(name, &excelize.SheetPropsOptions{FitToPage: &fit}); err != nil {
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
	return &sheet{sw: sw, widths: widths, wrap: b.st.wrap}, nil
}

// maxSheetRows is how many rows a sheet holds below its header: Excel's
// limit. A variable, so that a test can lower it.
var maxSheetRows = excelize.TotalRows - 1

// table is a table of n rows streamed into sheets below a frozen header
// row, with an autofilter: into one sheet named name, or when the rows do
// not fit into one, into name, "name (2)", and so on.
type table struct {
	b     *book
	name  string
	cols  []column
	left  int // rows not yet written
	parts int
	s     *sheet
}

func (b *book) table(name string, cols []column, n int) *table {
	return &table{b: b, name: name, cols: cols, left: n}
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
	// The filter must be on the sheet before it is streamed: the stream
	// writer copies it from there when it finishes.
	last, err := excelize.CoordinatesToCellName(len(t.cols), min(t.left, maxSheetRows)+1)
	if err != nil {
		return err
	}
	if err := b.f.AutoFilter(name, "A1:"+last, nil); err != nil {
		return err
	}
	err = b.f.SetDefinedName(&excelize.DefinedName{Name: "_xlnm.Print_Titles", Scope: name, RefersTo: "'" + name + "'!$1:$1"})
	if err != nil {
		return err
	}
	widths := make([]float64, len(t.cols))
	header := make([]any, len(t.cols))
	for i, c := range t.cols {
		widths[i], header[i] = c.width, b.header(c.title)
	}
	if t.s, err = b.newSheet(name, widths); err != nil {
		return err
	}
	err = t.s.sw.SetPanes(&excelize.Panes{Freeze: true, YSplit: 1, TopLeftCell: "A2", ActivePane: "bottomLeft",
		Selection: []excelize.Selection{{SQRef: "A2", ActiveCell: "A2", Pane: "bottomLeft"}}})
	if err != nil {
		return err
	}
	return t.s.add(header...)
}
