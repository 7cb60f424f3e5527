package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/spf13/cobra"

	"reconcile"
	"reconcile/ledgerdb"
)

// cronParser reads standard five-field specs, an optional leading seconds
// field, descriptors such as @daily, and a CRON_TZ= prefix.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func (a *app) scheduleCommand() *cobra.Command {
	var (
		f    runFlags
		spec string
	)
	cmd := &cobra.Command{
		Use:   "schedule --cron SPEC [run flags] INPUT...",
		Short: "Run reconciliation on a cron schedule, once per slot across replicas",
		Long: `schedule runs ` + "`reconcile run`" + ` with the same flags at every time the cron spec names, until it is
stopped. Each slot runs once across replicas: the first scheduler to claim a slot in the ledger
runs it, the others skip it. A run still going when the next slot comes is not started twice: the
slot is skipped and logged. Runs take the ledger's run lease like ` + "`reconcile run`" + `, so an ad hoc run
and the schedule do not overlap either. For s3:// inputs only new objects are read: the ledger's
source manifest remembers what was ingested, by content hash and ETag.

SPEC is a standard five-field cron spec (minute hour day-of-month month day-of-week), optionally
with a leading seconds field, a descriptor (@daily, @hourly) and a CRON_TZ= prefix for its time
zone (default UTC). SIGTERM or SIGINT stops the schedule: the current run finishes or rolls back
its current step, the lease is released, and the command exits 0.

Example:
  reconcile schedule --cron "CRON_TZ=Europe/Amsterdam 30 4 * * *" --apply \
    --ledger postgres://reconcile@db/payments s3://finance-reports/stripe/`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if spec == "" {
				return usageError("--cron is required, e.g. --cron \"30 4 * * *\"")
			}
			if len(spec) < 8 || spec[:8] != "CRON_TZ=" {
				spec = "CRON_TZ=UTC " + spec
			}
			sched, err := cronParser.Parse(spec)
			if err != nil {
				return usageError("--cron %q: %v", spec, err)
			}
			return a.schedule(cmd.Context(), sched, spec, &f, args)
		},
	}
	f.add(cmd)
	a.addLedgerFlag(cmd)
	cmd.Flags().StringVar(&spec, "cron", "", "when to run: a cron spec such as \"30 4 * * *\" or \"CRON_TZ=America/New_York 0 6 * * MON-FRI\"")
	return cmd
}

// schedule runs f at every slot of sched until ctx is done. Runs are made
// one after the other, so a run that overruns the next slots makes them
// skipped, and says so.
func (a *app) schedule(ctx context.Context, sched cron.Schedule, spec string, f *runFlags, args []string) error {
	if err := f.act.checkDurations(); err != nil {
		return err // not once a night, in a log nobody reads
	}
	store, _, err := openLedger(ctx, a.ledgerURL, ledgerdb.Config{})
	if err != nil {
		return err
	}
	defer store.Close()
	next := sched.Next(time.Now())
	a.log.Info("schedule started", "cron", spec, "next", next.Format(time.RFC3339))
	for {
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			a.log.Info("schedule stopped")
			return nil
		case <-timer.C:
		}
		slot := next
		if taken, err := a.takeSlot(ctx, store, spec, slot); err != nil {
			a.log.Error("slot not claimed; skipped", "slot", slot.Format(time.RFC3339), "err", err)
		} else if taken {
			run := *f
			run.slot = slot.UTC().Format(time.RFC3339)
			var ee *exitError
			if err := a.run(ctx, &run, args); errors.As(err, &ee) && ee.code == exitPerson {
				a.log.Warn("scheduled run needs a person", "slot", run.slot, "err", err)
			} else if err != nil {
				a.log.Error("scheduled run failed", "slot", run.slot, "err", err)
			}
		}
		next = sched.Next(time.Now())
		if missed := countBetween(sched, slot, next); missed > 0 {
			a.log.Warn("the run overran the next slots: they were skipped", "skipped", missed, "next", next.Format(time.RFC3339))
		}
	}
}

// takeSlot claims one slot of the schedule for this process: exactly one
// replica gets each slot.
func (a *app) takeSlot(ctx context.Context, store ledgerdb.Store, spec string, slot time.Time) (bool, error) {
	key := fmt.Sprintf("schedule:%s@%s", spec, slot.UTC().Format(time.RFC3339))
	c, err := store.Claim(ctx, &ledgerdb.ClaimParams{Key: key, Owner: owner()})
	if err != nil || c.Outcome != reconcile.Claimed {
		if err == nil {
			a.log.Debug("slot taken by another scheduler", "slot", slot.Format(time.RFC3339), "holder", c.Claim.Owner)
		}
		return false, err
	}
	result, _ := json.Marshal(map[string]string{"slot": slot.UTC().Format(time.RFC3339)})
	_, err = store.Settle(ctx, &ledgerdb.SettleParams{Key: key, Fence: c.Claim.Fence, Owner: owner(), Success: true, Result: result})
	return err == nil, err
}

// countBetween counts the slots of sched strictly between from and to.
func countBetween(sched cron.Schedule, from, to time.Time) int {
	n := 0
	for t := sched.Next(from); t.Before(to) && n < 1000; t = sched.Next(t) {
		n++
	}
	return n
}
