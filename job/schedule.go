package job

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
)

// Schedule says when runs are due: a parsed cron spec.
type Schedule interface {
	// Next returns the first slot after t.
	Next(t time.Time) time.Time
}

// Schedule calls run at every slot of sched, by the Job's clock, until ctx
// is done; spec names the schedule in the slots' claims. Each slot is run
// once across replicas: the first scheduler to claim it in the ledger runs
// it, the others skip it. Runs are made one after the other, so a run that
// overruns the next slots makes them skipped, and says so.
func (j *Job) Schedule(ctx context.Context, sched Schedule, spec string, run func(ctx context.Context, slot time.Time)) {
	next := sched.Next(j.now())
	j.log().Info("schedule started", "cron", spec, "next", next.Format(time.RFC3339))
	for {
		select {
		case <-ctx.Done():
			j.log().Info("schedule stopped")
			return
		case <-j.clock().After(next.Sub(j.now())):
		}
		slot := next
		if taken, err := j.takeSlot(ctx, spec, slot); err != nil {
			j.log().Error("slot not claimed; skipped", "slot", slot.Format(time.RFC3339), "err", err)
		} else if taken {
			run(ctx, slot)
		}
		next = sched.Next(j.now())
		if missed := countBetween(sched, slot, next); missed > 0 {
			j.log().Warn("the run overran the next slots: they were skipped", "skipped", missed, "next", next.Format(time.RFC3339))
		}
	}
}

// takeSlot claims one slot of the schedule for this process: exactly one
// replica gets each slot.
func (j *Job) takeSlot(ctx context.Context, spec string, slot time.Time) (bool, error) {
	key := fmt.Sprintf("schedule:%s@%s", spec, slot.UTC().Format(time.RFC3339))
	c, err := j.Store.ClaimAcquire(ctx, &ledgerdb.ClaimParams{Key: key, Owner: j.Owner})
	if err != nil || c.Outcome != reconcile.ClaimOutcomeClaimed {
		if err == nil {
			j.log().Debug("slot taken by another scheduler", "slot", slot.Format(time.RFC3339), "holder", c.Claim.Owner)
		}
		return false, err
	}
	result, _ := json.Marshal(map[string]string{"slot": slot.UTC().Format(time.RFC3339)})
	_, err = j.Store.ClaimSettle(ctx, &ledgerdb.SettleParams{Key: key, Fence: c.Claim.Fence, Owner: j.Owner, Success: true, Result: result})
	return err == nil, err
}

// countBetween counts the slots of sched strictly between from and to.
func countBetween(sched Schedule, from, to time.Time) int {
	n := 0
	for t := sched.Next(from); t.Before(to) && n < 1000; t = sched.Next(t) {
		n++
	}
	return n
}
