package main

import (
	"github.com/spf13/cobra"

	"reconcile/job"
	"reconcile/ledgerdb"
)

func (a *app) workerCommand() *cobra.Command {
	var workers int
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Match the partitions of distributed runs (run --distribute) until stopped",
		Long: `worker takes the partitions that runs started with --distribute stage in a PostgreSQL ledger,
matches each and records its confirmations, --workers at a time, until it is stopped (SIGINT or
SIGTERM: it finishes the partitions it is matching first; the partition of a worker killed
outright is given to another after 15 minutes). Start as many as the ledger can feed, on any
machine: the run's result is the one a single process would give, each partition recorded once
however often it is worked. The run itself makes the actions, records the findings that are not
confirmations, pages and writes the result.

Example:
  reconcile worker --ledger postgres://reconcile@db/payments --workers 2`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if workers < 1 {
				return usageError("--workers %d: want 1 or more", workers)
			}
			ctx := cmd.Context()
			store, loc, err := a.openLedger(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			if _, ok := store.(ledgerdb.Distributor); !ok {
				return usageError("the ledger %s is not PostgreSQL; workers share a PostgreSQL ledger", where(loc))
			}
			a.log.Info("worker starting", "ledger", where(loc), "workers", workers)
			return (&job.Job{Store: store, Clock: a.clock, Owner: owner(), Log: a.log}).Work(ctx, workers)
		},
	}
	cmd.Flags().IntVar(&workers, "workers", 1, "how many partitions to match at once")
	a.addLedgerFlag(cmd)
	return cmd
}
