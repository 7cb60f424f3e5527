package report

import (
	"math"
	"testing"

	"reconcile"
)

// Money at risk is a sum of money: it saturates instead of wrapping to a
// negative total, and says so.
func TestMoneyAtRiskDoesNotWrap(t *testing.T) {
	big := int64(math.MaxInt64/2 + 1)
	r := &Result{Discrepancies: []Discrepancy{
		{Class: reconcile.ClassMissing, Currency: "EUR", ExpectedMinor: big},
		{Class: reconcile.ClassMissing, Currency: "EUR", ExpectedMinor: big},
	}}
	risk, over := r.MoneyAtRisk(), r.Overflowed()
	if risk["EUR"] != math.MaxInt64 || !over["EUR"] {
		t.Errorf("MoneyAtRisk = %d (overflowed %v), want %d, overflowed", risk["EUR"], over, int64(math.MaxInt64))
	}
}
