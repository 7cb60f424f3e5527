package matcher

import (
	"time"

	"reconcile"
)

// Window returns what this run's inputs cover: the providers and kinds they
// report on, and each provider's cutoff. The cutoff is the end of the
// provider's evidence (the latest time in it), or asOf when it is set,
// minus lag: settlement reports trail the money by days, so an effect newer
// than the cutoff is pending, not missing.
func Window(inputs []reconcile.Evidence, asOf time.Time, lag time.Duration) (map[Coverage]bool, map[string]time.Time) {
	scope := map[Coverage]bool{}
	end := map[string]time.Time{}
	for i := range inputs {
		e := &inputs[i]
		scope[Coverage{e.Provider, e.Kind}] = true
		if e.Time.After(end[e.Provider]) {
			end[e.Provider] = e.Time
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
