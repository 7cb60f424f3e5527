package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/xuri/excelize/v2"

	"reconcile"
)

// unit is what amounts are summed in: a currency and the decimals of its
// minor units. Providers may disagree on the decimals of one currency
// (Stripe's ISK has two, ISO's none); minor units of different decimals are
// never added together.
type unit struct {
	cur string
	exp int
}

// classSums is the money of one class in one unit.
type classSums struct {
	findings                   int
	expected, observed, atRisk int64
}

type actionGroup struct {
	kind    reconcile.ActionKind
	outcome reconcile.Outcome
	unit    unit // zero for actions that move no money
}

type actionSums struct {
	count  int
	amount int64
}

// figures are the summary's sums over the findings.
type figures struct {
	classes map[reconcile.Class]map[unit]*classSums
	atRisk  map[unit]int64
	// repaired is what this run's actions made that the provider has yet
	// to confirm.
	repaired map[unit]int64
	openN    map[unit]int // findings with money at risk
	actions  map[actionGroup]*actionSums
	// confirmed is the confirmed volume, when the result has it.
	confirmed map[unit]*actionSums
	exps      map[string]map[int]bool // the decimals each currency came in
}

func sumUp(r *Result, exponent func(provider, cur string) int) *figures {
	fg := &figures{classes: map[reconcile.Class]map[unit]*classSums{}, atRisk: map[unit]int64{}, repaired: map[unit]int64{}, openN: map[unit]int{},
		actions: map[actionGroup]*actionSums{}, confirmed: map[unit]*actionSums{}, exps: map[string]map[int]bool{}}
	note := func(u unit) {
		if fg.exps[u.cur] == nil {
			fg.exps[u.cur] = map[int]bool{}
		}
		fg.exps[u.cur][u.exp] = true
	}
	for _, v := range confirmedVolumes(r) {
		u := unit{v.Currency, exponent(v.Provider, v.Currency)}
		note(u)
		s := fg.confirmed[u]
		if s == nil {
			s = &actionSums{}
			fg.confirmed[u] = s
		}
		s.count += v.Count
		s.amount = add(s.amount, v.AmountMinor)
	}
	for i := range r.Inputs {
		for _, v := range inputTotals(&r.Inputs[i]) {
			note(unit{v.Currency, exponent(v.Provider, v.Currency)})
		}
	}
	for i := range r.Discrepancies {
		d := &r.Discrepancies[i]
		u := unit{d.Currency, exponent(d.Provider, d.Currency)}
		note(u)
		byUnit := fg.classes[d.Class]
		if byUnit == nil {
			byUnit = map[unit]*classSums{}
			fg.classes[d.Class] = byUnit
		}
		s := byUnit[u]
		if s == nil {
			s = &classSums{}
			byUnit[u] = s
		}
		s.findings++
		s.expected = add(s.expected, d.ExpectedMinor)
		s.atRisk = add(s.atRisk, d.AtRisk())
		if cur := otherCurrency(d); cur != "" {
			// What was observed in another currency is added to that
			// currency, never to the one expected.
			ou := unit{cur, exponent(d.Provider, cur)}
			note(ou)
			if byUnit[ou] == nil {
				byUnit[ou] = &classSums{}
			}
			s = byUnit[ou]
		}
		s.observed = add(s.observed, d.ObservedMinor)
		if d.Class != reconcile.ClassPending {
			fg.atRisk[u] = add(fg.atRisk[u], d.AtRisk())
			fg.repaired[u] = add(fg.repaired[u], d.Repaired())
			if d.AtRisk() != 0 {
				fg.openN[u]++
			}
		}
		for _, x := range d.Actions {
			g := actionGroup{kind: x.Kind, outcome: x.Outcome}
			if x.AmountMinor != 0 {
				g.unit = u
				if x.Currency != "" && x.Currency != d.Currency {
					g.unit = unit{x.Currency, exponent(d.Provider, x.Currency)}
					note(g.unit)
				}
			}
			a := fg.actions[g]
			if a == nil {
				a = &actionSums{}
				fg.actions[g] = a
			}
			a.count++
			a.amount = add(a.amount, x.AmountMinor)
		}
	}
	return fg
}

// findings is how many findings class c has.
func (fg *figures) findings(c reconcile.Class) int {
	n := 0
	for _, s := range fg.classes[c] {
		n += s.findings
	}
	return n
}

// label names a unit for people: the currency, and its decimals when the
// currency came in more than one.
func (fg *figures) label(u unit) string {
	if len(fg.exps[u.cur]) > 1 {
		return fmt.Sprintf("%s (%d decimals)", u.cur, u.exp)
	}
	return u.cur
}

