package report

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"reconcile"
)

// trickyTexts are input texts a spreadsheet likes to turn into something
// else: formulas, numbers, dates, booleans.
var trickyTexts = []string{
	`=HYPERLINK("http://x","y")`,
	`+1+2`,
	`-3`,
	`@SUM(A1)`,
	`=1+1`,
	`0012`,
	`1E5`,
	`1.8137E+15`,
	`TRUE`,
	`2026-01-02`,
	` leading and trailing spaces `,
	"Zahlung für Müller — 東京 🚀",
	`_x0041_ stays`,
	"tab\there, line\nbreak",
}

var t0 = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

// sampleResult is a run with a finding of every class but confirmed, in
// three currencies of different decimals, negative amounts, actions of
// every kind, tricky text everywhere text goes, and a 40,000 character
// rejected row.
func sampleResult() *Result {
	r := &Result{
		RunID: "run-0012", AsOf: "2026-11-28T00:00:00Z", Applied: true,
		Counts: map[string]int{"confirmed": 120, "duplicated": 2, "missing": 2, "pending": 1, "mismatched": 2,
			"unexpected": 2, "deferred": 1, "escalated": 1},
		OutOfScope: 3,
		Inputs: []Input{
			{URI: "s3://settlements/2026-11-28/stripe_itemized.csv", Format: "stripe-itemized", Rows: 140, Evidence: 131, Rejected: 3, Ignored: 6},
			{URI: "=cmd|' /C calc'!A0.csv", Format: "adyen-settlement", Rows: 10, Evidence: 10, AlreadyIngested: true},
		},
		StartedAt: t0, FinishedAt: t0.Add(83*time.Second + 250*time.Millisecond),
	}
	add := func(d Discrepancy) { r.Discrepancies = append(r.Discrepancies, d) }
	add(Discrepancy{Class: reconcile.ClassDuplicated, EffectKey: "order-1001:charge", Provider: "stripe", Currency: "EUR",
		ExpectedMinor: 1999, ObservedMinor: 3998, Transactions: []string{"ch_1A", "ch_1B"}, Time: t0.Add(-26 * time.Hour),
		Reason: "two charges for one request",
		Actions: []Action{{Kind: reconcile.ActionCompensate, Key: "order-1001:charge:compensate:ch_1B", Target: "ch_1B",
			Outcome: reconcile.OutcomeApplied, AmountMinor: 1999, Currency: "EUR", Made: "re_9Z", Note: "refunded"}}})
	add(Discrepancy{Class: reconcile.ClassDuplicated, EffectKey: "order-1002:charge", Provider: "stripe", Currency: "JPY",
		ExpectedMinor: 5000, ObservedMinor: 15000, Transactions: []string{"ch_2A", "ch_2B", "ch_2C"}, Time: t0.Add(-30 * time.Hour),
		Reason: "three charges for one request",
		Actions: []Action{
			{Kind: reconcile.ActionCompensate, Key: "order-1002:charge:compensate:ch_2B", Target: "ch_2B", Outcome: reconcile.OutcomeApplied, AmountMinor: 5000, Currency: "JPY", Made: "re_2B"},
			{Kind: reconcile.ActionCompensate, Key: "order-1002:charge:compensate:ch_2C", Target: "ch_2C", Outcome: reconcile.OutcomeRefused, AmountMinor: 5000, Currency: "JPY",
				Note: "the provider refused:\nkey reused with other parameters"},
		}})
	add(Discrepancy{Class: reconcile.ClassMissing, EffectKey: "0012", Provider: "stripe", Currency: "KWD",
		ExpectedMinor: 12345, Time: t0.Add(-50 * time.Hour), Reason: trickyTexts[0],
		Actions: []Action{{Kind: reconcile.ActionRedeliver, Key: "0012", Target: "0012", Outcome: reconcile.OutcomeApplied, AmountMinor: 12345, Currency: "KWD", Made: "pi_3C"}}})
	add(Discrepancy{Class: reconcile.ClassMissing, EffectKey: "1E5", Provider: "stripe", Currency: "EUR",
		ExpectedMinor: -1420, Time: t0.Add(-49 * time.Hour), Reason: "a refund of 14.20 EUR nobody saw",
		Actions: []Action{{Kind: reconcile.ActionRedeliver, Key: "1E5", Target: "1E5", Outcome: reconcile.OutcomePlanned, AmountMinor: -1420, Currency: "EUR"}}})
	add(Discrepancy{Class: reconcile.ClassPending, EffectKey: "order-1003:charge", Provider: "stripe", Currency: "EUR",
		ExpectedMinor: 2500, Time: t0.Add(-time.Hour), Reason: "too recent to be settled"})
	add(Discrepancy{Class: reconcile.ClassMismatched, EffectKey: "@SUM(A1)", Provider: "stripe", Currency: "EUR",
		ExpectedMinor: 123456789012345, ObservedMinor: 123456789012346, Transactions: []string{"+1+2"}, Time: t0.Add(-40 * time.Hour),
		Reason:  "Zahlung für Müller — 東京 🚀: the price moved",
		Actions: []Action{{Kind: reconcile.ActionEscalate, Key: "@SUM(A1):escalate", Target: "@SUM(A1)", Outcome: reconcile.OutcomeEscalated, Note: "-3"}}})
	add(Discrepancy{Class: reconcile.ClassMismatched, EffectKey: "order-1004:charge", Provider: "stripe", Currency: "KWD",
		ExpectedMinor: 1000, ObservedMinor: 999, Transactions: []string{"ch_4A"}, Time: t0.Add(-41 * time.Hour), Reason: "1 fils short"})
	add(Discrepancy{Class: reconcile.ClassUnexpected, Provider: "stripe", Currency: "JPY", ObservedMinor: 777,
		Transactions: []string{"ch_5A"}, Time: t0.Add(-45 * time.Hour), Reason: "=1+1"})
	add(Discrepancy{Class: reconcile.ClassUnexpected, Provider: "bank", Currency: "EUR", ObservedMinor: -5,
		Transactions: []string{"TRUE"}, Time: t0.Add(-44 * time.Hour), Reason: "a debit of 0.05 EUR nobody asked for"})
	add(Discrepancy{Class: reconcile.ClassDeferred, EffectKey: "order-1005:charge", Provider: "stripe", Currency: "EUR",
		ExpectedMinor: 1, Time: t0.Add(-60 * time.Hour), Reason: "the lookup was down",
		Actions: []Action{{Kind: reconcile.ActionRedeliver, Key: "order-1005:charge", Target: "order-1005:charge", Outcome: reconcile.OutcomeDeferred, AmountMinor: 1, Currency: "EUR"}}})
	add(Discrepancy{Class: reconcile.ClassEscalated, EffectKey: "order-1006:charge:compensate:ch_6B", Provider: "stripe", Currency: "EUR",
		ExpectedMinor: 4200, Time: t0.Add(-70 * time.Hour), Reason: "the compensation cannot be confirmed",
		Actions: []Action{{Kind: reconcile.ActionEscalate, Key: "order-1006:charge:compensate:ch_6B:escalate", Outcome: reconcile.OutcomeEscalated}}})
	r.Rejected = []Rejected{
		{URI: "s3://settlements/2026-11-28/stripe_itemized.csv", Line: 17, Reason: "amount \"12,5\" is not a number", Raw: "ch_x,12,5,eur"},
		{URI: "s3://settlements/2026-11-28/stripe_itemized.csv", Line: 18, Reason: "@SUM(A1)", Raw: `=HYPERLINK("http://x","y"),+1+2,-3`},
		{URI: "s3://settlements/2026-11-28/stripe_itemized.csv", Line: 19, Reason: "the row is too long", Raw: longRaw()},
	}
	r.Orphans = []Orphan{{Key: "order-1007:charge", StaleOwner: "worker-a", StaleFence: 4, StaleResult: "pi_7A",
		CurrentOwner: "worker-b", CurrentFence: 5, CurrentState: "confirmed"}}
	return r
}

