package matcher

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile"
)

// An attempted effect the evidence confirms takes the id an application
// records for it: a charge made through a payment intent, the intent; a
// refund, the refund's own id, not the intent of the charge it returns
// (which every refund of that charge shares).
func TestAnEffectIsConfirmedWithTheIDOfWhatItMade(t *testing.T) {
	for _, c := range []struct {
		tx   reconcile.Transaction
		want string
	}{
		{reconcile.Transaction{ID: "ch_a", Kind: reconcile.KindCharge, PaymentIntent: "pi_a"}, "pi_a"},
		{reconcile.Transaction{ID: "ch_a", Kind: reconcile.KindCharge}, "ch_a"},
		{reconcile.Transaction{ID: "re_a", Kind: reconcile.KindRefund, PaymentIntent: "pi_a", ParentTxID: "ch_a"}, "re_a"},
		{reconcile.Transaction{ID: "po_a", Kind: reconcile.KindPayout}, "po_a"},
	} {
		if got := ConfirmingID(&c.tx); got != c.want {
			t.Errorf("ConfirmingID(%s %s, intent %q) = %s, want %s", c.tx.Kind, c.tx.ID, c.tx.PaymentIntent, got, c.want)
		}
	}
}

// Two refund effects of one charge: a refund that names the other one by
// key (closed, so not in this run's scope) does not link to this one by the
// payment intent both refunds carry, even where an earlier night confirmed
// this one with that intent; else one refund looks made twice.
func TestARefundNamingAnotherEffectDoesNotLinkByTheChargesIntent(t *testing.T) {
	refund := func(id, key string) reconcile.Evidence {
		e := ev(id, reconcile.KindRefund, -1000, key)
		e.ParentTxID, e.PaymentIntent, e.ParentEffectKey = "ch_a", "pi_a", "r:charge:0"
		return e
	}
	for _, external := range []string{"re_13", "pi_a"} {
		mine := Effect{Key: "r:refund:13", Provider: "stripe", Step: "refund", Status: reconcile.StatusConfirmed, ExternalID: external,
			CreatedAt: t0, Amount: 1000, HasAmount: true, Currency: "EUR"}
		got := match([]Effect{mine}, []reconcile.Evidence{refund("re_13", "r:refund:13"), refund("re_14", "r:refund:14")})
		var lines []string
		for _, d := range got.Discrepancies {
			if d.EffectKey == mine.Key {
				lines = append(lines, summary(d))
			}
		}
		if diff := cmp.Diff([]string{"confirmed r:refund:13 [re_13] exp 1000 obs 1000 {}"}, lines); diff != "" {
			t.Errorf("external id %s (-want +got):\n%s", external, diff)
		}
	}
}
