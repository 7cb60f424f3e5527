package driver

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"reconcile"
)

// A Batcher hands every row to its flush functions once, in the order
// and with the numbers they came in, while its caller goes on.
func TestBatcherWritesEveryRowInOrder(t *testing.T) {
	d, err := newDetails()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var evs, rejs []int
	b := NewBatcher(d, func(rows []SeqEvidence) error {
		for _, r := range rows {
			if r.Evidence.TxID != fmt.Sprint("ch_", r.Seq) {
				return fmt.Errorf("row %d holds %s", r.Seq, r.Evidence.TxID)
			}
			evs = append(evs, r.Seq)
		}
		return nil
	}, func(rows []SeqRejected) error {
		for _, r := range rows {
			rejs = append(rejs, r.Seq)
		}
		return nil
	})
	const n = 3*batchSize + 7
	e := &reconcile.Evidence{}
	for i := 1; i <= n; i++ {
		if i%1000 == 0 {
			if err := b.Reject(&reconcile.Rejected{Line: i}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		e.TxID = fmt.Sprint("ch_", i) // the same record, changed: the Batcher keeps a copy
		if err := b.Evidence(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(evs)+len(rejs) != n || len(rejs) != n/1000 {
		t.Fatalf("wrote %d records and %d rejected rows, want %d in all, %d rejected", len(evs), len(rejs), n, n/1000)
	}
	for i, seq := range evs {
		if i > 0 && seq <= evs[i-1] {
			t.Fatalf("record %d written after %d", seq, evs[i-1])
		}
	}
}

// A write that fails stops the caller within a batch or two, Flush and
// Close give its error, and nothing is written once Close returned.
func TestBatcherStopsAtTheFirstFailedWrite(t *testing.T) {
	d, err := newDetails()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	boom := errors.New("disk full")
	var batches atomic.Int32
	b := NewBatcher(d, func([]SeqEvidence) error {
		if batches.Add(1) == 2 {
			return boom
		}
		return nil
	}, func([]SeqRejected) error { return nil })
	added := 0
	for ; added < 100*batchSize; added++ {
		if err := b.Evidence(&reconcile.Evidence{TxID: "ch"}); err != nil {
			if !errors.Is(err, boom) {
				t.Fatalf("Evidence = %v, want the write's error", err)
			}
			break
		}
	}
	if added > 5*batchSize {
		t.Errorf("the caller went on for %d records after the second batch failed", added)
	}
	if err := b.Flush(); !errors.Is(err, boom) {
		t.Errorf("Flush = %v, want the write's error", err)
	}
	if err := b.Close(); !errors.Is(err, boom) {
		t.Errorf("Close = %v, want the write's error", err)
	}
	if got := batches.Load(); got != 2 {
		t.Errorf("%d batches written, want 2: none after the failed one", got)
	}
}

// Close, after a caller that gave up, waits for the batch being written.
func TestBatcherCloseWaitsForTheWriter(t *testing.T) {
	d, err := newDetails()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var written atomic.Bool
	writing, release := make(chan struct{}), make(chan struct{})
	b := NewBatcher(d, func([]SeqEvidence) error {
		close(writing)
		<-release
		written.Store(true)
		return nil
	}, func([]SeqRejected) error { return nil })
	for range batchSize {
		if err := b.Evidence(&reconcile.Evidence{TxID: "ch"}); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		<-writing
		close(release)
	}()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !written.Load() {
		t.Error("Close returned before the batch it was handed was written")
	}
}
