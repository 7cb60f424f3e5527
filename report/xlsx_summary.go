package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

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
	actions map[actionGroup]*actionSums
	exps    map[string]map[int]bool // the decimals each currency came in
}

func sumUp(r *Result, exponent func(provider, cur string) int) *figures {
	fg := &figures{classes: map[reconcile.Class]map[unit]*classSums{}, atRisk: map[unit]int64{},
		actions: map[actionGroup]*actionSums{}, exps: map[string]map[int]bool{}}
	note := func(u unit) {
		if fg.exps[u.cur] == nil {
			fg.exps[u.cur] = map[int]bool{}
		}
		fg.exps[u.cur][u.exp] = true
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
		s.observed = add(s.observed, d.ObservedMinor)
		s.atRisk = add(s.atRisk, d.AtRisk())
		if d.Class != reconcile.Pending {
			fg.atRisk[u] = add(fg.atRisk[u], d.AtRisk())
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

// summary writes the Summary sheet: the run, its inputs, counts and money
// per class and currency, the money at risk, the actions, and what else to
// look at.
func (b *book) summary(r *Result, escalations []Escalation) error {
	fg := sumUp(r, b.exponent)
	s, err := b.newSheet("Summary", []float64{46, 20, 20, 20, 20, 20, 20})
	if err != nil {
		return err
	}
	lbl := func(v string) any { return b.styled(b.st.label, v) }
	head := func(v ...string) []any {
		cells := make([]any, len(v))
		for i, x := range v {
			cells[i] = b.header(x)
		}
		return cells
	}
	rows := [][]any{{b.styled(b.st.title, "Reconciliation run")}, {lbl("Run"), b.text(r.RunID)}, {lbl("As of"), b.text(r.AsOf)},
		{lbl("Started (UTC)"), b.date(r.StartedAt)}, {lbl("Finished (UTC)"), b.date(r.FinishedAt)}}
	mode := "Plan only: nothing was changed outside the ledger"
	if r.Applied {
		mode = "Applied: the refunds and redeliveries below were made"
	}
	rows = append(rows, []any{lbl("Mode"), b.text(mode)})
	needs := "No"
	if r.NeedsPerson() {
		needs = "Yes: see the Mismatched, Unexpected and Escalated sheets and refused actions"
	}
	rows = append(rows, []any{lbl("Needs a person"), b.text(needs)})
	if n := len(r.Orphans); n > 0 {
		rows = append(rows, []any{b.styled(b.st.alert, fmt.Sprintf("ORPHANS: %d", n)), b.styled(b.st.alert,
			fmt.Sprintf("%s made by an owner that had lost its claim: real money nobody else reports. See the sheet Orphans.", plural(n, "effect was", "effects were")))})
	}
	if r.OutOfScope > 0 {
		rows = append(rows, []any{lbl("Out of scope"), b.text(plural(r.OutOfScope, "effect", "effects") + " (no evidence of their kind in these inputs)")})
	}

	rows = append(rows, nil, []any{b.styled(b.st.heading, "Inputs")}, head("File", "Format", "Rows", "Evidence", "Rejected", "Ignored", "Note"))
	var tot Input
	for _, in := range r.Inputs {
		note := ""
		if in.AlreadyIngested {
			note = "ingested before"
		}
		rows = append(rows, []any{b.text(in.URI), b.text(in.Format), b.count(int64(in.Rows)), b.count(int64(in.Evidence)),
			b.count(int64(in.Rejected)), b.count(int64(in.Ignored)), b.text(note)})
		tot.Rows, tot.Evidence, tot.Rejected, tot.Ignored = tot.Rows+in.Rows, tot.Evidence+in.Evidence, tot.Rejected+in.Rejected, tot.Ignored+in.Ignored
	}
	rows = append(rows, []any{lbl("Total"), nil, b.count(int64(tot.Rows)), b.count(int64(tot.Evidence)), b.count(int64(tot.Rejected)), b.count(int64(tot.Ignored))})

	rows = append(rows, nil, []any{b.styled(b.st.heading, "Findings per class")}, head("Class", "Count", "Sheet"))
	for _, c := range reconcile.Classes {
		where := ""
		if n := fg.findings(c); n > 0 && c != reconcile.Confirmed {
			where = sheetName(c)
			if parts := sheetParts(n); parts > 1 {
				where = fmt.Sprintf("%s to %s (%d)", where, where, parts)
			}
		}
		rows = append(rows, []any{b.text(string(c)), b.count(int64(r.Counts[string(c)])), b.text(where)})
	}

	rows = append(rows, nil, []any{b.styled(b.st.heading, "Money per class and currency")},
		head("Class", "Currency", "Findings", "Expected", "Observed", "At risk"))
	for _, c := range reconcile.Classes {
		for _, u := range sortedUnits(fg.classes[c]) {
			m := fg.classes[c][u]
			rows = append(rows, []any{b.text(string(c)), b.text(fg.label(u)), b.count(int64(m.findings)),
				b.money(m.expected, u.exp), b.money(m.observed, u.exp), b.money(m.atRisk, u.exp)})
		}
	}

	rows = append(rows, nil, []any{b.styled(b.st.heading, "Money at risk per currency")}, head("Currency", "At risk"))
	for _, u := range sortedUnits(fg.atRisk) {
		rows = append(rows, []any{b.text(fg.label(u)), b.money(fg.atRisk[u], u.exp)})
	}
	if len(fg.atRisk) == 0 {
		rows = append(rows, []any{b.text("none")})
	}

	rows = append(rows, nil, []any{b.styled(b.st.heading, "Actions")}, head("Kind", "Outcome", "Currency", "Count", "Amount"))
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

	rows = append(rows, nil, []any{b.styled(b.st.heading, "Elsewhere in this workbook")},
		[]any{lbl(rejectedSheet), b.count(int64(len(r.Rejected))), b.text("input rows that are not evidence")},
		[]any{lbl("Escalations"), b.count(int64(len(escalations))), b.text("findings handed to a person")})
	for _, row := range rows {
		if err := s.add(row...); err != nil {
			return err
		}
	}
	return s.sw.Flush()
}

// plural writes n with the singular or the plural words.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// add sums money for the workbook, saturating rather than wrapping: a
// saturated total is the largest amount a cell can show, never a negative.
func add(a, b int64) int64 {
	s, _ := reconcile.AddMinor(a, b)
	return s
}
