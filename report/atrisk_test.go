package report

import (
	"testing"

	"reconcile"
)

// Money at risk is the open exposure (docs/CLASSIFICATION.md): extra
// charges not yet refunded, missing effects not yet redelivered, the
// difference of a mismatch, unexpected money. What this run repaired is
// counted apart, until the provider's report confirms it.
func TestMoneyAtRiskIsTheOpenExposure(t *testing.T) {
	act := func(kind reconcile.ActionKind, o reconcile.Outcome, minor int64) Action {
		return Action{Kind: kind, Outcome: o, AmountMinor: minor, Currency: "EUR"}
	}
	comp, redo, page := reconcile.ActionCompensate, reconcile.ActionRedeliver, reconcile.ActionEscalate
	for _, tc := range []struct {
		name           string
		d              Discrepancy
		open, repaired int64
	}{
		{"an extra charge refunded tonight awaits the provider's report", Discrepancy{Class: reconcile.ClassDuplicated, ExpectedMinor: 1000, ObservedMinor: 2000,
			Actions: []Action{act(comp, reconcile.OutcomeApplied, 1000)}}, 0, 1000},
		{"extra charges not refunded yet are open", Discrepancy{Class: reconcile.ClassDuplicated, ExpectedMinor: 1000, ObservedMinor: 3000,
			Actions: []Action{act(comp, reconcile.OutcomePlanned, 1000), act(comp, reconcile.OutcomeDeferred, 1000)}}, 2000, 0},
		{"an extra charge the report shows refunded is at risk no more", Discrepancy{Class: reconcile.ClassDuplicated, ExpectedMinor: 1000, ObservedMinor: 2000}, 0, 0},
		{"an extra charge refunded in part goes to a person: open", Discrepancy{Class: reconcile.ClassDuplicated, ExpectedMinor: 1000, ObservedMinor: 2000,
			Actions: []Action{act(page, reconcile.OutcomeApplied, 0)}}, 1000, 0},
		{"a refund made twice is open", Discrepancy{Class: reconcile.ClassDuplicated, ExpectedMinor: 300, ObservedMinor: 600,
			Actions: []Action{act(page, reconcile.OutcomePlanned, 0)}}, 300, 0},
		{"a missing charge made tonight awaits the report", Discrepancy{Class: reconcile.ClassMissing, ExpectedMinor: 500,
			Actions: []Action{act(redo, reconcile.OutcomeApplied, 500)}}, 0, 500},
		{"a missing charge the lookup found is not at risk", Discrepancy{Class: reconcile.ClassMissing, ExpectedMinor: 500,
			Actions: []Action{act(redo, reconcile.OutcomeSkipped, 500)}}, 0, 0},
		{"a missing charge not redelivered is open", Discrepancy{Class: reconcile.ClassMissing, ExpectedMinor: 500,
			Actions: []Action{act(redo, reconcile.OutcomeDeferred, 500)}}, 500, 0},
		{"a mismatch is its difference", Discrepancy{Class: reconcile.ClassMismatched, ExpectedMinor: 1000, ObservedMinor: 1001}, 1, 0},
		{"a mismatch in another currency is the whole request", Discrepancy{Class: reconcile.ClassMismatched, ExpectedMinor: 1000, ObservedMinor: 900,
			ObservedCurrency: "USD", Currency: "EUR"}, 1000, 0},
		{"unexpected money is open", Discrepancy{Class: reconcile.ClassUnexpected, ObservedMinor: 700}, 700, 0},
		{"a compensation in doubt is open", Discrepancy{Class: reconcile.ClassEscalated, ExpectedMinor: 500}, 500, 0},
		{"deferred is open", Discrepancy{Class: reconcile.ClassDeferred, ExpectedMinor: 800}, 800, 0},
		{"pending is not at risk yet", Discrepancy{Class: reconcile.ClassPending, ExpectedMinor: 800}, 0, 0},
	} {
		if open, repaired := tc.d.AtRisk(), tc.d.Repaired(); open != tc.open || repaired != tc.repaired {
			t.Errorf("%s: at risk %d, repaired %d; want %d and %d", tc.name, open, repaired, tc.open, tc.repaired)
		}
	}
}
