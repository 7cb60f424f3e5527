package matcher

import (
	"math"
	"strings"
	"testing"

	"reconcile"
)

// Two positive amounts must never sum to a negative one: the sum of a
// duplicate's charges saturates, and the reason says so.
func TestSumsOfMoneyDoNotWrap(t *testing.T) {
	big := int64(math.MaxInt64/2 + 1)
	e := charge("r:charge:0", big)
	res := match([]Effect{e}, []reconcile.Evidence{ev("ch_a", reconcile.KindCharge, big, "r:charge:0"), ev("ch_b", reconcile.KindCharge, big, "r:charge:0")})
	d := res.Discrepancies[0]
	if d.Class != reconcile.ClassDuplicated || d.ObservedMinor != math.MaxInt64 || !strings.Contains(d.Reason, "beyond what reconcile can hold") {
		t.Errorf("Match = %s observed %d, want duplicated with the sum saturated at %d", d.Class, d.ObservedMinor, int64(math.MaxInt64))
	}
}
