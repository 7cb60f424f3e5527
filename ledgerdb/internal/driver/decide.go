package driver

import (
	"cmp"
	"slices"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/matcher"
)

// Decided is what a run's findings write, decided by the matcher's rules
// (matcher.IsFinal, matcher.ConfirmingID) once for both drivers, which
// store it as it is.
type Decided struct {
	Findings []*reconcile.Discrepancy // a finding row each: those not confirmed, in order
	States   []StateRow               // the state of each classified effect, in key order
	Confirm  []ledgerdb.Confirmation  // the attempted effects evidence confirmed, if still attempted, in key order
}

// StateRow is an effect's state as a run leaves it.
type StateRow struct {
	Key   string
	Class reconcile.Class
	Final bool // later runs read it again only if new evidence names it
}

// Decide turns the findings into the rows a driver writes.
func Decide(p *ledgerdb.FindingsParams) *Decided {
	out := &Decided{}
	for i := range p.Discrepancies {
		d := &p.Discrepancies[i]
		if d.Class != reconcile.ClassConfirmed {
			out.Findings = append(out.Findings, d)
		}
		if d.EffectKey == "" {
			continue
		}
		out.States = append(out.States, StateRow{Key: d.EffectKey, Class: d.Class, Final: matcher.IsFinal(d)})
		if d.Class == reconcile.ClassConfirmed && len(d.Transactions) == 1 {
			out.Confirm = append(out.Confirm, ledgerdb.Confirmation{Key: d.EffectKey, ExternalID: matcher.ConfirmingID(&d.Transactions[0])})
		}
	}
	slices.SortStableFunc(out.States, func(a, b StateRow) int { return cmp.Compare(a.Key, b.Key) })
	SortByKey(out.Confirm)
	return out
}

// SortByKey puts confirmations in the order of their keys (stably), so
// that the writes that follow walk the ledger's key indexes in order, not
// at random: on a 1M-effect ledger, 200k keys looked up in key order took
// 0.43-0.56 s, in random order 1.27-1.48 s.
func SortByKey(c []ledgerdb.Confirmation) {
	slices.SortStableFunc(c, func(a, b ledgerdb.Confirmation) int { return cmp.Compare(a.Key, b.Key) })
}