// longRaw is a 40,000 character row, with a character outside the Basic
// Multilingual Plane (two UTF-16 units) straddling the cut.
func longRaw() string {
	return strings.Repeat("a", maxCellText-80) + strings.Repeat("🚀", 20) + strings.Repeat("b", 40000-(maxCellText-80)-20)
}

// ptr is a pointer to t, as an escalation holds its times.
func ptr(t time.Time) *time.Time { return &t }

func sampleEscalations() []Escalation {
	return []Escalation{
		{Key: "@SUM(A1):escalate", Subject: "@SUM(A1)", Class: "mismatched", Reason: "=HYPERLINK(\"http://x\",\"y\")", Status: "open",
			OpenedAt: ptr(t0), PagedAt: ptr(t0.Add(time.Minute))},
		{Key: "order-0999:charge:compensate:ch_0B:escalate", Subject: "order-0999:charge:compensate:ch_0B", Class: "escalated",
			Reason: "refund in doubt", Status: "resolved", OpenedAt: ptr(t0.Add(-48 * time.Hour)), PagedAt: ptr(t0.Add(-48 * time.Hour)),
			ResolvedAt: ptr(t0.Add(-20 * time.Hour)), ResolvedBy: "alice", Note: "refunded by hand in the dashboard"},
	}
}