func sortedUnits[V any](m map[unit]V) []unit {
	return slices.SortedFunc(maps.Keys(m), func(a, b unit) int {
		return cmp.Or(cmp.Compare(a.cur, b.cur), cmp.Compare(a.exp, b.exp))
	})
}

// summaryWidths are the widths of the Summary's columns: a column of
// labels and file names, then columns of figures.
var summaryWidths = []float64{44, 22, 18, 18, 18, 18, 18}

// summary writes the Summary sheet: first the verdict, the money at risk,
// the confirmed volume and the inputs' money, which a controller reads
// first; then the inputs' rows, counts and money per class and currency,
// the actions, and what else to look at.
func (b *book) summary(r *Result, escalations []Escalation) error {
	fg := sumUp(r, b.exponent)
	lbl := func(v string) any { return b.styled(b.st.label, v) }
	head := func(v ...string) []any {
		cells := make([]any, len(v))
		for i, x := range v {
			cells[i] = b.header(x)
		}
		return cells
	}
	heading := func(v string) []any { return []any{b.styled(b.st.heading, v)} }
	asOf := b.text(r.AsOf)
	if t, err := time.Parse(time.RFC3339, r.AsOf); err == nil {
		asOf = b.date(t)
	}
	rows := [][]any{{b.styled(b.st.title, "Reconciliation run")}, b.verdictRow(r), {lbl("Run"), b.text(r.RunID)}, {lbl("As of (UTC)"), asOf}}
	mode := "Plan only: nothing was changed outside the ledger"
	if r.Applied {
		mode = "Applied: the refunds and redeliveries below were made"
	}
	rows = append(rows, []any{lbl("Mode"), b.text(mode)}, []any{lbl("Started (UTC)"), b.date(r.StartedAt)}, []any{lbl("Finished (UTC)"), b.date(r.FinishedAt)})
	if n := len(r.Orphans); n > 0 {
		rows = append(rows, []any{b.styled(b.st.alert, fmt.Sprintf("ORPHANS: %d", n)), b.styled(b.st.alert,
			fmt.Sprintf("%s made by an owner that had lost its claim: real money nobody else reports. See the sheet Orphans.", plural(n, "effect was", "effects were")))})
	}
	if r.OutOfScope > 0 {
		rows = append(rows, []any{lbl("Out of scope"), b.text(plural(r.OutOfScope, "effect", "effects") + " (no evidence of their kind in these inputs)")})
	}

	rows = append(rows, nil, heading("Money at risk per currency"), head("Currency", "At risk", "Repaired (unconfirmed)", "Findings at risk"))
	over := r.Overflowed()
	for _, u := range sortedUnits(fg.atRisk) {
		row := []any{b.text(fg.label(u)), b.money(fg.atRisk[u], u.exp), b.money(fg.repaired[u], u.exp), b.count(int64(fg.openN[u]))}
		if over[u.cur] {
			row = append(row, b.text("at least: the sum is more than a cell holds"))
		}
		rows = append(rows, row)
	}
	if len(fg.atRisk) == 0 {
		rows = append(rows, []any{b.text("none")})
	}
	rows = append(rows, nil, heading("Confirmed volume per currency"), head("Currency", "Effects", "Amount"))
	rows = append(rows, b.confirmedRows(r, fg)...)
	rows = append(rows, nil, heading("Gross, fees and net per input and currency"), head("File", "Currency", "Kind", "Count", "Gross", "Fees", "Net"))
	rows = append(rows, b.inputTotalRows(r, fg)...)

	rows = append(rows, nil, heading("Inputs"), head("File", "Format", "Rows", "Evidence", "Rejected", "Ignored", "Note"))
	var tot Input
	for _, in := range r.Inputs {
		note := ""
		if in.AlreadyIngested {
			note = "ingested before"
		}
		rows = append(rows, []any{b.wrapped(in.URI), b.text(in.Format), b.count(int64(in.Rows)), b.count(int64(in.Evidence)),
			b.count(int64(in.Rejected)), b.count(int64(in.Ignored)), b.text(note)})
		tot.Rows, tot.Evidence, tot.Rejected, tot.Ignored = tot.Rows+in.Rows, tot.Evidence+in.Evidence, tot.Rejected+in.Rejected, tot.Ignored+in.Ignored
	}
	rows = append(rows, []any{lbl("Total"), b.text(""), b.count(int64(tot.Rows)), b.count(int64(tot.Evidence)), b.count(int64(tot.Rejected)), b.count(int64(tot.Ignored))})

	// What a controller reads first is above; the details start on a page
	// of their own.
	details := len(rows) + 1
	rows = append(rows, nil, heading("Findings per class"), head("Class", "Count", "Sheet"))
	for _, c := range reconcile.Classes {
		where := ""
		if n := fg.findings(c); n > 0 && c != reconcile.ClassConfirmed {
			where = sheetName(c)
			if parts := sheetParts(n); parts > 1 {
				where = fmt.Sprintf("%s to %s (%d)", where, where, parts)
			}
		}
		rows = append(rows, []any{b.text(className(c)), b.count(int64(r.Counts[string(c)])), b.text(where)})
	}

	rows = append(rows, nil, heading("Money per class and currency"), head("Class", "Currency", "Findings", "Expected", "Observed", "At risk"))
	for _, c := range reconcile.Classes {
		for _, u := range sortedUnits(fg.classes[c]) {
			m := fg.classes[c][u]
			rows = append(rows, []any{b.text(className(c)), b.text(fg.label(u)), b.count(int64(m.findings)),
				b.money(m.expected, u.exp), b.money(m.observed, u.exp), b.money(m.atRisk, u.exp)})
		}
	}

	rows = append(rows, nil, heading("Actions"), head("Kind", "Outcome", "Currency", "Count", "Amount"))
	groups := slices.SortedFunc(maps.Keys(fg.actions), func(a, c actionGroup) int {
		return cmp.Or(cmp.Compare(a.kind, c.kind), cmp.Compare(a.outcome, c.outcome),
			cmp.Compare(a.unit.cur, c.unit.cur), cmp.Compare(a.unit.exp, c.unit.exp))
	})
	for _, g := range groups {
		a := fg.actions[g]
		row := []any{b.text(string(g.kind)), b.text(string(g.outcome)), nil, b.count(int64(a.count))}
		if g.unit.cur != "" {
			row[2] = b.text(fg.label(g.unit))
			row = append(row, b.money(a.amount, g.unit.exp))
		}
		rows = append(rows, row)
	}
	if len(groups) == 0 {
		rows = append(rows, []any{b.text("none")})
	}

	rejected := "input rows that are not evidence"
	if r.RejectedUnlisted > 0 {
		rejected += fmt.Sprintf("; %d more are not listed here (the ledger keeps them all)", r.RejectedUnlisted)
	}
	rows = append(rows, nil, heading("Elsewhere in this workbook"),
		[]any{lbl(actionsSheet), b.count(int64(fg.actionCount())), b.text("every action on a row of its own")},
		[]any{lbl(rejectedSheet), b.count(int64(len(r.Rejected))), b.text(rejected)},
		[]any{lbl("Escalations"), b.count(int64(len(escalations))), b.text("findings handed to a person, " + b.escalationsWhen())})
	return b.writeSummary(rows, details)
}

