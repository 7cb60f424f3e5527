// Package report turns a run into what people and other tools read: the
// JSON result (the contract of DESIGN section 8), the summary table, the
// finance spreadsheet and the metrics of the nightly run.
package report

import (
	"reconcile/ingest"
	"strings"
	"time"

	"reconcile"
)

// Result is the JSON result of a run. Its field names are a contract: other
// tools read them.
type Result struct {
	RunID      string         `json:"run_id"`
	AsOf       string         `json:"as_of"`
	Applied    bool           `json:"applied"`
	Counts     map[string]int `json:"counts"` // one integer per class in reconcile.Classes
	OutOfScope int            `json:"out_of_scope"`
	Inputs     []Input        `json:"inputs"`
	// Discrepancies are every finding other than confirmed.
	Discrepancies []Discrepancy `json:"discrepancies"`
	Rejected      []Rejected    `json:"rejected"`
	// RejectedUnlisted counts the rejected rows that Rejected does not
	// list: a result lists a bounded number of them, the ledger keeps all.
	RejectedUnlisted int `json:"rejected_unlisted,omitempty"`
	// Orphans are effects made by an owner that had lost its claim: real
	// money nobody would see unless it is reported.
	Orphans []Orphan `json:"orphans"`
	// AtRisk and Repaired are MoneyAtRisk and MoneyRepaired, in minor
	// units per currency, as the run ended.
	AtRisk   map[string]int64 `json:"money_at_risk"`
	Repaired map[string]int64 `json:"money_repaired"`
	// Resolved is what the findings a person resolved since the previous
	// run had at risk, per currency.
	Resolved map[string]int64 `json:"money_resolved,omitempty"`
	// Confirmed is the money of the effects this run confirmed, per
	// provider and currency.
	Confirmed  []Volume  `json:"confirmed,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// PagesFailed are the pages the pager did not take within the run,
	// after its retries: the escalations are recorded, not paged, and the
	// next run sends them again. Any makes the run exit 1.
	PagesFailed []PageFailure `json:"pages_failed,omitempty"`
	// Skipped is set when the run did nothing because another run holds
	// the ledger's run lease: LeaseHolder, until LeaseUntil.
	Skipped     bool      `json:"skipped,omitempty"`
	LeaseHolder string    `json:"lease_holder,omitempty"`
	LeaseUntil  time.Time `json:"lease_until,omitzero"`
}

// PageFailure is a page the pager did not take.
type PageFailure struct {
	Key     string `json:"key"` // the escalation's key, the page's dedup key
	Subject string `json:"subject"`
	Class   string `json:"class"`
	Error   string `json:"error"` // what the pager answered, without secrets
}

// Volume is a count and a sum of money in one provider's minor units of
// one currency: the confirmed effects of a run, or the evidence of one kind
// an input gave.
type Volume struct {
	Provider string         `json:"provider"` // whose minor units AmountMinor and FeeMinor are in
	Currency string         `json:"currency"` // upper case
	Kind     reconcile.Kind `json:"kind,omitempty"`
	Count    int            `json:"count"`
	// AmountMinor is the signed gross; FeeMinor the fees, positive as a
	// cost, 0 where the input gives none.
	AmountMinor int64 `json:"amount_minor"`
	FeeMinor    int64 `json:"fee_minor,omitempty"`
	// Overflow is set when the sum went past int64: AmountMinor is then
	// the bound it saturated at, never a wrapped total.
	Overflow bool `json:"overflow,omitempty"`
}

// Input is one input's account, in every output that shows one: the run's
// result and `ingest --json`. Rows = Evidence + Rejected + Ignored.
type Input struct {
	URI      string `json:"uri"`
	Format   string `json:"format"`
	Hash     string `json:"sha256"` // of the content as read
	ETag     string `json:"etag,omitempty"`
	Bytes    int64  `json:"bytes"`
	Rows     int    `json:"rows"`
	Evidence int    `json:"evidence"`
	Rejected int    `json:"rejected"`
	Ignored  int    `json:"ignored"`
	// Ignores counts the ignored rows by reason.
	Ignores map[string]int `json:"ignored_reasons,omitempty"`
	// AlreadyIngested is set when the ledger held the same content: nothing
	// was read, and the counts are those of its first ingest.
	AlreadyIngested bool `json:"already_ingested,omitempty"`
	// Totals are the evidence the input gave per provider, currency and
	// kind: for the tie-out to the payout and the bank statement.
	Totals []Volume `json:"totals,omitempty"`
}

// InputOf is in as the outputs show it.
func InputOf(in *ingest.Input) Input {
	out := Input{URI: in.URI, Format: in.Format, Hash: in.Hash, ETag: in.ETag, Bytes: in.Bytes, Rows: in.Rows, Evidence: in.Evidence,
		Rejected: in.Rejected, Ignored: in.Ignored, Ignores: in.Ignores, AlreadyIngested: in.AlreadyIngested}
	for _, t := range in.Totals {
		out.Totals = append(out.Totals, Volume{Provider: t.Provider, Currency: t.Currency, Kind: t.Kind, Count: t.Count,
			AmountMinor: t.AmountMinor, FeeMinor: t.FeeMinor, Overflow: t.Overflow})
	}
	return out
}

// Discrepancy is one finding: an effect's class other than confirmed, or an
// unexpected transaction (EffectKey empty).
type Discrepancy struct {
	Class         reconcile.Class `json:"class"`
	EffectKey     string          `json:"effect_key"`
	Provider      string          `json:"provider"`
	Currency      string          `json:"currency"` // upper case
	ExpectedMinor int64           `json:"expected_minor"`
	ObservedMinor int64           `json:"observed_minor"`
	// ObservedCurrency is the currency of what was observed, when it is
	// not Currency (a mismatch in another currency).
	ObservedCurrency string   `json:"observed_currency,omitempty"`
	Transactions     []string `json:"transactions"`
	// Related are the refunds and disputes of the effect's charge that no
	// effect of ours made (a refund a person made in the dashboard): not
	// its evidence, shown with it.
	Related []string `json:"related,omitempty"`
	Actions []Action `json:"actions"`
	Reason  string   `json:"reason"` // in words, for people
	// Time is when the effect was created, or when the unexpected
	// transaction happened; zero when unknown.
	Time time.Time `json:"time,omitzero"`
	// FirstFound is when a run first found the finding as it is: an
	// earlier run's, for one still open since, else this run's start.
	FirstFound time.Time `json:"first_found,omitzero"`
}

// Action is one action of a finding and what became of it.
type Action struct {
	Kind    reconcile.ActionKind `json:"kind"`
	Key     string               `json:"key"`
	Target  string               `json:"target"`
	Outcome reconcile.Outcome    `json:"outcome"`
	// AmountMinor and Currency are the money the action moves (a refund,
	// a redelivered charge); zero for a page.
	AmountMinor int64  `json:"amount_minor,omitempty"`
	Currency    string `json:"currency,omitempty"`
	// Made is what the provider made or a lookup found (re_…, pi_…).
	Made string `json:"made,omitempty"`
	// Note says in words why the outcome is what it is.
	Note string `json:"note,omitempty"`
}

// Rejected is one input row that was not evidence.
type Rejected struct {
	URI    string `json:"uri"`
	Line   int    `json:"line"` // 1-based line the row starts on; a CSV header is line 1
	Reason string `json:"reason"`
	Raw    string `json:"raw"`
}

// Orphan is a success reported by an owner that had lost its claim.
type Orphan struct {
	Key          string `json:"key"`
	StaleOwner   string `json:"stale_owner"`
	StaleFence   int64  `json:"stale_fence"`
	StaleResult  string `json:"stale_result"`
	CurrentOwner string `json:"current_owner"`
	CurrentFence int64  `json:"current_fence"`
	CurrentState string `json:"current_state"`
}

// NeedsPerson reports whether the run found something a person must look
// at: an escalated or mismatched effect, unexpected money, an action
// refused or escalated (a duplicated refund, a charge that did not check out
// at the provider), an orphan. It decides exit status 3.
func (r *Result) NeedsPerson() bool {
	if r.Counts[string(reconcile.ClassMismatched)]+r.Counts[string(reconcile.ClassEscalated)]+r.Counts[string(reconcile.ClassUnexpected)] > 0 || len(r.Orphans) > 0 {
		return true
	}
	for _, d := range r.Discrepancies {
		for _, x := range d.Actions {
			if x.Kind == reconcile.ActionEscalate || x.Outcome == reconcile.OutcomeRefused || x.Outcome == reconcile.OutcomeEscalated {
				return true
			}
		}
	}
	return false
}

// MoneyAtRisk is, per currency, the money of the findings that are not
// settled: the extra money of a duplicate, and what is missing, mismatched, unexpected, deferred or
// escalated. Pending is not at risk yet.
func (r *Result) MoneyAtRisk() map[string]int64 {
	out, _ := r.moneyAtRisk()
	return out
}

// MoneyRepaired is, per currency, what this run's actions made (refunds of
// extra charges, missing effects redelivered) and the provider's report
// has yet to confirm.
func (r *Result) MoneyRepaired() map[string]int64 {
	out := map[string]int64{}
	for i := range r.Discrepancies {
		if v := r.Discrepancies[i].Repaired(); v != 0 {
			out[r.Discrepancies[i].Currency], _ = reconcile.AddMinor(out[r.Discrepancies[i].Currency], v)
		}
	}
	return out
}

// Overflowed names the currencies whose money at risk is beyond int64:
// MoneyAtRisk gives the largest amount it can hold for them.
func (r *Result) Overflowed() map[string]bool {
	_, over := r.moneyAtRisk()
	return over
}

func (r *Result) moneyAtRisk() (map[string]int64, map[string]bool) {
	out, over := map[string]int64{}, map[string]bool{}
	for _, d := range r.Discrepancies {
		if d.Class == reconcile.ClassPending {
			continue
		}
		sum, ok := reconcile.AddMinor(out[d.Currency], d.AtRisk())
		out[d.Currency] = sum
		if !ok {
			over[d.Currency] = true
		}
	}
	return out, over
}

// AtRisk is the finding's open exposure, its share of MoneyAtRisk
// (docs/CLASSIFICATION.md): the extra charges of a duplicate not refunded,
// a missing effect not redelivered, the difference of a mismatch (the
// whole request when the currency differs), unexpected money; for a
// deferred or escalated finding the money it is about. Nothing for a
// pending or confirmed effect.
func (d *Discrepancy) AtRisk() int64 {
	open, _ := d.exposure()
	return open
}

// Repaired is what this run's actions made for the finding (a refund of an
// extra charge, a missing effect redelivered) that the provider's report
// has yet to confirm.
func (d *Discrepancy) Repaired() int64 {
	_, repaired := d.exposure()
	return repaired
}

func (d *Discrepancy) exposure() (open, repaired int64) {
	switch d.Class {
	case reconcile.ClassConfirmed, reconcile.ClassPending:
		return 0, 0
	case reconcile.ClassMismatched:
		if d.ObservedCurrency != "" && !strings.EqualFold(d.ObservedCurrency, d.Currency) {
			return magnitude(d.ExpectedMinor), 0
		}
		diff, _ := reconcile.AddMinor(d.ObservedMinor, -d.ExpectedMinor)
		if diff < 0 {
			diff = -diff
		}
		return diff, 0
	case reconcile.ClassDuplicated:
		extra, _ := reconcile.AddMinor(d.ObservedMinor, -d.ExpectedMinor)
		paged := false
		for _, x := range d.Actions {
			switch {
			case x.Kind == reconcile.ActionEscalate:
				paged = true
			case x.Kind == reconcile.ActionCompensate && made(x.Outcome):
				repaired, _ = reconcile.AddMinor(repaired, x.AmountMinor)
			case x.Kind == reconcile.ActionCompensate:
				open, _ = reconcile.AddMinor(open, x.AmountMinor)
			}
			extra, _ = reconcile.AddMinor(extra, -x.AmountMinor)
		}
		if paged && extra > 0 {
			// What no compensation covers goes to a person: a refund or
			// payout made twice, an extra charge refunded in part.
			open, _ = reconcile.AddMinor(open, extra)
		}
		return open, repaired
	case reconcile.ClassMissing:
		for _, x := range d.Actions {
			if x.Kind != reconcile.ActionRedeliver {
				continue
			}
			switch x.Outcome {
			case reconcile.OutcomeApplied:
				return 0, magnitude(d.ExpectedMinor)
			case reconcile.OutcomeSkipped: // found at the provider: not missing after all
				return 0, 0
			}
		}
	}
	return magnitude(d.Money()), 0
}

// magnitude is the size of an amount, whichever way the money went: a
// missing refund is at risk as much as a missing charge.
func magnitude(minor int64) int64 {
	if minor < 0 {
		return max(-minor, 0) // -MinInt64 does not fit: the bound itself, saturated
	}
	return minor
}

// made reports whether an outcome means that the provider made the action:
// now, or in an earlier attempt this run found.
func made(o reconcile.Outcome) bool {
	return o == reconcile.OutcomeApplied || o == reconcile.OutcomeSkipped
}

// Money is the amount a finding is about: what was observed for a
// duplicate, a mismatch or unexpected money (for a duplicate, the sum of
// its transactions), else what was expected.
func (d *Discrepancy) Money() int64 {
	switch d.Class {
	case reconcile.ClassUnexpected, reconcile.ClassDuplicated, reconcile.ClassMismatched:
		return d.ObservedMinor
	}
	return d.ExpectedMinor
}

// FindingOf is a finding in the result's shape, without the times, which
// the caller knows: when its effect was made, and when it was first found.
func FindingOf(d *reconcile.Discrepancy) Discrepancy {
	out := Discrepancy{Class: d.Class, EffectKey: d.EffectKey, Provider: d.Provider, Currency: d.Currency, ExpectedMinor: d.ExpectedMinor,
		ObservedMinor: d.ObservedMinor, Transactions: []string{}, Actions: []Action{}, Reason: d.Reason}
	for _, t := range d.Transactions {
		out.Transactions = append(out.Transactions, t.ID)
	}
	if d.Class == reconcile.ClassMismatched && len(d.Transactions) == 1 && !strings.EqualFold(d.Transactions[0].Amount.Currency, d.Currency) {
		out.ObservedCurrency = strings.ToUpper(d.Transactions[0].Amount.Currency)
	}
	for _, t := range d.Related {
		out.Related = append(out.Related, t.ID)
	}
	for _, x := range d.Actions {
		out.Actions = append(out.Actions, Action{Kind: x.Kind, Key: x.Key, Target: x.Target, Outcome: x.Outcome,
			AmountMinor: x.Amount.Minor, Currency: x.Amount.Currency, Made: x.Made, Note: x.Note})
	}
	return out
}
