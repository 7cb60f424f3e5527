package driver

import (
	"sort"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
)

// CoveringWriter passes records on to a SourceWriter and keeps the
// coverage of what it passed, as Coverage will read it back: times cut to
// the precision the ledger stores them at.
type CoveringWriter struct {
	ledgerdb.SourceWriter
	precision time.Duration
	ends      map[ledgerdb.CoverageEnd]time.Time // by provider and kind (End zero)
}

// Cover returns a CoveringWriter over w for a ledger that stores times to
// precision.
func Cover(w ledgerdb.SourceWriter, precision time.Duration) *CoveringWriter {
	return &CoveringWriter{SourceWriter: w, precision: precision, ends: map[ledgerdb.CoverageEnd]time.Time{}}
}

// Evidence implements SourceWriter.
func (c *CoveringWriter) Evidence(e *reconcile.Evidence) error {
	k := ledgerdb.CoverageEnd{Provider: e.Provider, Kind: e.Kind}
	if t := e.Time.UTC().Truncate(c.precision); t.After(c.ends[k]) {
		c.ends[k] = t
	} else if _, ok := c.ends[k]; !ok {
		c.ends[k] = time.Time{}
	}
	return c.SourceWriter.Evidence(e)
}

// Ends returns the coverage, by provider and kind, as Coverage orders it.
func (c *CoveringWriter) Ends() []ledgerdb.CoverageEnd {
	out := make([]ledgerdb.CoverageEnd, 0, len(c.ends))
	for k, end := range c.ends {
		k.End = end
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Provider != out[j].Provider {
			return out[i].Provider < out[j].Provider
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}
