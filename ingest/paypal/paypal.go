// Package paypal reads PayPal's Settlement Report (STL) into evidence, and
// checks the report's own footer totals and record counts so that a
// truncated or altered file fails as a whole. A report is comma or tab
// delimited as PayPal writes it, or semicolon-delimited as a spreadsheet in
// a European locale saves it again.
//
// Every line of an STL file starts with a row type: RH report header, FH
// file header, SH section header, CH column header, SB section body (one
// transaction), SF section footer (totals per currency), SC section record
// count, RF report footer (totals per currency), RC report record count and
// FF file footer (record count). Only SB rows are transactions; the column
// names of SB rows come from the CH row before them.
package paypal

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"reconcile"
	"reconcile/ingest/tabular"
)

const provider = "paypal"

// ErrCorrupt means the file contradicts its own footers, or ends before them:
// it is truncated or was altered, and none of it should be used.
var ErrCorrupt = errors.New("corrupt or truncated STL")

// Options configures Parse.
type Options struct {
	// Comma is the delimiter; 0 sniffs comma, semicolon or tab from the
	// first line. STL amounts are whole hundredths without a decimal
	// separator, which a re-save with semicolons leaves as they are.
	Comma rune
}

// otherReports are the name prefixes of PayPal's other SFTP reports, which
// share the RH ... FF structure but not the settlement report's footers.
var otherReports = []string{"TRR", "DDR", "SAR"}

// rowTypes are the row types of a settlement report in the order they
// come; the first four start the file, the last five close a section, the
// report and the file.
var rowTypes = []string{"RH", "FH", "SH", "CH", "SB", "SF", "SC", "RF", "RC", "FF"}

