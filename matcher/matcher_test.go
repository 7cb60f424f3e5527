package matcher

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
)

var (
	t0     = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cutoff = t0.Add(24 * time.Hour)
)

func charge(key string, amount int64) Effect {
	return Effect{Key: key, Provider: "stripe", Step: "charge", Status: reconcile.StatusAttempted, CreatedAt: t0,
		Amount: amount, HasAmount: true, Currency: "EUR"}
}

func ev(id string, kind reconcile.Kind, amount int64, key string) reconcile.Evidence {
	return reconcile.Evidence{Provider: "stripe", TxID: id, Kind: kind, Amount: reconcile.Money{Minor: amount, Currency: "EUR"},
		Time: t0.Add(time.Hour), EffectKey: key, URI: "s.csv", Line: 2, Raw: id}
}

func match(effects []Effect, evidence []reconcile.Evidence) *Result {
	scope, cut := Window(Ends(evidence), cutoff, 0)
	if len(evidence) == 0 {
		scope = map[Coverage]bool{{"stripe", reconcile.KindCharge}: true, {"stripe", reconcile.KindRefund}: true}
		cut = map[string]time.Time{"stripe": cutoff}
	}
	scope[Coverage{"stripe", reconcile.KindCharge}] = true
	scope[Coverage{"stripe", reconcile.KindRefund}] = true
	return Match(&Input{Effects: effects, Evidence: evidence, Cutoff: cut, Scope: scope,
		EscalateUnexpected: map[string]int64{"EUR": 100000}})
}

// summary is a discrepancy in one line, for table tests.
func summary(d reconcile.Discrepancy) string {
	var acts []string
	for _, a := range d.Actions {
		acts = append(acts, string(a.Kind)+" "+a.Key)
	}
	var txs []string
	for _, t := range d.Transactions {
		txs = append(txs, t.ID)
	}
	return fmt.Sprintf("%s %s [%s] exp %d obs %d {%s}", d.Class, d.EffectKey, strings.Join(txs, " "), d.ExpectedMinor, d.ObservedMinor, strings.Join(acts, "; "))
}