// randomResult adds n findings of random classes, providers, currencies
// and amounts (negative ones included) to r: a world whose totals only
// come out right if every amount does.
func randomResult(r *Result, seed uint64, n int) *Result {
	rng := rand.New(rand.NewPCG(seed, 1))
	classes := reconcile.Classes[1:]
	currencies := []struct{ provider, cur string }{
		{"stripe", "EUR"}, {"stripe", "JPY"}, {"stripe", "KWD"}, {"stripe", "ISK"}, {"adyen", "USD"}, {"bank", "EUR"}, {"paypal", "HUF"},
	}
	for i := range n {
		c := currencies[rng.IntN(len(currencies))]
		d := Discrepancy{Class: classes[rng.IntN(len(classes))], EffectKey: fmt.Sprintf("effect-%06d", i), Provider: c.provider,
			Currency: c.cur, ExpectedMinor: rng.Int64N(200_000_000) - 20_000_000, Time: t0.Add(-time.Duration(rng.IntN(100_000)) * time.Second),
			Reason: trickyTexts[rng.IntN(len(trickyTexts))]}
		switch d.Class {
		case reconcile.ClassDuplicated:
			d.ObservedMinor = d.ExpectedMinor * int64(2+rng.IntN(2))
		case reconcile.ClassMismatched:
			d.ObservedMinor = d.ExpectedMinor + rng.Int64N(2000) - 1000
		case reconcile.ClassUnexpected:
			d.EffectKey, d.ExpectedMinor, d.ObservedMinor = "", 0, rng.Int64N(200_000_000)-20_000_000
		}
		if d.Class == reconcile.ClassDuplicated || d.Class == reconcile.ClassMissing {
			d.Actions = []Action{{Kind: reconcile.ActionRedeliver, Key: d.EffectKey, Outcome: reconcile.OutcomePlanned, AmountMinor: d.ExpectedMinor, Currency: d.Currency}}
		}
		r.Discrepancies = append(r.Discrepancies, d)
	}
	return r
}

// jsonSums are the totals of a result as its JSON says, per class and
// currency: what the spreadsheet's figures must equal.
type jsonSums struct {
	expected, observed, atRisk map[[2]string]int64 // by class and currency
	moneyAtRisk                map[string]int64
}

func sumJSON(t *testing.T, r *Result) jsonSums {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	s := jsonSums{map[[2]string]int64{}, map[[2]string]int64{}, map[[2]string]int64{}, back.MoneyAtRisk()}
	for _, d := range back.Discrepancies {
		k := [2]string{string(d.Class), d.Currency}
		s.expected[k] += d.ExpectedMinor
		s.observed[k] += d.ObservedMinor
		s.atRisk[k] += d.AtRisk()
	}
	return s
}
