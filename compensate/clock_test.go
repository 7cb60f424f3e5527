package compensate_test

import (
	"testing"
	"time"

	"reconcile"
	"reconcile/clock"
	"reconcile/compensate"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/stripeapi/sandbox"
)

// A compensation in doubt (its refund answered 500 every time) is left to
// later runs for the grace period and paged once it has passed, by the
// runs' clock: runs within the hour page nobody, the first run after it
// pages, and later runs do not page again. The fake clock stands in for
// waiting out the hour.
func TestACompensationInDoubtIsPagedWhenItsGraceHasPassed(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		fake := clock.NewFake(time.Now())
		w.now = fake.Now
		d := w.duplicate("app:charge:0", 990)
		key := d.Actions[0].Key
		w.sb.Inject(sandbox.Fault{Op: sandbox.OpRefund, Key: key, Kind: sandbox.FaultError500})
		first := fake.Now()
		for i, step := range []struct {
			after     time.Duration // since the first run
			escalated bool
			pages     int
		}{{0, false, 0}, {30 * time.Minute, false, 0}, {59 * time.Minute, false, 0}, {61 * time.Minute, true, 1}, {3 * time.Hour, true, 1}} {
			fake.Advance(step.after - fake.Now().Sub(first))
			res := w.act(w.applier("rec_"+string(rune('1'+i)), compensate.Options{Grace: time.Hour}), []reconcile.Discrepancy{d})
			x := outcome(t, res, key)
			if got := x.Outcome == reconcile.OutcomeEscalated; got != step.escalated {
				t.Errorf("%s after the first run: %+v, want escalated %v", step.after, x, step.escalated)
			}
			if n := w.pages.triggers(); n != step.pages {
				t.Errorf("%s after the first run: %d pages, want %d", step.after, n, step.pages)
			}
		}
		if n := refundsOf(w.sb, key); n != 0 {
			t.Errorf("%d refunds made, want none", n)
		}
	})
}

// An effect deferred because the provider's lookups keep failing is paged
// once it has been deferred for longer than DeferredPageAfter, counted from
// the run that first deferred it, by the ledger's clock; once only.
func TestAnEffectDeferredTooLongIsPagedOnce(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newWorld(t, l)
		fake := clock.NewFake(time.Now())
		w.now = fake.Now
		w.effect("app:charge:0", 800, fake.Now().Add(-48*time.Hour), reconcile.StatusAttempted, "") // older than the key TTL
		w.sb.Inject(sandbox.Fault{Op: sandbox.OpSearch, Kind: sandbox.FaultUnavailable})
		record := w.l.Open(t, fake.Now)
		first := fake.Now()
		for i, step := range []struct {
			after time.Duration
			pages int
		}{{0, 0}, {71 * time.Hour, 0}, {73 * time.Hour, 1}, {80 * time.Hour, 1}} {
			fake.Advance(step.after - fake.Now().Sub(first))
			run := "rec_" + string(rune('1'+i))
			res := w.act(w.applier(run, compensate.Options{DeferredPageAfter: 72 * time.Hour}), []reconcile.Discrepancy{missing("app:charge:0", 800)})
			if res.Discrepancies[0].Class != reconcile.ClassDeferred {
				t.Fatalf("%s after the first run: %s, want deferred", step.after, res.Discrepancies[0].Class)
			}
			if _, err := record.RunStart(w.ctx, &ledgerdb.StartRunParams{ID: run, Args: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			if _, err := record.FindingRecord(w.ctx, &ledgerdb.FindingsParams{RunID: run, Discrepancies: res.Discrepancies}); err != nil {
				t.Fatal(err)
			}
			if n := w.pages.triggers(); n != step.pages {
				t.Errorf("%s after the first run: %d pages, want %d", step.after, n, step.pages)
			}
		}
	})
}
