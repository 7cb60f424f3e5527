package matcher

import (
	"time"

	"reconcile"
)

// Ends returns what evidence covers: each provider and kind it reports on,
// with its latest time (zero when no record of it has a time).
func Ends(evidence []reconcile.Evidence) map[Coverage]time.Time {
	ends := map[Coverage]time.Time{}
	for i := range evidence {
		e := &evidence[i]
		c := Coverage{e.Provider, e.Kind}
		if t, ok := ends[c]; !ok || e.Time.After(t) {
			ends[c] = e.Time
		}
	}
	return ends
}

// Window returns what this run's inputs cover, from their Ends: the
// providers and kinds they report on, and each provider's cutoff. The cutoff
// is the end of the provider's evidence (the latest time in it), or asOf
// when it is set, minus lag: settlement reports trail the money by days, so
// an effect newer than the cutoff is pending, not missing. A provider whose
// evidence has no time has no cutoff.
func Window(ends map[Coverage]time.Time, asOf time.Time, lag time.Duration) (map[Coverage]bool, map[string]time.Time) {
	scope := make(map[Coverage]bool, len(ends))
	end := map[string]time.Time{}
	for c, t := range ends {
		scope[c] = true
		if t.After(end[c.Provider]) {
			end[c.Provider] = t
		}
	}
	cutoff := make(map[string]time.Time, len(end))
	for p, t := range end {
		if !asOf.IsZero() {
			t = asOf
		}
		cutoff[p] = t.Add(-lag)
	}
	return scope, cutoff
}