func TestClassification(t *testing.T) {
	late := charge("r:charge:9", 1000)
	late.CreatedAt = cutoff.Add(time.Hour)
	comp := Effect{Key: "r:charge:1:compensate:ch_b", Provider: "stripe", Step: "compensate", CreatedAt: t0, Amount: 500, HasAmount: true, Currency: "EUR"}
	email := Effect{Key: "r:notify_buyer:0", Provider: "ses", Step: "notify_buyer", CreatedAt: t0}
	abandoned := charge("r:charge:0", 1000)
	abandoned.Status = reconcile.StatusAbandoned
	confirmedWithID := charge("r:charge:3", 700)
	confirmedWithID.ExternalID = "pi_3"
	confirmedWithID.Status = reconcile.StatusConfirmed
	tests := []struct {
		name     string
		effects  []Effect
		evidence []reconcile.Evidence
		want     []string
		out      int
	}{
		{"an abandoned effect whose charge was made after all goes to a person", []Effect{abandoned},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0")},
			[]string{"mismatched r:charge:0 [ch_a] exp 0 obs 1000 {escalate r:charge:0:escalate:mismatched}"}, 0},
		{"an abandoned effect charged twice goes to a person, nothing refunded", []Effect{abandoned},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), ev("ch_b", reconcile.KindCharge, 1000, "r:charge:0")},
			[]string{"mismatched r:charge:0 [ch_a ch_b] exp 0 obs 2000 {escalate r:charge:0:escalate:mismatched}"}, 0},
		{"an abandoned effect whose charge a person refunded in full is left alone", []Effect{abandoned},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), func() reconcile.Evidence {
				e := ev("re_a", reconcile.KindRefund, -1000, "")
				e.ParentTxID, e.ParentEffectKey = "ch_a", "r:charge:0"
				return e
			}()},
			nil, 1},
		{"an abandoned effect whose charge failed is left alone, never redelivered", []Effect{abandoned},
			[]reconcile.Evidence{func() reconcile.Evidence {
				e := ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0")
				e.Failed = true
				return e
			}()},
			nil, 1},
		{"seen once is confirmed", []Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0")},
			[]string{"confirmed r:charge:0 [ch_a] exp 1000 obs 1000 {}"}, 0},
		{"the same transaction in a webhook and a settlement line counts once", []Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), ev("ch_a", reconcile.KindCharge, 1000, ""),
				ev("ch_a", reconcile.KindCharge, 1000, "stripe-node-retry-1f3c")},
			[]string{"confirmed r:charge:0 [ch_a] exp 1000 obs 1000 {}"}, 0},
		{"a fee under the charge's id is a transaction of its own, not a second amount of the charge", []Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), ev("ch_a", reconcile.KindFee, -30, "r:charge:0")},
			[]string{"confirmed r:charge:0 [ch_a] exp 1000 obs 1000 {}"}, 0},
		{"two transactions are a duplicate: keep the earliest, compensate the other", []Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("ch_b", reconcile.KindCharge, 1000, "r:charge:0"), func() reconcile.Evidence {
				e := ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0")
				e.Time = t0.Add(3 * time.Hour) // later, though its id sorts first
				return e
			}()},
			[]string{"duplicated r:charge:0 [ch_a ch_b] exp 1000 obs 2000 {compensate r:charge:0:compensate:ch_a}"}, 0},
		{"a charge a record says failed, beside one that stands, is asked about: the provider decides", []Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0"), func() reconcile.Evidence {
				e := ev("ch_b", reconcile.KindCharge, 1000, "r:charge:0")
				e.Time = t0.Add(-time.Hour) // the earliest, and failed: never the one kept
				e.Failed = true
				return e
			}()},
			[]string{"duplicated r:charge:0 [ch_a ch_b] exp 1000 obs 2000 {compensate r:charge:0:compensate:ch_b}"}, 0},
		{"beside a charge that moved another amount, a failed one changes nothing: mismatched", []Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 900, "r:charge:0"), func() reconcile.Evidence {
				e := ev("ch_b", reconcile.KindCharge, 1000, "r:charge:0")
				e.Failed = true
				return e
			}()},
			[]string{"mismatched r:charge:0 [ch_a] exp 1000 obs 900 {escalate r:charge:0:escalate:mismatched}"}, 0},
		{"the ledger's external id is the keeper", []Effect{confirmedWithID},
			[]reconcile.Evidence{ev("ch_x", reconcile.KindCharge, 700, "r:charge:3"), func() reconcile.Evidence {
				e := ev("ch_y", reconcile.KindCharge, 700, "")
				e.PaymentIntent, e.Time = "pi_3", t0.Add(5*time.Hour)
				return e
			}()},
			[]string{"duplicated r:charge:3 [ch_x ch_y] exp 700 obs 1400 {compensate r:charge:3:compensate:ch_x}"}, 0},
		{"nothing seen before the cutoff is missing: redeliver under the original key", []Effect{charge("r:charge:0", 1000)}, nil,
			[]string{"missing r:charge:0 [] exp 1000 obs 0 {redeliver r:charge:0}"}, 0},
		{"nothing seen after the cutoff is pending", []Effect{late}, nil,
			[]string{"pending r:charge:9 [] exp 1000 obs 0 {}"}, 0},
		{"an effect after the cutoff with evidence is classified normally", []Effect{late},
			[]reconcile.Evidence{ev("ch_l", reconcile.KindCharge, 1000, "r:charge:9")},
			[]string{"confirmed r:charge:9 [ch_l] exp 1000 obs 1000 {}"}, 0},
		{"another amount is a mismatch, escalated, never fixed", []Effect{charge("r:charge:0", 1420000)},
			[]reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1450000, "r:charge:0")},
			[]string{"mismatched r:charge:0 [ch_a] exp 1420000 obs 1450000 {escalate r:charge:0:escalate:mismatched}"}, 0},
		{"another currency is a mismatch", []Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{func() reconcile.Evidence {
				e := ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0")
				e.Amount.Currency = "USD"
				return e
			}()},
			[]string{"mismatched r:charge:0 [ch_a] exp 1000 obs 1000 {escalate r:charge:0:escalate:mismatched}"}, 0},
		{"a refund is not a charge: it shows on the charge, not as its evidence", []Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{ev("re_a", reconcile.KindRefund, -1000, "r:charge:0"), ev("ch_a", reconcile.KindCharge, 1000, "r:charge:0")},
			[]string{"confirmed r:charge:0 [ch_a] exp 1000 obs 1000 {}"}, 0},
		{"a refund confirms a compensation by magnitude", []Effect{comp},
			[]reconcile.Evidence{ev("re_c", reconcile.KindRefund, -500, "r:charge:1:compensate:ch_b")},
			[]string{"confirmed r:charge:1:compensate:ch_b [re_c] exp 500 obs 500 {}"}, 0},
		{"a duplicated compensation is escalated, never compensated", []Effect{comp},
			[]reconcile.Evidence{ev("re_c", reconcile.KindRefund, -500, "r:charge:1:compensate:ch_b"), ev("re_d", reconcile.KindRefund, -500, "r:charge:1:compensate:ch_b")},
			[]string{"escalated r:charge:1:compensate:ch_b [re_c re_d] exp 500 obs 1000 {escalate r:charge:1:compensate:ch_b:escalate:escalated}"}, 0},
		{"a missing compensation is escalated, never redelivered", []Effect{comp}, nil,
			[]string{"escalated r:charge:1:compensate:ch_b [] exp 500 obs 0 {escalate r:charge:1:compensate:ch_b:escalate:escalated}"}, 0},
		{"a mismatched compensation is escalated", []Effect{comp},
			[]reconcile.Evidence{ev("re_c", reconcile.KindRefund, -400, "r:charge:1:compensate:ch_b")},
			[]string{"escalated r:charge:1:compensate:ch_b [re_c] exp 500 obs 400 {escalate r:charge:1:compensate:ch_b:escalate:escalated}"}, 0},
		{"a failed refund moved no money", []Effect{comp},
			[]reconcile.Evidence{func() reconcile.Evidence {
				e := ev("re_c", reconcile.KindRefund, -500, "r:charge:1:compensate:ch_b")
				e.Failed = true
				return e
			}()},
			[]string{"escalated r:charge:1:compensate:ch_b [] exp 500 obs 0 {escalate r:charge:1:compensate:ch_b:escalate:escalated}"}, 0},
		{"unexpected money is counted per transaction and paged above the threshold", nil,
			[]reconcile.Evidence{ev("ch_u", reconcile.KindCharge, 150000, ""), ev("ch_u", reconcile.KindCharge, 150000, ""), ev("ch_v", reconcile.KindCharge, 99, "")},
			[]string{"unexpected  [ch_u] exp 0 obs 150000 {escalate stripe:ch_u:escalate:unexpected}", "unexpected  [ch_v] exp 0 obs 99 {}"}, 0},
		{"fees and payouts are not unexpected", nil,
			[]reconcile.Evidence{ev("", reconcile.KindFee, -50, ""), ev("po_1", reconcile.KindPayout, -9000, "")}, nil, 0},
		{"an email leaves no evidence: out of scope", []Effect{email}, nil, nil, 1},
		{"a provider the inputs do not cover is out of scope", []Effect{{Key: "r:charge:7", Provider: "adyen", Step: "charge", CreatedAt: t0, Currency: "EUR"}}, nil, nil, 1},
		{"links by external id, and by the payment intent", []Effect{confirmedWithID},
			[]reconcile.Evidence{func() reconcile.Evidence {
				e := ev("ch_z", reconcile.KindCharge, 700, "")
				e.PaymentIntent = "pi_3"
				return e
			}()},
			[]string{"confirmed r:charge:3 [ch_z] exp 700 obs 700 {}"}, 0},
		{"effects that share an external id are told apart by the kind they make", []Effect{func() Effect {
			e := charge("r:charge:5", 1000)
			e.ExternalID = "pi_5"
			return e
		}(), {Key: "r:refund:5", Provider: "stripe", Step: "refund", ExternalID: "pi_5", CreatedAt: t0, Amount: 400, HasAmount: true, Currency: "EUR"}},
			[]reconcile.Evidence{func() reconcile.Evidence {
				e := ev("ch_5", reconcile.KindCharge, 1000, "")
				e.PaymentIntent = "pi_5"
				return e
			}(), func() reconcile.Evidence {
				e := ev("re_5", reconcile.KindRefund, -400, "")
				e.PaymentIntent = "pi_5"
				return e
			}()},
			[]string{"confirmed r:charge:5 [ch_5] exp 1000 obs 1000 {}", "confirmed r:refund:5 [re_5] exp 400 obs 400 {}"}, 0},
		{"a payment intent event without its charge id is the same transaction as the charge", []Effect{charge("r:charge:0", 1000)},
			[]reconcile.Evidence{func() reconcile.Evidence {
				e := ev("", reconcile.KindCharge, 1000, "r:charge:0")
				e.PaymentIntent, e.URI = "pi_9", "events.jsonl"
				return e
			}(), func() reconcile.Evidence {
				e := ev("ch_9", reconcile.KindCharge, 1000, "")
				e.PaymentIntent = "pi_9"
				return e
			}()},
			[]string{"confirmed r:charge:0 [ch_9] exp 1000 obs 1000 {}"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := match(tc.effects, tc.evidence)
			var got []string
			for _, d := range res.Discrepancies {
				got = append(got, summary(d))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Match (-want +got):\n%s", diff)
			}
			if res.OutOfScope != tc.out {
				t.Errorf("OutOfScope = %d, want %d", res.OutOfScope, tc.out)
			}
		})
	}
}

