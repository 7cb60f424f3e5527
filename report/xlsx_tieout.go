package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"reconcile"
)

// What a controller reads the Summary for first: the verdict, the money at
// risk, the volume that did reconcile, and the totals of every input to
// tie out to the payout and the bank statement.

// confirmedVolumes is the money of r's confirmed effects per provider and
// currency, and inputTotals the evidence an input gave per provider,
// currency and kind. Variables, so that a test can give them.
var (
	confirmedVolumes = func(r *Result) []Volume { return r.Confirmed }
	inputTotals      = func(in *Input) []Volume { return in.Totals }
)

// verdict is what the Summary says first: whether the run needs a person
// (r.NeedsPerson, which decides the exit status) and why, in words.
func verdict(r *Result) (needs bool, why string) {
	refused, handed, planned, open := 0, 0, 0, 0
	for i := range r.Discrepancies {
		if r.Discrepancies[i].AtRisk() != 0 {
			open++
		}
		for _, x := range r.Discrepancies[i].Actions {
			switch {
			case x.Outcome == reconcile.OutcomeRefused:
				refused++
			case x.Kind == reconcile.ActionEscalate || x.Outcome == reconcile.OutcomeEscalated:
				handed++
			case x.Outcome == reconcile.OutcomePlanned:
				planned++
			}
		}
	}
	if !r.NeedsPerson() {
		why = "nothing needs a person"
		if open > 0 {
			why += fmt.Sprintf("; %s money at risk that its actions, or the next run, are to settle (see below)", plural(open, "finding has", "findings have"))
		}
		if planned > 0 && !r.Applied {
			why += fmt.Sprintf("; %s planned, not made: this run changed nothing outside the ledger", plural(planned, "action is", "actions are"))
		}
		return false, why
	}
	var parts, sheets []string
	for _, x := range []struct {
		n         int
		one, many string
		sheet     string
	}{
		{r.Counts[string(reconcile.ClassMismatched)], "mismatched amount", "mismatched amounts", sheetName(reconcile.ClassMismatched)},
		{r.Counts[string(reconcile.ClassUnexpected)], "unexpected transaction", "unexpected transactions", sheetName(reconcile.ClassUnexpected)},
		{r.Counts[string(reconcile.ClassEscalated)], "compensation in doubt", "compensations in doubt", sheetName(reconcile.ClassEscalated)},
		{refused, "action refused by the provider", "actions refused by the provider", actionsSheet},
		{handed, "finding handed to a person", "findings handed to a person", "Escalations"},
		{len(r.Orphans), "orphan", "orphans", "Orphans"},
	} {
		if x.n > 0 {
			parts = append(parts, plural(x.n, x.one, x.many))
			if !slices.Contains(sheets, x.sheet) {
				sheets = append(sheets, x.sheet)
			}
		}
	}
	if len(parts) == 0 {
		return true, "see the sheets of findings and the actions"
	}
	return true, strings.Join(parts, ", ") + ". See the sheets " + strings.Join(sheets, ", ") + "."
}

// verdictRows are the Summary's row of the verdict, whose reasons span
// the columns from B on.
func (b *book) verdictRow(r *Result) []any {
	needs, why := verdict(r)
	if needs {
		return []any{b.styled(b.st.alert, "Verdict: needs a person"), b.styled(b.st.alertWrap, why)}
	}
	return []any{b.styled(b.st.good, "Verdict: reconciled"), b.styled(b.st.goodWrap, why)}
}

// confirmedRows are the Summary's confirmed volume per currency: the
// count and money per currency when the result has them, else the count
// the result has.
func (b *book) confirmedRows(r *Result, fg *figures) [][]any {
	if len(fg.confirmed) == 0 {
		return [][]any{{b.text("All currencies"), b.count(int64(r.Counts[string(reconcile.ClassConfirmed)])),
			b.text("the count alone: amounts per currency are not in the result")}}
	}
	var rows [][]any
	for _, u := range sortedUnits(fg.confirmed) {
		v := fg.confirmed[u]
		rows = append(rows, []any{b.text(fg.label(u)), b.count(int64(v.count)), b.money(v.amount, u.exp)})
	}
	return rows
}

// inputTotalRows are the Summary's gross, fees and net of every input per
// currency and kind, and of all kinds, for the tie-out to the payout and
// the bank statement; or a row that says the result has none.
func (b *book) inputTotalRows(r *Result, fg *figures) [][]any {
	some := false
	for i := range r.Inputs {
		some = some || len(inputTotals(&r.Inputs[i])) > 0
	}
	if !some {
		return [][]any{{b.text("Not in the result: it counts each input's rows (see Inputs below), not their money.")}}
	}
	type key struct {
		u    unit
		kind reconcile.Kind
	}
	const all = "all kinds"
	var rows [][]any
	for i := range r.Inputs {
		in := &r.Inputs[i]
		sums, kinds := map[key]*Volume{}, map[unit]int{}
		for _, v := range inputTotals(in) {
			u := unit{v.Currency, b.exponent(v.Provider, v.Currency)}
			if sums[key{u, v.Kind}] == nil {
				kinds[u]++
			}
			for _, k := range []key{{u, v.Kind}, {u, all}} {
				s := sums[k]
				if s == nil {
					s = &Volume{}
					sums[k] = s
				}
				s.Count += v.Count
				s.AmountMinor, s.FeeMinor = add(s.AmountMinor, v.AmountMinor), add(s.FeeMinor, v.FeeMinor)
			}
		}
		if len(sums) == 0 {
			note := "no evidence read from this input in this run"
			if in.AlreadyIngested {
				note = "ingested before: not read again in this run"
			}
			rows = append(rows, []any{b.wrapped(in.URI), nil, nil, nil, nil, nil, b.text(note)})
			continue
		}
		for u, n := range kinds {
			if n == 1 { // its one kind is all of them
				delete(sums, key{u, all})
			}
		}
		// Per currency, its kinds and then all of them.
		last := func(k key) int {
			if k.kind == all {
				return 1
			}
			return 0
		}
		keys := slices.SortedFunc(maps.Keys(sums), func(a, c key) int {
			return cmp.Or(cmp.Compare(a.u.cur, c.u.cur), cmp.Compare(a.u.exp, c.u.exp), cmp.Compare(last(a), last(c)), cmp.Compare(a.kind, c.kind))
		})
		// The file on its first row, so that its rows read as one group.
		file := b.wrapped(in.URI)
		for _, k := range keys {
			s := sums[k]
			kind := b.text(string(k.kind))
			if k.kind == all {
				kind = b.styled(b.st.label, all)
			}
			rows = append(rows, []any{file, b.text(fg.label(k.u)), kind, b.count(int64(s.Count)),
				b.money(s.AmountMinor, k.u.exp), b.money(s.FeeMinor, k.u.exp), b.money(sub(s.AmountMinor, s.FeeMinor), k.u.exp)})
			file = b.text("")
		}
	}
	return rows
}

// sub is a − c, saturating as add does.
func sub(a, c int64) int64 {
	if c == math.MinInt64 {
		return add(add(a, math.MaxInt64), 1)
	}
	return add(a, -c)
}
