package matcher

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile"
)

// Refunds and disputes of our charges that no effect of ours made (a refund
// a person made in the dashboard, an Adyen chargeback) are neither
// unexpected nor charge evidence: they show on the charge's finding.
func TestRefundsOfOurChargesThatNoEffectMadeShowOnTheCharge(t *testing.T) {
	refundOf := func(id string, amount int64, parentKey, parentTx, intent string) reconcile.Evidence {
		e := ev(id, reconcile.KindRefund, amount, "")
		e.ParentEffectKey, e.ParentTxID, e.PaymentIntent = parentKey, parentTx, intent
		return e
	}
	withID := func(e Effect, id string) Effect {
		e.ExternalID, e.Status = id, reconcile.StatusConfirmed
		return e
	}
	withIntent := func(e reconcile.Evidence, intent string) reconcile.Evidence {
		e.PaymentIntent = intent
		return e
	}
	dispute := ev("du_1", reconcile.KindDispute, -1000, "")
	dispute.ParentTxID = "ch_a"
	won := dispute
	won.Amount.Minor, won.Line = 1000, 3
	adyenCB := reconcile.Evidence{Provider: "adyen", TxID: "PSP1/CB1", Kind: reconcile.KindDispute, Amount: reconcile.Money{Minor: -1000, Currency: "EUR"},
		Time: t0, ParentEffectKey: "r:charge:ad", ParentTxID: "PSP1", URI: "adyen.csv", Line: 4}
	adyenRefund := adyenCB
	adyenRefund.TxID, adyenRefund.Kind, adyenRefund.Line = "PSP1/RF1", reconcile.KindRefund, 5
	adyenCharge := Effect{Key: "r:charge:ad", Provider: "adyen", Step: "charge", Status: reconcile.StatusAttempted, CreatedAt: t0, Amount: 1000, HasAmount: true, Currency: "EUR"}
	adyenSale := reconcile.Evidence{Provider: "adyen", TxID: "PSP1/PSP1", Kind: reconcile.KindCharge, Amount: reconcile.Money{Minor: 1000, Currency: "EUR"},
		Time: t0, EffectKey: "r:charge:ad", ParentTxID: "PSP1", URI: "adyen.csv", Line: 2}

	tests := []struct {
		name     string
		effects  []Effect
		evidence []reconcile.Evidence
		want     []string
	}{
		{"a dashboard refund naming the charge's effect key",
			[]Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), refundOf("re_d", -1000, "r:charge:0", "ch_a", "")},
			[]string{"confirmed r:charge:0 [ch_a] exp 1000 obs 1000 {} related [re_d]"}},
		{"a refund naming only the charge's id, when the charge linked by key",
			[]Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), refundOf("re_d", -400, "", "ch_a", "")},
			[]string{"confirmed r:charge:0 [ch_a] exp 1000 obs 1000 {} related [re_d]"}},
		{"a refund naming a payment intent two of our charges share shows on the first effect in key order",
			[]Effect{charge("r:charge:0", 1000), charge("r:charge:1", 1000)},
			[]reconcile.Evidence{withIntent(ev("ch_z", reconcile.KindCharge, 1000, "r:charge:0"), "pi_s"),
				withIntent(ev("ch_a", reconcile.KindCharge, 1000, "r:charge:1"), "pi_s"), refundOf("re_d", -1000, "", "", "pi_s")},
			[]string{"confirmed r:charge:0 [ch_z] exp 1000 obs 1000 {} related [re_d]", "confirmed r:charge:1 [ch_a] exp 1000 obs 1000 {}"}},
		{"a refund of a charge not seen: a person decides, the charge is not made again",
			[]Effect{withID(charge("r:charge:0", 1000), "pi_0")},
			[]reconcile.Evidence{refundOf("re_d", -1000, "", "", "pi_0")},
			[]string{"missing r:charge:0 [] exp 1000 obs 0 {escalate r:charge:0:escalate:missing} related [re_d]"}},
		{"a dispute and its reversal are two movements of the charge",
			[]Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), dispute, won},
			[]string{"confirmed r:charge:0 [ch_a] exp 1000 obs 1000 {} related [du_1 du_1]"}},
		{"an Adyen chargeback and refund naming our merchant reference",
			[]Effect{adyenCharge},
			[]reconcile.Evidence{adyenSale, adyenCB, adyenRefund},
			[]string{"confirmed r:charge:ad [PSP1/PSP1] exp 1000 obs 1000 {} related [PSP1/CB1 PSP1/RF1]"}},
		{"a refund of nothing of ours stays unexpected",
			[]Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), refundOf("re_x", -1000, "r:charge:other", "ch_other", "")},
			[]string{"confirmed r:charge:0 [ch_a] exp 1000 obs 1000 {}", "unexpected  [re_x] exp 0 obs 1000 {}"}},
		{"a refund our refund effect made links to that effect, not to the charge",
			[]Effect{charge("r:charge:0", 1000), {Key: "r:refund:0", Provider: "stripe", Step: "refund", CreatedAt: t0, Amount: 1000, HasAmount: true, Currency: "EUR"}},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"),
				func() reconcile.Evidence {
					e := refundOf("re_1", -1000, "r:charge:0", "ch_a", "")
					e.EffectKey = "r:refund:0"
					return e
				}()},
			[]string{"confirmed r:charge:0 [ch_a] exp 1000 obs 1000 {}", "confirmed r:refund:0 [re_1] exp 1000 obs 1000 {}"}},
		{"an extra charge a report shows refunded in full is compensated on the provider's word, not the report's",
			[]Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), ev("ch_b", reconcile.KindCharge, 1000, "r:charge:0"),
				refundOf("re_d", -1000, "r:charge:0", "ch_b", "")},
			[]string{"duplicated r:charge:0 [ch_a ch_b] exp 1000 obs 2000 {compensate r:charge:0:compensate:ch_b} related [re_d]"}},
		{"the charge the ledger names, refunded in full, is not the one kept: the other one is",
			[]Effect{withID(charge("r:charge:0", 1000), "ch_b")},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), ev("ch_b", reconcile.KindCharge, 1000, "r:charge:0"),
				refundOf("re_d", -1000, "r:charge:0", "ch_b", "")},
			[]string{"duplicated r:charge:0 [ch_a ch_b] exp 1000 obs 2000 {compensate r:charge:0:compensate:ch_b} related [re_d]"}},
		{"a refund the application's own refund effect made does not stand for a compensation",
			[]Effect{withID(charge("r:charge:0", 1000), "ch_a"), {Key: "r:refund:0", Provider: "stripe", Step: "refund", CreatedAt: t0, Amount: 1000, HasAmount: true, Currency: "EUR"}},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), ev("ch_b", reconcile.KindCharge, 1000, "r:charge:0"),
				func() reconcile.Evidence {
					e := refundOf("re_1", -1000, "r:charge:0", "ch_a", "")
					e.EffectKey = "r:refund:0"
					return e
				}()},
			[]string{"duplicated r:charge:0 [ch_a ch_b] exp 1000 obs 2000 {compensate r:charge:0:compensate:ch_b}", "confirmed r:refund:0 [re_1] exp 1000 obs 1000 {}"}},
		{"an extra charge refunded in part is compensated for the rest by a person",
			[]Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), ev("ch_b", reconcile.KindCharge, 1000, "r:charge:0"),
				refundOf("re_d", -400, "r:charge:0", "ch_b", "")},
			[]string{"duplicated r:charge:0 [ch_a ch_b] exp 1000 obs 2000 {escalate r:charge:0:escalate:duplicated} related [re_d]"}},
		{"a refund seen only in a webhook does not stand for the compensation",
			[]Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), ev("ch_b", reconcile.KindCharge, 1000, "r:charge:0"),
				func() reconcile.Evidence {
					e := refundOf("re_d", -1000, "r:charge:0", "ch_b", "")
					e.Webhook = true
					return e
				}()},
			[]string{"duplicated r:charge:0 [ch_a ch_b] exp 1000 obs 2000 {compensate r:charge:0:compensate:ch_b} related [re_d]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, d := range match(tt.effects, tt.evidence).Discrepancies {
				s := summary(d)
				if len(d.Related) > 0 {
					var ids []string
					for _, tx := range d.Related {
						ids = append(ids, tx.ID)
					}
					s += " related [" + strings.Join(ids, " ") + "]"
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Match (-want +got):\n%s", diff)
			}
		})
	}
}
