package driver

import (
	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/matcher"
)

// Decided is what a run's findings write, decided by the matcher's rules
// (matcher.IsFinal, matcher.ConfirmingID) once for both drivers, which
// store it as it is.
type Decided struct {
	Findings []*reconcile.Discrepancy // a finding row each: those not confirmed, in order
	States   []StateRow               // the state of each classified effect
	Confirm  []ledgerdb.Confirmation  // the attempted effects evidence confirmed, if still attempted
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
	return out
}
