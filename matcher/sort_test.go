package matcher

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"reconcile"
)

// Records come to Transactions as a few runs in order (each source's
// lines), or in none: either way they leave in compareRecords' order,
// each once.
func TestRecordsAreSortedHoweverTheyCome(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, runs := range []int{1, 2, 3, 7, 17, 40} {
		var recs []*reconcile.Evidence
		for range runs { // a source's records, by line; sources in no order, some read twice
			uri, line := fmt.Sprintf("s%d.csv", r.IntN(runs+1)), 1
			for range r.IntN(200) {
				line += r.IntN(2) // records sharing a line, as entries of one JSON line
				recs = append(recs, &reconcile.Evidence{URI: uri, Line: line, TxID: fmt.Sprintf("ch_%d", r.IntN(50)),
					Amount: reconcile.Money{Minor: int64(r.IntN(3))}})
			}
		}
		if runs == 40 {
			r.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		}
		want := slices.Clone(recs)
		slices.SortFunc(want, compareRecords)
		got := slices.Clone(recs)
		sortRecords(got)
		for i := range want {
			if compareRecords(got[i], want[i]) != 0 {
				t.Fatalf("%d runs: record %d is %+v, want %+v", runs, i, *got[i], *want[i])
			}
		}
		seen := map[*reconcile.Evidence]bool{}
		for _, e := range got {
			seen[e] = true
		}
		if len(seen) != len(recs) {
			t.Fatalf("%d runs: %d distinct records out of %d", runs, len(seen), len(recs))
		}
	}
}