// Detect reports whether head, the start of a file, is a PayPal settlement
// report: its first field is RH, quoted or not. name rules out PayPal's other
// reports of the same structure by their file name prefixes.
func Detect(name string, head []byte) bool {
	return !otherReport(name) && rowType(bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF"))) == "RH"
}

// otherReport reports whether name is that of one of PayPal's other reports.
func otherReport(name string) bool {
	for _, p := range otherReports {
		if strings.HasPrefix(strings.ToUpper(name), p) {
			return true
		}
	}
	return false
}

// rowType returns the first field of line, trimmed and unquoted, whichever
// delimiter Parse sniffs ends it.
func rowType(line []byte) string {
	if i := bytes.IndexAny(line, ",;\t\r\n"); i >= 0 {
		line = line[:i]
	}
	return string(bytes.Trim(bytes.TrimSpace(line), `"`))
}

// Headless says how head, the start of a file Detect refused, looks like a
// settlement report that lost its first rows: every line starts with an STL
// row type, there are CH or SB rows, and the first row is not RH. Such a
// file is an excerpt, or was cut at the top, and stays unread: the rows it
// lost would make effects look missing. whole says that head is the whole
// file, so that the footers it lacks can be named too. It returns "" when
// head does not look like such a file.
func Headless(name string, head []byte, whole bool) string {
	if otherReport(name) {
		return ""
	}
	lines := bytes.Split(bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF")), []byte("\n"))
	if !whole {
		lines = lines[:len(lines)-1] // the last one may be cut
	}
	seen := map[string]bool{}
	first := ""
	for _, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		typ := upper(rowType(l))
		if !slices.Contains(rowTypes, typ) {
			return ""
		}
		first = cmp.Or(first, typ)
		seen[typ] = true
	}
	if first == "" || first == "RH" || !seen["CH"] && !seen["SB"] {
		return ""
	}
	var there, start, end []string // the row types present, and those missing that start and end the file
	for i, typ := range rowTypes {
		switch {
		case seen[typ]:
			there = append(there, typ)
		case i < 4:
			start = append(start, typ)
		case whole:
			end = append(end, typ)
		}
	}
	msg := fmt.Sprintf("looks like a PayPal settlement report (STL): its %s rows are there, but %s", list(there), missingHead(start))
	switch {
	case len(end) == 1:
		msg += fmt.Sprintf(", and so is the %s row that ends it", end[0])
	case len(end) > 1:
		msg += fmt.Sprintf(", and so are the %s rows that end it", list(end))
	}
	return msg + "; the file may be an excerpt or cut at the top, and is not read: download the whole report from PayPal again"
}

// missingHead says that the rows that start a file are missing.
func missingHead(rows []string) string {
	if len(rows) == 1 {
		return fmt.Sprintf("the %s row that starts the file is missing", rows[0])
	}
	return fmt.Sprintf("the %s rows that start the file are missing", list(rows))
}

// list writes "A", "A and B", "A, B and C".
func list(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// Parse reads a settlement report from r and gives every row's outcome to
// sink: SB rows become evidence or rejections, every other row is ignored
// with its reason once checked. It returns an error, and stops, when the
// input is not a settlement report, when its structure is broken, when a
// footer disagrees with the rows (ErrCorrupt), when the input cannot be read,
// or when sink fails.
func Parse(ctx context.Context, r io.Reader, opt Options, sink reconcile.RowSink) error {
	rd, err := tabular.NewReader(r, opt.Comma)
	if err != nil {
		return fmt.Errorf("line 1: %w", err)
	}
	p := &parser{sink: rd.Guard(sink), report: newScope(), file: newScope()}
	last := 0
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		rec, line, err := rd.Read()
		pe := tabular.Malformed(err)
		switch {
		case errors.Is(err, io.EOF):
			return cut(rd, p.finish(last))
		case pe != nil && last > 0:
			if err := p.unreadable(pe, rd.Raw()); err != nil {
				return err
			}
			last = pe.Line
			continue
		case pe != nil:
			return fmt.Errorf("line %d: not a PayPal settlement report (STL): %w", line, err)
		case err != nil:
			return fmt.Errorf("line %d: %w", last+1, err)
		}
		if len(rec) == 1 && tabular.Trim(rec[0]) == "" {
			continue // a blank line is not a row
		}
		first := last == 0
		last = line
		if err := p.row(rec, line, rd.Joined(), first); err != nil {
			return cut(rd, err)
		}
	}
}

// cut says of a broken structure found on an input's last line, or at
// its end, that the line has no terminator when it has none: the file may
// be incomplete because it is still being written, not corrupt.
func cut(rd *tabular.Reader, err error) error {
	if errors.Is(err, ErrCorrupt) {
		return rd.Cut(err)
	}
	return err
}

// flow is the credits and debits in one currency, in STL units.
type flow struct{ credit, debit int64 }

// scope adds up the SB rows of a section, the report or the file, for
// comparison with the footers that close it.
type scope struct {
	rows        int // SB rows
	unreadable  int // rows that were not well-formed CSV; any of them may have been SB rows
	gross, fee  map[string]*flow
	grossUnsure bool // an SB row's gross could not be read, so the totals cannot be compared
	feeUnsure   bool
	footed      map[string]bool // currencies that had a totals footer
}

func newScope() *scope {
	return &scope{gross: map[string]*flow{}, fee: map[string]*flow{}, footed: map[string]bool{}}
}

// merge adds the totals of a section, closed and checked, to s.
func (s *scope) merge(sec *scope) {
	for cur, f := range sec.gross {
		s.add(s.gross, cur, 1, f.credit)
		s.add(s.gross, cur, -1, f.debit)
	}
	for cur, f := range sec.fee {
		s.add(s.fee, cur, 1, f.credit)
		s.add(s.fee, cur, -1, f.debit)
	}
}

func (s *scope) add(m map[string]*flow, cur string, sign, v int64) {
	f := m[cur]
	if f == nil {
		f = &flow{}
		m[cur] = f
	}
	if sign > 0 {
		f.credit += v
	} else {
		f.debit += v
	}
}

// parser follows the structure of one file.
type parser struct {
	sink    reconcile.RowSink
	cols    *columns // from the last CH row; nil before it
	section *scope   // the open section; nil outside SH ... SC
	secLine int      // the open section's SH line
	report  *scope
	file    *scope
	rcSeen  bool // the report record count has been checked
	ffLine  int  // the file footer's line; 0 until seen
}

// scopes returns the scopes an SB row on the current line belongs to.
func (p *parser) scopes() []*scope {
	if p.section != nil {
		return []*scope{p.section, p.report, p.file}
	}
	return []*scope{p.report, p.file}
}

// corrupt returns an ErrCorrupt error for line.
func corrupt(line int, format string, args ...any) error {
	return fmt.Errorf("line %d: %w: %s", line, ErrCorrupt, fmt.Sprintf(format, args...))
}

// unreadable rejects a record that is not well-formed CSV. It may have
// been an SB row: its amounts are unknown, so the totals of its scopes can no
// longer be compared, and the record counts allow for it.
func (p *parser) unreadable(pe *csv.ParseError, raw string) error {
	if p.ffLine != 0 {
		return corrupt(pe.StartLine, "a row follows the file footer (FF) on line %d", p.ffLine)
	}
	for _, s := range p.scopes() {
		s.unreadable++
		s.grossUnsure, s.feeUnsure = true, true
	}
	reason := fmt.Sprintf("malformed CSV quoting: %v (byte %d of the line)", pe.Err, pe.Column)
	if pe.Line > pe.StartLine {
		reason = fmt.Sprintf("malformed CSV quoting (%v) in the row starting on this line; lines %d-%d were read as one row and none of them is used",
			pe.Err, pe.StartLine, pe.Line)
	}
	return p.sink.Reject(pe.StartLine, raw, reason)
}

// row handles one record by its row type.
func (p *parser) row(rec []string, line int, raw string, first bool) error {
	typ := upper(tabular.Trim(rec[0]))
	if first && typ != "RH" {
		if i := slices.Index(rowTypes, typ); i > 0 {
			return fmt.Errorf("line %d: looks like a PayPal settlement report (STL), but its first row is %s, not the report header (RH): %s; "+
				"the file may be an excerpt or cut at the top", line, typ, missingHead(rowTypes[:min(i, 4)]))
		}
		return fmt.Errorf("line %d: not a PayPal settlement report (STL): the first row is %q, not a report header (RH)", line, rec[0])
	}
	if p.ffLine != 0 {
		return corrupt(line, "a row follows the file footer (FF) on line %d", p.ffLine)
	}
	switch typ {
	case "RH":
		if !first {
			return corrupt(line, "a second report header (RH)")
		}
		return p.sink.Ignore(line, "report header (RH)")
	case "FH":
		return p.sink.Ignore(line, "file header (FH)")
	case "SH":
		if p.section != nil {
			return corrupt(line, "the section that starts on line %d has no section record count (SC)", p.secLine)
		}
		p.section, p.secLine = newScope(), line
		return p.sink.Ignore(line, "section header (SH)")
	case "CH":
		cols, err := newColumns(rec)
		if err != nil {
			return fmt.Errorf("line %d: column header (CH): %w", line, err)
		}
		p.cols = cols
		return p.sink.Ignore(line, "column header (CH)")
	case "SB":
		return p.body(rec, line, raw)
	case "SF":
		if p.section == nil {
			return corrupt(line, "a section footer (SF) outside a section")
		}
		checked, err := p.totals(p.section, "section footer (SF)", rec, line)
		if err != nil {
			return err
		}
		return p.sink.Ignore(line, "section footer totals (SF), "+checked)
	case "SC":
		if p.section == nil {
			return corrupt(line, "a section record count (SC) outside a section")
		}
		if err := p.close(p.section, "section footer (SC)", "section footer (SF)", rec, line); err != nil {
			return err
		}
		p.report.merge(p.section)
		p.file.merge(p.section)
		p.section = nil
		return p.sink.Ignore(line, "section record count (SC), checked")
	case "RF":
		if err := p.noOpenSection(line, "report footer (RF)"); err != nil {
			return err
		}
		checked, err := p.totals(p.report, "report footer (RF)", rec, line)
		if err != nil {
			return err
		}
		return p.sink.Ignore(line, "report footer totals (RF), "+checked)
	case "RC":
		if err := p.noOpenSection(line, "report record count (RC)"); err != nil {
			return err
		}
		if err := p.close(p.report, "report footer (RC)", "report footer (RF)", rec, line); err != nil {
			return err
		}
		p.rcSeen = true
		return p.sink.Ignore(line, "report record count (RC), checked")
	case "FF":
		if err := p.noOpenSection(line, "file footer (FF)"); err != nil {
			return err
		}
		if !p.rcSeen {
			// A report split over several files may carry its report footer
			// in the last one only. Such files are not supported yet, and
			// fail here rather than pass unchecked.
			return corrupt(line, "the file footer (FF) comes without a report record count (RC) before it")
		}
		if err := p.count(p.file, "file footer (FF)", rec, 1, line); err != nil {
			return err
		}
		p.ffLine = line
		return p.sink.Ignore(line, "file footer (FF), checked")
	}
	return p.sink.Reject(line, raw, fmt.Sprintf("unknown STL row type %q", rec[0]))
}

func (p *parser) noOpenSection(line int, what string) error {
	if p.section != nil {
		return corrupt(line, "%s comes before the section that starts on line %d has its section record count (SC)", what, p.secLine)
	}
	return nil
}

// finish checks, at the end of the input, that the file was complete.
func (p *parser) finish(last int) error {
	switch {
	case last == 0:
		return fmt.Errorf("line 1: empty file, not a PayPal settlement report (STL)")
	case p.ffLine == 0:
		return corrupt(last, "the file ends without its file footer (FF)")
	}
	return nil
}

// body handles an SB row: it counts and adds it up for the footers, then
// gives its outcome to the sink.
func (p *parser) body(rec []string, line int, raw string) error {
	if p.cols == nil {
		return corrupt(line, "a section body row (SB) before any column header (CH)")
	}
	if p.section == nil {
		return corrupt(line, "a section body row (SB) outside a section (no SH before it)")
	}
	for _, s := range p.scopes() {
		s.rows++
	}
	if len(rec) != len(p.cols.names) {
		for _, s := range p.scopes() {
			s.grossUnsure, s.feeUnsure = true, true
		}
		what := "short row"
		if len(rec) > len(p.cols.names) {
			what = "long row (a value may hold an unquoted delimiter, which shifts the columns)"
		}
		return p.sink.Reject(line, raw, fmt.Sprintf("%s: %d fields, the column header (CH) has %d", what, len(rec), len(p.cols.names)))
	}
	var gross, fee amount
	hasFee := p.cols.amounts(rec, &gross, &fee)
	p.addUp(&gross, &fee, hasFee)
	e, reason := p.cols.evidence(rec, line, raw, &gross, &fee, hasFee)
	if reason != "" {
		return p.sink.Reject(line, raw, reason)
	}
	e.Raw = raw
	return p.sink.Evidence(e)
}

// addUp adds an SB row's gross and fee to the open section, in STL units as
// the footers write them; the report and the file get the section's totals
// when it closes (merge), since their footers may only come after that. A
// row rejected for another reason (its date, say) still counts in the
// totals; one whose amounts could not be read leaves the totals of every
// scope it is in unknown.
func (p *parser) addUp(gross, fee *amount, hasFee bool) {
	s := p.section
	if gross.reason == "" {
		s.add(s.gross, gross.cur, gross.sign, gross.v)
	} else {
		for _, s := range p.scopes() {
			s.grossUnsure = true
		}
	}
	switch {
	case !hasFee:
	case fee.reason == "":
		s.add(s.fee, fee.cur, fee.sign, fee.v)
	default:
		for _, s := range p.scopes() {
			s.feeUnsure = true
		}
	}
}

// totals checks an SF or RF row, which gives one currency's totals:
// currency, gross credits, gross debits, fee credits, fee debits, then six
// balances with their CR/DR flags and, last, the record count. It says what
// it could check: a row whose amounts could not be read leaves its scope's
// totals unknown.
func (p *parser) totals(s *scope, what string, rec []string, line int) (string, error) {
	if len(rec) < 6 {
		return "", corrupt(line, "%s has %d fields, want at least 6 (currency, gross credits and debits, fee credits and debits)", what, len(rec))
	}
	cur, err := reconcile.NormalizeCurrency(rec[1])
	if err != nil {
		return "", fmt.Errorf("line %d: %s: %v; is this a PayPal settlement report (STL)?", line, what, err)
	}
	var n [4]int64
	for i := range n {
		v, ok := stlAmount(rec[2+i])
		if !ok {
			return "", corrupt(line, "%s field %d is %q, not an amount", what, 3+i, rec[2+i])
		}
		n[i] = v
	}
	g, f := flow{}, flow{}
	if x := s.gross[cur]; x != nil {
		g = *x
	}
	if x := s.fee[cur]; x != nil {
		f = *x
	}
	if !s.grossUnsure && (g.credit != n[0] || g.debit != n[1]) {
		return "", corrupt(line, "%s says %s gross credits %d and debits %d, the rows add up to %d and %d", what, cur, n[0], n[1], g.credit, g.debit)
	}
	if !s.feeUnsure && (f.credit != n[2] || f.debit != n[3]) {
		return "", corrupt(line, "%s says %s fee credits %d and debits %d, the rows add up to %d and %d", what, cur, n[2], n[3], f.credit, f.debit)
	}
	s.footed[cur] = true
	if len(rec) > 18 && strings.TrimSpace(rec[18]) != "" {
		if err := p.count(s, what, rec, 18, line); err != nil {
			return "", err
		}
	}
	switch {
	case s.grossUnsure && s.feeUnsure:
		return "not checked: amounts of a rejected row could not be read", nil
	case s.grossUnsure:
		return "fees checked; gross not checked: the gross of a rejected row could not be read", nil
	case s.feeUnsure:
		return "gross checked; fees not checked: the fee of a rejected row could not be read", nil
	}
	return "checked against the rows", nil
}

// close checks an SC or RC row: the record count, and that every currency
// the rows were in had its totals footer.
func (p *parser) close(s *scope, what, totals string, rec []string, line int) error {
	if err := p.count(s, what, rec, 1, line); err != nil {
		return err
	}
	var missing []string
	for _, m := range []map[string]*flow{s.gross, s.fee} {
		for cur := range m {
			if !s.footed[cur] && !slices.Contains(missing, cur) {
				missing = append(missing, cur)
			}
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing) // maps iterate in random order; the message must not
		list := strings.Join(missing, ", ")
		return corrupt(line, "there are %s rows but no %s totals for %s", list, totals, list)
	}
	return nil
}

// count checks the record count in field i against the SB rows of s. Rows
// that could not be read at all may or may not have been SB rows.
func (p *parser) count(s *scope, what string, rec []string, i, line int) error {
	if i >= len(rec) {
		return corrupt(line, "%s has no record count", what)
	}
	n, ok := stlAmount(rec[i])
	if !ok {
		return corrupt(line, "%s record count %q is not a number", what, rec[i])
	}
	if n < int64(s.rows) || n > int64(s.rows+s.unreadable) {
		found := fmt.Sprint(s.rows)
		if s.unreadable > 0 {
			found += fmt.Sprintf(" (and %d unreadable)", s.unreadable)
		}
		return corrupt(line, "%s says %d rows, found %s", what, n, found)
	}
	return nil
}

// stlAmount reads an STL amount or count: unsigned digits, nothing else.
func stlAmount(s string) (int64, bool) {
	s = tabular.Trim(s)
	if s == "" || len(s) > 18 { // 18 digits always fit in an int64
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		v = v*10 + int64(s[i]-'0')
	}
	return v, true
}
