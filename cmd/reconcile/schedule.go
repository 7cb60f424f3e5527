package main

import (
	"context"
	"errors"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/spf13/cobra"

	"reconcile/job"
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

// schedule runs f at every slot of sched until ctx is done.
func (a *app) schedule(ctx context.Context, sched cron.Schedule, spec string, f *runFlags, args []string) error {
	if err := f.act.checkDurations(); err != nil {
		return err // not once a night, in a log nobody reads
	}
	store, _, err := a.openLedger(ctx)
	if err != nil {
		return err
	}
	defer a.closeLedger(store)
	j := &job.Job{Store: store, Clock: a.clock, Owner: owner(), Log: a.log}
	j.Schedule(ctx, sched, spec, func(ctx context.Context, slot time.Time) {
		run := *f
		run.slot = slot.UTC().Format(time.RFC3339)
		var ee *exitError
		if err := a.run(ctx, &run, args); errors.As(err, &ee) && ee.code == exitPerson {
			a.log.Warn("scheduled run needs a person", "slot", run.slot, "err", err)
		} else if err != nil {
			a.log.Error("scheduled run failed", "slot", run.slot, "err", err)
		}
	})
	return nil
}
