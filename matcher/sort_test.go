package matcher

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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

// Transactions leave in compareTx's order, each once, whatever their ids
// share: a long common start, a length under the eight bytes the sort
// looks at first, a NUL byte, and several providers.
func TestTransactionsComeInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	ids := []string{"", "a", "ab", "ab\x00", "ab\x00c", "abcdefgh", "abcdefgh1", "abcdefgh2", "abcdefg\xff", "ch_1", "ch_10", "ch_2", "\xff"}
	for range 50 {
		var evidence []reconcile.Evidence
		for line := range 300 {
			id := ids[r.IntN(len(ids))] + strings.Repeat("x", r.IntN(3))
			evidence = append(evidence, reconcile.Evidence{Provider: []string{"stripe", "adyen", "paypal"}[r.IntN(3)], TxID: id,
				Kind:   []reconcile.Kind{reconcile.KindCharge, reconcile.KindRefund, reconcile.KindDispute}[r.IntN(3)],
				Amount: reconcile.Money{Minor: int64(r.IntN(5) - 2), Currency: "EUR"}, URI: "a.csv", Line: line + 2})
		}
		txs := Transactions(evidence)
		if !slices.IsSortedFunc(txs, func(a, b reconcile.Transaction) int { return compareTx(&a, &b) }) {
			t.Fatalf("transactions out of order: %v", txs)
		}
		seen := 0
		for _, tx := range txs {
			seen += tx.Records
		}
		if seen != len(evidence) {
			t.Fatalf("%d records in the transactions, want %d", seen, len(evidence))
		}
	}
}
