package driver

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Pipeline records every partition once, one at a time, after it was
// matched; it matches several at once where there are processors for it;
// an error at any stage ends it with that error, however many partitions
// are in flight, without waiting for the rest.
func TestPipeline(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	boom := errors.New("boom")
	for _, tc := range []struct {
		name                  string
		count, failRead       int
		failMatch, failRecord int
		wantErr               error
	}{
		{name: "none", count: 0, failRead: -1, failMatch: -1, failRecord: -1},
		{name: "all", count: 200, failRead: -1, failMatch: -1, failRecord: -1},
		{name: "read fails", count: 200, failRead: 17, failMatch: -1, failRecord: -1, wantErr: boom},
		{name: "match fails", count: 200, failRead: -1, failMatch: 3, failRecord: -1, wantErr: boom},
		{name: "record fails", count: 200, failRead: -1, failMatch: -1, failRecord: 0, wantErr: boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu                  sync.Mutex
				recorded            []int
				recording, matching atomic.Int32
				both                = make(chan struct{}) // closed once two matches were in flight at once
				once                sync.Once
				first               atomic.Bool // set by the match that began first
			)
			err := Pipeline(context.Background(), tc.count,
				func(_ context.Context, i int) (int, error) {
					if i == tc.failRead {
						return 0, boom
					}
					return i, nil
				},
				func(i int) (int, error) {
					n := matching.Add(1)
					defer matching.Add(-1)
					if n >= 2 {
						once.Do(func() { close(both) })
					}
					// A second match comes beside the first to begin (not
					// partition 0's: its worker may be descheduled until
					// every other partition was matched one at a time).
					if first.CompareAndSwap(false, true) && tc.failRead < 0 && tc.failMatch < 0 {
						select {
						case <-both:
						case <-time.After(10 * time.Second):
							t.Error("no second partition was matched while the first was")
						}
					}
					if i == tc.failMatch {
						return 0, boom
					}
					return i, nil
				},
				func(_ context.Context, i int) error {
					if recording.Add(1) != 1 {
						t.Error("two partitions recorded at once")
					}
					defer recording.Add(-1)
					if i == tc.failRecord {
						return boom
					}
					mu.Lock()
					defer mu.Unlock()
					recorded = append(recorded, i)
					return nil
				})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Pipeline = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			slices.Sort(recorded)
			for i, r := range recorded {
				if r != i {
					t.Fatalf("recorded %v, want each of 0..%d once", recorded, tc.count-1)
				}
			}
			if len(recorded) != tc.count {
				t.Fatalf("recorded %d partitions of %d", len(recorded), tc.count)
			}
		})
	}
}
