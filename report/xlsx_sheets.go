package report

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"reconcile"
)

// The sheets of the workbook other than the Summary: a table each.

// Names of the sheets that are not a class's.
const (
	actionsSheet  = "Actions"
	rejectedSheet = "Rejected rows"
)

// className is a class as people read it, on its sheet and in the Summary
// alike: "Duplicated". The class escalated is a compensation in doubt, so
// that it does not read as the outcome escalated of an action beside it.
func className(c reconcile.Class) string {
	if c == reconcile.ClassEscalated {
		return "Compensation in doubt"
	}
	s := string(c)
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// sheetName is the name of a class's sheet: its name for people.
func sheetName(c reconcile.Class) string { return className(c) }

// column is a column of a table sheet: its title and width in characters.
type column struct {
	title string
	width float64
}

// maxIDColumns is how many columns of transaction ids a class sheet has at
// most: the last one holds the rest of a finding's ids, when it has more.
const maxIDColumns = 10

// shape is the columns of a class's sheet, which depend on its findings:
// as many transaction columns as a finding has transactions, amounts as
// wide as their largest.
type shape struct {
	findings      int
	txs, related  int // columns of transaction and related ids
	cols          []column
	diff          bool // a Difference column after Observed
	otherCur      bool // an Observed currency column before it
	keyW, idW, mW int  // widths of the effect key, the ids and the amounts
}

// otherCurrency is the currency of what was observed of d when it is not
// d's currency (a mismatch in another currency), else "".
func otherCurrency(d *Discrepancy) string {
	if d.ObservedCurrency == "" || strings.EqualFold(d.ObservedCurrency, d.Currency) {
		return ""
	}
	return strings.ToUpper(d.ObservedCurrency)
}

// classShapes measures the findings of every class.
func (b *book) classShapes(r *Result) map[reconcile.Class]*shape {
	out := map[reconcile.Class]*shape{}
	for i := range r.Discrepancies {
		d := &r.Discrepancies[i]
		s := out[d.Class]
		if s == nil {
			s = &shape{diff: d.Class == reconcile.ClassMismatched, keyW: len("Effect key"), idW: len("Transaction 10"), mW: len("Expected")}
			out[d.Class] = s
		}
		s.findings++
		s.txs, s.related = max(s.txs, len(d.Transactions)), max(s.related, len(d.Related))
		s.keyW = max(s.keyW, utf8.RuneCountInString(d.EffectKey))
		for _, id := range d.Transactions {
			s.idW = max(s.idW, utf8.RuneCountInString(id))
		}
		for _, id := range d.Related {
			s.idW = max(s.idW, utf8.RuneCountInString(id))
		}
		exp, obsExp := b.exponent(d.Provider, d.Currency), b.exponent(d.Provider, d.Currency)
		if cur := otherCurrency(d); cur != "" {
			s.otherCur, obsExp = true, b.exponent(d.Provider, cur)
		}
		s.mW = max(s.mW, shownLen(d.ExpectedMinor, exp), shownLen(d.ObservedMinor, obsExp), shownLen(d.AtRisk(), exp),
			shownLen(sub(d.ObservedMinor, d.ExpectedMinor), exp))
	}
	for c, s := range out {
		s.txs, s.related = min(max(s.txs, 1), maxIDColumns), min(s.related, maxIDColumns)
		idW := idWidth(s.idW, 36)
		s.cols = []column{{"Effect key", idWidth(s.keyW, 56)}, {"Provider", 10}, {"Time (UTC)", 20}, {"Currency", 10},
			{"Expected", float64(s.mW + 3)}, {"Observed", float64(s.mW + 3)}}
		if s.otherCur {
			s.cols = append(s.cols, column{"Observed currency", 10})
		}
		if s.diff {
			s.cols = append(s.cols, column{"Difference", float64(s.mW + 3)})
		}
		s.cols = append(s.cols, column{"At risk", float64(s.mW + 3)})
		s.cols = append(s.cols, idColumns("Transaction", s.txs, idW)...)
		s.cols = append(s.cols, idColumns("Related", s.related, idW)...)
		s.cols = append(s.cols, column{"Reason", 44}, column{"Actions", 32}, column{"First found (UTC)", 20})
		out[c] = s
	}
	return out
}

// idWidth is the width of a column of ids or keys of up to n characters,
// at most most: a column's width is counted in digits, and the capitals and
// small letters of an id ("ch_3VzsUvcxRNjfAEdulR3t8fNo") take a fifth more.
func idWidth(n, most int) float64 { return float64(min((n*6+4)/5+2, most)) }

// idColumns are n columns of ids: "Transaction", "Transaction 2", … and,
// when n is maxIDColumns, "More transactions" last.
func idColumns(title string, n int, width float64) []column {
	var out []column
	for i := range n {
		switch {
		case i == 0:
			out = append(out, column{title, width})
		case i == maxIDColumns-1:
			out = append(out, column{"More " + strings.ToLower(title) + "s", width})
		default:
			out = append(out, column{title + " " + strconv.Itoa(i+1), width})
		}
	}
	return out
}

// idCells fills n cells with ids, one to a cell but for the last of
// maxIDColumns, which holds the rest.
func (b *book) idCells(cells []any, ids []string) {
	for i := range cells {
		switch {
		case i >= len(ids):
			cells[i] = b.text("")
		case i == maxIDColumns-1 && len(ids) > maxIDColumns:
			cells[i] = b.wrapped(strings.Join(ids[i:], ", "))
		default:
			cells[i] = b.text(ids[i])
		}
	}
}

// shownLen is how many characters an amount takes as its cell shows it:
// "-1,234.56".
func shownLen(minor int64, exp int) int {
	n := len(strconv.FormatInt(minor, 10))
	if minor < 0 {
		n-- // the sign, added back below
	}
	whole := max(n-exp, 1)
	n = whole + (whole-1)/3
	if exp > 0 {
		n += 1 + exp
	}
	if minor < 0 {
		n++
	}
	return n
}

// classSheet writes the findings of class c, in the order of the result.
func (b *book) classSheet(r *Result, c reconcile.Class) error {
	sh := b.shapes[c]
	s := b.table(sheetName(c), sh.cols, sh.findings)
	row := make([]any, len(sh.cols))
	for i := range r.Discrepancies {
		d := &r.Discrepancies[i]
		if d.Class != c {
			continue
		}
		exp := b.exponent(d.Provider, d.Currency)
		row[0], row[1], row[2], row[3] = b.text(d.EffectKey), b.text(d.Provider), b.date(d.Time), b.text(d.Currency)
		other := otherCurrency(d)
		row[4] = b.money(d.ExpectedMinor, exp)
		if other == "" {
			row[5] = b.money(d.ObservedMinor, exp)
		} else {
			row[5] = b.money(d.ObservedMinor, b.exponent(d.Provider, other))
		}
		at := 6
		if sh.otherCur {
			row[at] = b.text(other)
			at++
		}
		if sh.diff {
			// Observed − expected, signed; none between two currencies.
			row[at] = b.blank(b.st.plain)
			if other == "" {
				row[at] = b.money(sub(d.ObservedMinor, d.ExpectedMinor), exp)
			}
			at++
		}
		row[at] = b.money(d.AtRisk(), exp)
		at++
		b.idCells(row[at:at+sh.txs], d.Transactions)
		at += sh.txs
		b.idCells(row[at:at+sh.related], d.Related)
		at += sh.related
		row[at], row[at+1], row[at+2] = b.wrapped(d.Reason), b.wrapped(actionLines(d, exp)), b.date(d.FirstFound)
		if err := s.add(row...); err != nil {
			return err
		}
	}
	return s.close()
}

// actionLines writes a finding's actions one per line, for its row on the
// class sheet: "compensate 12.34 EUR: applied". The Actions sheet has each
// one on a row of its own.
func actionLines(d *Discrepancy, exp int) string {
	var w []string
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
	}
	return strings.Join(w, "\n")
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

// actionColumns are the columns of the Actions sheet, the keys and ids as
// wide as the widest of them (within bounds).
func (b *book) actionColumns(r *Result) ([]column, int) {
	n, w := 0, [5]int{len("Effect key"), len("Action key"), len("Target"), len("Made"), len("Amount")}
	for i := range r.Discrepancies {
		d := &r.Discrepancies[i]
		n += len(d.Actions)
		for _, x := range d.Actions {
			w[0], w[1] = max(w[0], utf8.RuneCountInString(d.EffectKey)), max(w[1], utf8.RuneCountInString(x.Key))
			w[2], w[3] = max(w[2], utf8.RuneCountInString(x.Target)), max(w[3], utf8.RuneCountInString(x.Made))
			w[4] = max(w[4], shownLen(x.AmountMinor, b.exponent(d.Provider, cmp.Or(x.Currency, d.Currency))))
		}
	}
	return []column{{"Effect key", idWidth(w[0], 56)}, {"Class", 22}, {"Kind", 12}, {"Outcome", 11}, {"Currency", 10},
		{"Amount", float64(min(w[4]+3, 30))}, {"Action key", idWidth(w[1], 64)}, {"Target", idWidth(w[2], 48)}, {"Made", idWidth(w[3], 36)},
		{"Note", 50}}, n
}

// actionsSheet writes every action of every finding on a row of its own,
// in the order of the result: what it moves as a number, what the provider
// made in a cell of its own.
func (b *book) actionsSheet(r *Result) error {
	cols, n := b.actionColumns(r)
	s := b.table(actionsSheet, cols, n)
	for i := range r.Discrepancies {
		d := &r.Discrepancies[i]
		for _, x := range d.Actions {
			cur, amount := b.text(""), b.blank(b.st.plain)
			if x.AmountMinor != 0 {
				c := x.Currency
				if c == "" {
					c = d.Currency
				}
				cur, amount = b.text(c), b.money(x.AmountMinor, b.exponent(d.Provider, c))
			}
			err := s.add(b.text(d.EffectKey), b.text(className(d.Class)), b.text(string(x.Kind)), b.text(string(x.Outcome)), cur, amount,
				b.text(x.Key), b.text(x.Target), b.text(x.Made), b.wrapped(x.Note))
			if err != nil {
				return err
			}
		}
	}
	return s.close()
}

var rejectedColumns = []column{{"File", 40}, {"Line", 8}, {"Reason", 50}, {"Raw row", 100}}

func (b *book) rejectedSheet(rows []Rejected) error {
	s := b.table(rejectedSheet, rejectedColumns, len(rows))
	s.repeat = 2 // the file and the line
	for _, x := range rows {
		if err := s.add(b.text(x.URI), b.plain(int64(x.Line)), b.wrapped(x.Reason), b.wrapped(x.Raw)); err != nil {
			return err
		}
	}
	return s.close()
}

// escalationsWhen says which escalations the workbook lists: those open
// when it was written.
func (b *book) escalationsWhen() string {
	return "open at " + b.written.Format("2006-01-02 15:04:05") + " UTC, when this workbook was written"
}

// escalationsCaption says what the Escalations sheet lists: the
// escalations open when the workbook was written, which is what it is
// given; and if it is given resolved ones too, how many of each.
func (b *book) escalationsCaption(rows []Escalation) string {
	open := 0
	for _, x := range rows {
		if x.ResolvedAt == nil {
			open++
		}
	}
	if open == len(rows) {
		return fmt.Sprintf("Escalations %s: %d.", b.escalationsWhen(), open)
	}
	return fmt.Sprintf("Escalations as they stood at %s UTC, when this workbook was written: %d open, %d resolved.",
		b.written.Format("2006-01-02 15:04:05"), open, len(rows)-open)
}

// escalationsSheet writes the escalations open when the workbook is
// written, below a caption that says so. Its columns of resolutions are
// there only when an escalation given is resolved.
func (b *book) escalationsSheet(rows []Escalation) error {
	resolved := false
	for _, x := range rows {
		resolved = resolved || x.ResolvedAt != nil || x.ResolvedBy != ""
	}
	cols := []column{{"Key", 46}, {"Subject", 38}, {"Class", 22}, {"Reason", 50}, {"Status", 10}, {"Opened (UTC)", 20}, {"Paged (UTC)", 20}}
	if resolved {
		cols = append(cols, column{"Resolved (UTC)", 20}, column{"Resolved by", 14})
	}
	cols = append(cols, column{"Note", 40})
	s := b.table("Escalations", cols, len(rows))
	s.caption = b.escalationsCaption(rows)
	for _, x := range rows {
		class := x.Class
		if c := reconcile.Class(x.Class); isClass(c) {
			class = className(c)
		}
		row := []any{b.text(x.Key), b.text(x.Subject), b.text(class), b.wrapped(x.Reason), b.text(x.Status), b.date(timeOf(x.OpenedAt)), b.date(timeOf(x.PagedAt))}
		if resolved {
			row = append(row, b.date(timeOf(x.ResolvedAt)), b.text(x.ResolvedBy))
		}
		if err := s.add(append(row, b.wrapped(x.Note))...); err != nil {
			return err
		}
	}
	return s.close()
}

// isClass reports whether c is one of reconcile.Classes.
func isClass(c reconcile.Class) bool {
	for _, x := range reconcile.Classes {
		if x == c {
			return true
		}
	}
	return false
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