func TestWindow(t *testing.T) {
	evidence := []reconcile.Evidence{ev("ch_a", reconcile.KindCharge, 1, ""), ev("re_a", reconcile.KindRefund, -1, "")}
	evidence[1].Time = t0.Add(48 * time.Hour)
	scope, cut := Window(Ends(evidence), time.Time{}, 24*time.Hour)
	if !scope[Coverage{"stripe", reconcile.KindCharge}] || !scope[Coverage{"stripe", reconcile.KindRefund}] || scope[Coverage{"stripe", reconcile.KindPayout}] {
		t.Errorf("scope = %v", scope)
	}
	if want := t0.Add(24 * time.Hour); !cut["stripe"].Equal(want) {
		t.Errorf("cutoff = %v, want the end of the evidence minus the lag, %v", cut["stripe"], want)
	}
	asOf := t0.Add(100 * time.Hour)
	if _, cut := Window(Ends(evidence), asOf, time.Hour); !cut["stripe"].Equal(asOf.Add(-time.Hour)) {
		t.Errorf("cutoff with --as-of = %v, want %v", cut["stripe"], asOf.Add(-time.Hour))
	}
}

func TestFromLedger(t *testing.T) {
	e, err := FromLedger(&reconcile.Effect{Key: "k", Request: []byte(`{"amount": 1420000, "currency": "eur", "metadata": {"effect_key": "k"}}`)})
	if err != nil || !e.HasAmount || e.Amount != 1420000 || e.Currency != "EUR" {
		t.Errorf("FromLedger = %+v, %v", e, err)
	}
	full, err := FromLedger(&reconcile.Effect{Key: "k", Request: []byte(`{"charge": "ch_1"}`)})
	if err != nil || full.HasAmount {
		t.Errorf("FromLedger(no amount) = %+v, %v; want no amount", full, err)
	}
	if _, err := FromLedger(&reconcile.Effect{Key: "k", Request: []byte(`{"amount": 14.20}`)}); err == nil {
		t.Errorf("a fractional amount was accepted")
	}
}