// writeSummary streams the Summary's rows; the verdict's reasons, on the
// second row, span the columns from B on. A printed page ends above row
// details.
func (b *book) writeSummary(rows [][]any, details int) error {
	cols := 0
	for _, row := range rows {
		for i, c := range row {
			if c != nil {
				cols = max(cols, i+1)
			}
		}
	}
	cols = max(cols, len(summaryWidths))
	s, err := b.newSheet("Summary", summaryWidths, len(rows), cols, 1)
	if err != nil {
		return err
	}
	if err := s.sw.InsertPageBreak("A" + strconv.Itoa(details)); err != nil {
		return err
	}
	for i, row := range rows {
		lines := 1
		if i == 1 { // the verdict
			last, _ := excelize.CoordinatesToCellName(len(summaryWidths), 2)
			if err := s.sw.MergeCell("B2", last); err != nil {
				return err
			}
			why, _ := row[1].(excelize.Cell).Value.(string)
			lines = wrappedLines(why, sum(summaryWidths[1:])*0.9) // bold 12 point is wider
		}
		if err := s.addLines(lines, row...); err != nil {
			return err
		}
	}
	return s.sw.Flush()
}

func sum(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t
}

// actionCount is how many actions the findings have.
func (fg *figures) actionCount() int {
	n := 0
	for _, a := range fg.actions {
		n += a.count
	}
	return n
}

// plural writes n, its thousands grouped as the cells show them, with the
// singular or the plural words.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return groupThousands(strconv.Itoa(n)) + " " + many
}

// add sums money for the workbook, saturating rather than wrapping: a
// saturated total is the largest amount a cell can show, never a negative.
func add(a, b int64) int64 {
	s, _ := reconcile.AddMinor(a, b)
	return s
}
