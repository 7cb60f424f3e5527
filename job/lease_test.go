package job

import (
	"context"
	"testing"
	"time"

	"reconcile"
	"reconcile/clock"
	"reconcile/compensate"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
)

// waitLong bounds, in real time, a wait for a goroutine the fake clock
// moves: a safety net that fails the test, never a pause it relies on.
const waitLong = 30 * time.Second

var t0 = time.Date(2026, 12, 1, 4, 30, 0, 0, time.UTC)

// The run lease is renewed at a third of its length, by the job's clock:
// a second run that comes after the first lease would have run out, but
// while the renewed one holds, is kept out.
func TestRunLeaseIsRenewedByTheClock(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		ctx := context.Background()
		fake := clock.NewFake(t0)
		j := &Job{Store: l.Open(t, fake.Now), Clock: fake}
		lease, _, err := j.takeRunLease(ctx, "first:1", 3*time.Minute)
		if err != nil || lease == nil {
			t.Fatalf("takeRunLease = %v, %v", lease, err)
		}
		defer lease.release()
		for range 3 { // three renewals: 3 minutes on, past the first deadline
			if !fake.WaitFor(1, waitLong) {
				t.Fatal("the renewer does not wait on the clock")
			}
			fake.Advance(time.Minute)
		}
		if !fake.WaitFor(1, waitLong) { // the third renewal is written
			t.Fatal("the renewer did not come back to the clock")
		}
		c, err := j.Store.ClaimGet(ctx, RunLeaseKey)
		if err != nil || !c.LeaseUntil.Equal(t0.Add(6*time.Minute)) {
			t.Fatalf("lease = %+v, %v; want it until %s", c, err, t0.Add(6*time.Minute))
		}
		second := &Job{Store: l.Open(t, fake.Now), Clock: fake}
		if other, holder, err := second.takeRunLease(ctx, "second:2", 3*time.Minute); err != nil || other != nil || holder.Owner != "first:1" {
			t.Errorf("a second run while the renewed lease holds: %v, %+v, %v; want it kept out by first:1", other, holder, err)
		}
		if lease.ctx.Err() != nil {
			t.Error("the run's context is done while it holds its lease")
		}
	})
}

// A run whose lease another run took over (its renewals did not get
// through in time) stops at its next renewal: its context is cancelled.
func TestARunWhoseLeaseWasTakenOverStops(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		ctx := context.Background()
		fake := clock.NewFake(t0)
		j := &Job{Store: l.Open(t, fake.Now), Clock: fake}
		lease, _, err := j.takeRunLease(ctx, "stalled:1", 3*time.Minute)
		if err != nil || lease == nil {
			t.Fatalf("takeRunLease = %v, %v", lease, err)
		}
		defer lease.release()
		// Another run, whose ledger handle reads 4 minutes later, finds the
		// lease run out and takes it over.
		later := func() time.Time { return fake.Now().Add(4 * time.Minute) }
		other := &Job{Store: l.Open(t, later), Clock: fake}
		taken, _, err := other.takeRunLease(ctx, "successor:2", 3*time.Minute)
		if err != nil || taken == nil {
			t.Fatalf("the successor did not take the lease over: %v, %v", taken, err)
		}
		defer taken.release()
		if !fake.WaitFor(2, waitLong) {
			t.Fatal("the renewers do not wait on the clock")
		}
		fake.Advance(time.Minute)
		select {
		case <-lease.ctx.Done():
		case <-time.After(waitLong):
			t.Fatal("the run whose lease was taken over did not stop")
		}
		if taken.ctx.Err() != nil {
			t.Error("the successor stopped too")
		}
	})
}

// A run gives its lease back when it ends, so the next run need not wait
// for the lease to run out.
func TestAReleasedLeaseIsTakenAtOnce(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		ctx := context.Background()
		fake := clock.NewFake(t0)
		j := &Job{Store: l.Open(t, fake.Now), Clock: fake}
		lease, _, err := j.takeRunLease(ctx, "first:1", time.Hour)
		if err != nil || lease == nil {
			t.Fatalf("takeRunLease = %v, %v", lease, err)
		}
		lease.release()
		c, err := j.Store.ClaimGet(ctx, RunLeaseKey)
		if err != nil || c.State == reconcile.ClaimStateHeld {
			t.Fatalf("after release: %+v, %v", c, err)
		}
		next, _, err := j.takeRunLease(ctx, "next:2", time.Hour)
		if err != nil || next == nil {
			t.Fatalf("the next run did not get the released lease: %v", err)
		}
		next.release()
	})
}

// A run that finds the lease held is skipped: it ingests nothing and
// records no run, and says who holds the lease.
func TestARunIsSkippedWhileAnotherHoldsTheLease(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		ctx := context.Background()
		fake := clock.NewFake(t0)
		store := l.Open(t, fake.Now)
		if _, err := store.ClaimAcquire(ctx, &ledgerdb.ClaimParams{Key: RunLeaseKey, Owner: "cron-host:42", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		j := &Job{Store: store, Clock: fake, Owner: "adhoc:7"}
		out, err := j.Run(ctx, &RunParams{RunLease: true, Actions: actionsFor(time.Minute)})
		if err != nil || !out.Skipped || out.Holder == nil || out.Holder.Owner != "cron-host:42" {
			t.Fatalf("Run = %+v, %v; want skipped, held by cron-host:42", out, err)
		}
		if runs, _ := store.RunList(ctx, &ledgerdb.RunsParams{}); len(runs) != 0 {
			t.Errorf("a skipped run recorded %d runs", len(runs))
		}
		// Once that lease has run out, by the clock, the run goes ahead.
		fake.Advance(time.Minute + time.Second)
		out, err = j.Run(ctx, &RunParams{RunLease: true, Actions: actionsFor(time.Minute)})
		if err != nil || out.Skipped {
			t.Fatalf("after the lease ran out: %+v, %v; want a run", out, err)
		}
		if c, _ := store.ClaimGet(ctx, RunLeaseKey); c == nil || c.State == reconcile.ClaimStateHeld {
			t.Errorf("the lease after the run: %+v, want given back", c)
		}
	})
}

func actionsFor(lease time.Duration) compensate.Options { return compensate.Options{Lease: lease} }
