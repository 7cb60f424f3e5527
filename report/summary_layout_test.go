package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"reconcile"
)

// The summary is read on a terminal: it fits 160 columns without trailing
// padding, money has thousands separators and currencies come in one
// order, the duplicated line shows the extra money (not the gross of every
// charge), the headline says what is at risk and what is still open from
// earlier runs, and the rejected count counts every rejected row.
func TestSummaryReadsOnATerminal(t *testing.T) {
	start := time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)
	long := strings.Repeat("a very long note about what the provider said ", 10)
	r := &Result{RunID: "rec_1", AsOf: "2026-12-01T00:00:00Z", StartedAt: start, Counts: map[string]int{"duplicated": 2, "missing": 1},
		Discrepancies: []Discrepancy{
			{Class: reconcile.ClassDuplicated, EffectKey: "a", Currency: "USD", ExpectedMinor: 100000, ObservedMinor: 200000, FirstFound: start,
				Actions: []Action{{Kind: reconcile.ActionCompensate, Key: "a:compensate:ch_2", Outcome: reconcile.OutcomeEscalated, Note: long, AmountMinor: 100000, Currency: "USD"}}},
			{Class: reconcile.ClassDuplicated, EffectKey: "b", Currency: "EUR", ExpectedMinor: 123456700, ObservedMinor: 246913400, FirstFound: start.Add(-48 * time.Hour),
				Actions: []Action{{Kind: reconcile.ActionCompensate, Key: "b:compensate:ch_4", Outcome: reconcile.OutcomePlanned, AmountMinor: 123456700, Currency: "EUR"}}},
			{Class: reconcile.ClassMissing, EffectKey: "c", Currency: "EUR", ExpectedMinor: 500, FirstFound: start.Add(-24 * time.Hour)},
		},
		Rejected: []Rejected{{URI: "x.csv", Line: 2, Reason: "bad"}}, RejectedUnlisted: 41}
	var buf bytes.Buffer
	Summary(&buf, r)
	out := buf.String()
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > 160 {
			t.Errorf("a line of %d columns: %q", n, line)
		}
		if strings.TrimRight(line, " ") != line {
			t.Errorf("trailing padding: %q", line)
		}
	}
	for _, want := range []string{
		"1,234,567.00 EUR, 1,000.00 USD", // the extra money of the duplicates, EUR before USD
		"money at risk: 1,234,572.00 EUR, 1,000.00 USD",
		"2 findings still open from earlier runs",
		"42 rejected rows",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary does not say %q:\n%s", want, out)
		}
	}
}
