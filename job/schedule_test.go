package job

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"reconcile"

	"github.com/robfig/cron/v3"

	"reconcile/clock"
	"reconcile/ingest"
	"reconcile/ledgerdb/ledgerdbtest"
)

func everyMinute(t *testing.T) cron.Schedule {
	s, err := cron.ParseStandard("CRON_TZ=UTC * * * * *")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// slots records the slots run, from any scheduler.
type slots struct {
	mu  sync.Mutex
	run []time.Time
}

func (s *slots) add(slot time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.run = append(s.run, slot)
}

func (s *slots) list() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.run)
}

// Two schedulers on one ledger, replicas on one clock, run each slot
// exactly once between them, and stop when their context ends.
func TestTwoSchedulersRunEachSlotOnce(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		fake := clock.NewFake(t0)
		ctx, cancel := context.WithCancel(context.Background())
		ran := &slots{}
		var wg sync.WaitGroup
		for _, owner := range []string{"replica-a:1", "replica-b:2"} {
			j := &Job{Store: l.Open(t, fake.Now), Clock: fake, Owner: owner}
			wg.Go(func() {
				j.Schedule(ctx, everyMinute(t), "* * * * *", func(_ context.Context, slot time.Time) { ran.add(slot) })
			})
		}
		for range 3 {
			if !fake.WaitFor(2, waitLong) {
				t.Fatal("the schedulers do not wait for their next slot")
			}
			fake.Advance(time.Minute)
		}
		if !fake.WaitFor(2, waitLong) { // both are done with the third slot
			t.Fatal("the schedulers did not come back after the third slot")
		}
		cancel()
		wg.Wait()
		want := []time.Time{t0.Add(time.Minute), t0.Add(2 * time.Minute), t0.Add(3 * time.Minute)}
		got := ran.list()
		slices.SortFunc(got, time.Time.Compare)
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("slots run = %v, want each of %v once", got, want)
		}
	})
}

// A run that lasts past the next slots makes them skipped, and says so:
// the schedule picks up at the first slot after the run.
func TestARunThatOverrunsSkipsTheSlotsItCovered(t *testing.T) {
	l := ledgerdbtest.New(t, "sqlite")
	fake := clock.NewFake(t0)
	var logs bytes.Buffer
	j := &Job{Store: l.Open(t, fake.Now), Clock: fake, Owner: "one:1", Log: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	ran := &slots{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		j.Schedule(ctx, everyMinute(t), "* * * * *", func(_ context.Context, slot time.Time) {
			ran.add(slot)
			if len(ran.list()) == 1 {
				fake.Advance(2*time.Minute + 30*time.Second) // the first run takes two and a half minutes
			}
		})
	}()
	for range 2 { // the first slot, and the first one after the long run
		if !fake.WaitFor(1, waitLong) {
			t.Fatal("the scheduler does not wait for its next slot")
		}
		next := t0.Add(time.Minute)
		if len(ran.list()) == 1 {
			next = t0.Add(4 * time.Minute)
		}
		fake.Advance(next.Sub(fake.Now()))
	}
	if !fake.WaitFor(1, waitLong) {
		t.Fatal("the scheduler did not come back")
	}
	cancel()
	<-done
	want := []time.Time{t0.Add(time.Minute), t0.Add(4 * time.Minute)}
	if got := ran.list(); !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("slots run = %v, want %v (04:32 and 04:33 overrun)", got, want)
	}
	if !strings.Contains(logs.String(), "the run overran the next slots") || !strings.Contains(logs.String(), "skipped=2") {
		t.Errorf("the log does not say two slots were skipped:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "schedule stopped") {
		t.Errorf("the log does not say the schedule stopped:\n%s", logs.String())
	}
}

// A schedule stopped while its run works (SIGTERM, as the command maps
// it) ends that run, gives the run lease back, and returns.
func TestAStoppedScheduleEndsItsRunAndGivesTheLeaseBack(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		fake := clock.NewFake(t0)
		store := l.Open(t, fake.Now)
		ctx, cancel := context.WithCancel(context.Background())
		src := itemizedSource(t)
		// The stop comes while the run reads its input: it holds the lease.
		j := &Job{Store: store, Clock: fake, Owner: "cron:1", Progress: func(func() string) func() { cancel(); return func() {} }}
		var runErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			j.Schedule(ctx, everyMinute(t), "* * * * *", func(ctx context.Context, _ time.Time) {
				_, runErr = j.Run(ctx, &RunParams{Sources: src, Options: &ingest.Options{}, RunLease: true, Actions: actionsFor(time.Hour)})
			})
		}()
		if !fake.WaitFor(1, waitLong) {
			t.Fatal("the scheduler does not wait for its slot")
		}
		fake.Advance(time.Minute)
		select {
		case <-done:
		case <-time.After(waitLong):
			t.Fatal("the schedule did not stop")
		}
		if !errors.Is(runErr, context.Canceled) {
			t.Errorf("the run stopped with %v, want context.Canceled", runErr)
		}
		c, err := store.ClaimGet(context.Background(), RunLeaseKey)
		if err != nil || c.State == reconcile.ClaimStateHeld {
			t.Errorf("run lease after the stop = %+v, %v; want given back", c, err)
		}
		if srcs, _ := store.SourceList(context.Background()); len(srcs) != 0 {
			t.Errorf("the stopped run left %d sources ingested", len(srcs))
		}
	})
}

// itemizedSource is a one-line Stripe itemized report on disk.
func itemizedSource(t *testing.T) []ingest.Source {
	t.Helper()
	path := filepath.Join(t.TempDir(), "day.itemized.csv")
	body := "balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,charge_id,payment_intent_id,payment_metadata[effect_key]\n" +
		"txn_1,2026-11-30 09:00:00,eur,10.00,0.30,9.70,charge,ch_0,ch_0,pi_0,app:charge:0\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	srcs, err := ingest.Expand(context.Background(), []string{path}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srcs
}
