package matcher

import (
	"testing"

	"reconcile"
)

// A finding closes its effect only when nothing is left for anyone to do:
// a duplicate handed to a person stays open until the person resolves it,
// else the next nights would never read it again (out of scope, and in no
// result).
func TestOnlyAMadeCompensationClosesADuplicate(t *testing.T) {
	compensate := func(o reconcile.Outcome) reconcile.Action {
		return reconcile.Action{Kind: reconcile.ActionCompensate, Outcome: o}
	}
	escalate := reconcile.Action{Kind: reconcile.ActionEscalate, Outcome: reconcile.OutcomePlanned}
	for _, c := range []struct {
		name    string
		class   reconcile.Class
		actions []reconcile.Action
		final   bool
	}{
		{"confirmed", reconcile.ClassConfirmed, nil, true},
		{"compensation made", reconcile.ClassDuplicated, []reconcile.Action{compensate(reconcile.OutcomeApplied)}, true},
		{"compensation made before", reconcile.ClassDuplicated, []reconcile.Action{compensate(reconcile.OutcomeSkipped), compensate(reconcile.OutcomeApplied)}, true},
		{"compensation planned", reconcile.ClassDuplicated, []reconcile.Action{compensate(reconcile.OutcomePlanned)}, false},
		{"compensation deferred", reconcile.ClassDuplicated, []reconcile.Action{compensate(reconcile.OutcomeApplied), compensate(reconcile.OutcomeDeferred)}, false},
		{"a refund made twice, for a person", reconcile.ClassDuplicated, []reconcile.Action{escalate}, false},
		{"compensation made and a person asked", reconcile.ClassDuplicated, []reconcile.Action{compensate(reconcile.OutcomeApplied), escalate}, false},
		{"no action", reconcile.ClassDuplicated, nil, false},
		{"mismatched", reconcile.ClassMismatched, []reconcile.Action{escalate}, false},
		{"missing", reconcile.ClassMissing, []reconcile.Action{{Kind: reconcile.ActionRedeliver, Outcome: reconcile.OutcomeApplied}}, false},
	} {
		d := reconcile.Discrepancy{Class: c.class, Actions: c.actions}
		if got := IsFinal(&d); got != c.final {
			t.Errorf("%s: IsFinal = %v, want %v", c.name, got, c.final)
		}
	}
}
