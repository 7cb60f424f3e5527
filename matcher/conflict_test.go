package matcher

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile"
)

// The records of one transaction that disagree must not move money: a line
// added to a webhook dump, or a report reissued with other values, would
// otherwise let one record refund another customer.
func TestConflictingRecordsLinkToNoEffect(t *testing.T) {
	webhook := func(e reconcile.Evidence) reconcile.Evidence {
		e.URI, e.Line, e.Webhook = "events.jsonl", 7, true
		return e
	}
	refund := Effect{Key: "r:refund:0", Provider: "stripe", Step: "refund", CreatedAt: t0, Amount: 300, HasAmount: true, Currency: "EUR"}
	payout := Effect{Key: "r:payout:0", Provider: "stripe", Step: "payout", CreatedAt: t0, Amount: 9000, HasAmount: true, Currency: "EUR"}
	tests := []struct {
		name     string
		effects  []Effect
		evidence []reconcile.Evidence
		want     []string
	}{
		{"a webhook line naming another effect's key defers both effects and refunds nothing",
			[]Effect{charge("r:charge:a", 50000), charge("r:charge:b", 50000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 50000, "r:charge:a"), ev("ch_b", reconcile.KindCharge, 50000, "r:charge:b"),
				webhook(ev("ch_b", reconcile.KindCharge, 1, "r:charge:a"))},
			[]string{
				"deferred r:charge:a [ch_a] exp 50000 obs 0 {}",
				"deferred r:charge:b [] exp 50000 obs 0 {}",
				"unexpected  [ch_b] exp 0 obs 50000 {escalate stripe:ch_b:escalate:unexpected}",
			}},
		{"a charge and its failure (a returned debit) are one transaction that failed, not a conflict",
			[]Effect{charge("r:charge:a", 2500), charge("r:charge:b", 2500)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 2500, "r:charge:a"), func() reconcile.Evidence {
				e := ev("ch_a", reconcile.KindCharge, -2500, "r:charge:a")
				e.Failed, e.Line = true, 3
				return e
			}(), ev("ch_b", reconcile.KindCharge, 2500, "r:charge:b")},
			[]string{
				"missing r:charge:a [] exp 2500 obs 0 {redeliver r:charge:a}",
				"confirmed r:charge:b [ch_b] exp 2500 obs 2500 {}",
			}},
		{"records naming two effects with the same amount are a conflict too",
			[]Effect{charge("r:charge:a", 50000), charge("r:charge:b", 50000)},
			[]reconcile.Evidence{ev("ch_b", reconcile.KindCharge, 50000, "r:charge:b"), webhook(ev("ch_b", reconcile.KindCharge, 50000, "r:charge:a"))},
			[]string{
				"deferred r:charge:a [] exp 50000 obs 0 {}",
				"deferred r:charge:b [] exp 50000 obs 0 {}",
				"unexpected  [ch_b] exp 0 obs 50000 {escalate stripe:ch_b:escalate:unexpected}",
			}},
		{"records of another amount for the same effect are a conflict: no confirmation, no mismatch",
			[]Effect{charge("r:charge:a", 50000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 50000, "r:charge:a"), webhook(ev("ch_a", reconcile.KindCharge, 1, "r:charge:a"))},
			[]string{
				"deferred r:charge:a [] exp 50000 obs 0 {}",
				"unexpected  [ch_a] exp 0 obs 50000 {escalate stripe:ch_a:escalate:unexpected}",
			}},
		{"a refund made twice goes to a person, never to more refunds",
			[]Effect{refund},
			[]reconcile.Evidence{ev("re_1", reconcile.KindRefund, -300, "r:refund:0"), ev("re_2", reconcile.KindRefund, -300, "r:refund:0")},
			[]string{"duplicated r:refund:0 [re_1 re_2] exp 300 obs 600 {escalate r:refund:0:escalate:duplicated}"}},
		{"a payout made twice goes to a person",
			[]Effect{payout},
			[]reconcile.Evidence{ev("po_1", reconcile.KindPayout, -9000, "r:payout:0"), ev("po_2", reconcile.KindPayout, -9000, "r:payout:0")},
			[]string{"duplicated r:payout:0 [po_1 po_2] exp 9000 obs 18000 {escalate r:payout:0:escalate:duplicated}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := match(tt.effects, tt.evidence)
			var got []string
			for _, d := range res.Discrepancies {
				got = append(got, summary(d))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Match (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAWebhookAloneDoesNotConfirmAnAttemptedRow(t *testing.T) {
	hook := ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0")
	hook.Webhook = true
	attempted, confirmed := charge("r:charge:0", 1000), charge("r:charge:0", 1000)
	confirmed.Status = reconcile.StatusConfirmed
	for _, c := range []struct {
		effect Effect
		want   string
	}{{attempted, "pending r:charge:0 [ch_a] exp 1000 obs 1000 {}"}, {confirmed, "confirmed r:charge:0 [ch_a] exp 1000 obs 1000 {}"}} {
		res := match([]Effect{c.effect}, []reconcile.Evidence{hook})
		if len(res.Discrepancies) != 1 || summary(res.Discrepancies[0]) != c.want {
			t.Errorf("Match(%s effect, webhook only) = %v, want %s", c.effect.Status, res.Discrepancies, c.want)
		}
	}
}

func TestOnlyWebhookRecordsDoNotCorroborate(t *testing.T) {
	hook := ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0")
	hook.Webhook = true
	report := ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0")
	report.Line = 9
	for _, c := range []struct {
		name string
		recs []reconcile.Evidence
		want bool
	}{{"webhook only", []reconcile.Evidence{hook}, false}, {"webhook and report", []reconcile.Evidence{hook, report}, true}, {"report only", []reconcile.Evidence{report}, true}} {
		txs := Transactions(c.recs)
		if len(txs) != 1 || txs[0].Corroborated != c.want {
			t.Errorf("%s: Transactions(...) = %+v, want one transaction with Corroborated %v", c.name, txs, c.want)
		}
	}
}
