package driver

import (
	"testing"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
)

// countWriter counts what reaches the ledger's writer.
type countWriter struct{ n int }

func (c *countWriter) Evidence(*reconcile.Evidence) error { c.n++; return nil }
func (c *countWriter) Reject(*reconcile.Rejected) error   { return nil }

// What cannot be kept fails no ingest: every record still reaches the
// ledger, and the source is not kept, so its run reads it back.
func TestAKeepingThatCannotWriteKeepsNothing(t *testing.T) {
	var k Kept
	for _, broken := range []bool{false, true} {
		kw, err := k.Keep(&ledgerdb.IngestParams{Keep: true}, time.Microsecond)
		if err != nil {
			t.Fatal(err)
		}
		ledger := &countWriter{}
		w := kw.Over(ledger)
		if broken {
			kw.f.Close() // as a full temporary folder would fail the writes
		}
		for i := range 20000 { // more than the buffer holds
			if err := w.Evidence(&reconcile.Evidence{Provider: "stripe", Kind: reconcile.KindCharge, TxID: "ch_" + string(rune('a'+i%26)), Line: i + 2,
				Raw: string(make([]byte, 100))}); err != nil {
				t.Fatalf("broken %v: record %d: %v", broken, i, err)
			}
		}
		k.Done(kw, &ledgerdb.IngestResult{SourceID: 7}, nil)
		taken, rest := k.Take([]int64{7})
		if ledger.n != 20000 || broken != (len(taken) == 0) || broken != (len(rest) == 1) {
			t.Fatalf("broken %v: %d records reached the ledger, %d sources taken, %v not kept; want 20000, and the source kept unless broken",
				broken, ledger.n, len(taken), rest)
		}
		for _, kw := range taken {
			kw.close()
		}
	}
}
