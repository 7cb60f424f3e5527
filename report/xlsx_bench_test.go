package report

import (
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"reconcile"
)

// BenchmarkWriteXLSX writes the spreadsheet of runs of 100,000 and a
// million findings (and a hundredth as many rejected rows). Besides time
// and allocations it reports the peak of the heap the garbage collector
// found live while writing, above what the result itself holds: the
// memory the writer keeps, which must not grow with the rows. And the size
// of the file:
//
//	go test -run '^$' -bench WriteXLSX -benchtime 1x ./report/
func BenchmarkWriteXLSX(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			r := bigResult(n, n/100)
			runtime.GC()
			base := heapLive()
			var size countingWriter
			var peak uint64
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				stop := watchPeak(&peak)
				size = 0
				if err := WriteXLSX(&size, r, nil); err != nil {
					b.Fatal(err)
				}
				stop()
			}
			b.StopTimer()
			b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "peak-live-MB")
			b.ReportMetric(float64(size)/(1<<20), "xlsx-MB")
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// bigResult is a run of n findings of every class, a third of them with an
// action, and rejected rejected rows.
func bigResult(n, rejected int) *Result {
	r := &Result{RunID: "bench", Counts: map[string]int{}, StartedAt: t0, FinishedAt: t0.Add(time.Minute)}
	curs := []string{"EUR", "JPY", "KWD", "USD"}
	classes := reconcile.Classes[1:]
	r.Discrepancies = make([]Discrepancy, n)
	for i := range r.Discrepancies {
		key := fmt.Sprintf("order-%08d:charge", i)
		d := Discrepancy{Class: classes[i%len(classes)], EffectKey: key, Provider: "stripe", Currency: curs[i%len(curs)],
			ExpectedMinor: int64(i%100_000) * 7, ObservedMinor: int64(i%100_000) * 7, Transactions: []string{"ch_3PxyzAbCdEfGh"},
			Reason: "two charges for one request", Time: t0.Add(-time.Duration(i) * time.Second)}
		if i%3 == 0 {
			d.Actions = []Action{{Kind: reconcile.ActionCompensate, Key: key + ":compensate:ch_3PxyzAbCdEfGh", Outcome: reconcile.OutcomePlanned,
				AmountMinor: d.ExpectedMinor, Currency: d.Currency}}
		}
		r.Discrepancies[i] = d
		r.Counts[string(d.Class)]++
	}
	for i := range rejected {
		r.Rejected = append(r.Rejected, Rejected{URI: "s3://settlements/big.csv", Line: i + 2, Reason: "amount is not a number",
			Raw: "ch_x,12;5,eur,2026-11-28 09:30:00,charge,automatic,,,"})
	}
	return r
}

type countingWriter int64

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)

// heapLive is the heap the last garbage collection found live.
func heapLive() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// watchPeak samples the heap every few milliseconds into peak until stop
// is called.
func watchPeak(peak *uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			*peak = max(*peak, heapLive())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
