package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"reconcile"
	"reconcile/ingest"
	"reconcile/job"
	"reconcile/ledgerdb"
	"reconcile/report"
)

// runFlags are the flags of `reconcile run` and `reconcile schedule`.
type runFlags struct {
	in       inputFlags
	act      actionFlags
	asOf     string
	lag      time.Duration
	apply    bool
	out      outputFlags
	page     pageFlags
	runLease bool
	slot     string // the schedule's slot, when a schedule started the run
	// findingsExit is the exit status of a run that reconciled and found
	// something for a person (3); 0 keeps a scheduler that takes any other
	// status for a failure (a Kubernetes Job) from failing every night.
	findingsExit  int
	distribute    bool
	workers       int
	partitionSize int
}

func (f *runFlags) add(cmd *cobra.Command) {
	f.in.add(cmd)
	f.act.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.asOf, "as-of", "", "pin the end of the evidence's coverage (RFC 3339 time or YYYY-MM-DD, UTC) instead of taking it from the evidence")
	fl.DurationVar(&f.lag, "lag", 24*time.Hour, "settlement lag: effects newer than the end of coverage minus this, with no evidence, are pending")
	fl.BoolVar(&f.apply, "apply", false, "make the planned refunds and redeliveries, and page; without it nothing outside the ledger changes")
	fl.BoolVar(&f.runLease, "run-lease", true, "take the ledger's run lease, so that overlapping runs (cron and an ad hoc run, two replicas) skip instead of running at once; actions are claimed one by one either way")
	fl.BoolVar(&f.distribute, "distribute", false, "PostgreSQL: stage the run's partitions in the ledger and have them matched by worker processes (reconcile worker, on any machine), with the same result as one process")
	fl.IntVar(&f.workers, "workers", 1, "with --distribute: how many partitions this process matches at once (0: it only waits for the workers)")
	fl.IntVar(&f.partitionSize, "partition-size", ledgerdb.DefaultPartitionSize, "about how many effects one partition of the matching holds: the memory a partition takes, and with --distribute the unit of work handed to a worker")
	f.out.add(cmd)
	f.page.add(cmd)
	fl.IntVar(&f.findingsExit, "findings-exit-code", envInt("RECONCILE_FINDINGS_EXIT_CODE", exitPerson),
		"exit status of a run that found something for a person (env RECONCILE_FINDINGS_EXIT_CODE); 0 for a scheduler that calls any other a failure: "+
			"the findings are still recorded, paged and in the JSON result and metrics")
}

// envInt reads an integer from the environment, def when unset or not one.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func (a *app) runCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] INPUT...",
		Short: "Reconcile the ledger against provider files: classify every effect and plan the repairs",
		Long: `run reads the inputs into the ledger as evidence (content already ingested is not read
again), classifies every effect in scope (confirmed, duplicated, missing, pending, mismatched)
and every provider transaction no effect links to (unexpected), records the findings in the
ledger, and prints a summary. Without --apply it changes nothing outside the ledger: it prints
the plan, the refunds and redeliveries it would make.

With --apply it makes them, each exactly once however often it is attempted: every action is
claimed in the ledger with a fence token before it is made, sent under its own idempotency key
(a refund under <effect key>:compensate:<charge id>, a redelivery under the original key with
exactly the recorded request), and settled with the token. A call that times out is in doubt,
never failed: the next run looks it up before acting again. What the job must not decide alone
(a compensation in doubt past --grace, a mismatched effect, a refused key, unexpected money from
--page-unexpected, a plan above --max-actions or --max-refund) is recorded as an escalation and
paged once. See ` + "`reconcile escalations`" + `, ` + "`reconcile show`" + ` and ` + "`reconcile resolve`" + `.

Pages are sent once the actions are made: a pager that is slow or down never holds up a refund.
A page the pager does not take (429, 5xx, a timeout) is tried again, 3 times over at most 30
seconds; one still not taken, or refused (400: a wrong routing key), is listed in the JSON
result's pages_failed and by ` + "`reconcile escalations`" + `, makes the run exit 1, and is sent again by
the next run with --apply. A page is critical when the money at risk of its finding is at least
--page-critical for its currency, else error.

A run that finds the ledger's run lease held by another run does nothing, says so, and exits 0;
its --json FILE gets a result with "skipped": true, the lease's holder and until when.

With --distribute (a PostgreSQL ledger) the run stages its partitions in the ledger and has them
matched and recorded by ` + "`reconcile worker`" + ` processes on any machine, --workers of them by
itself; it makes the actions, records the findings and writes the result alone, the same result
as one process gives.

An effect is in scope when it is not yet finally reconciled, or when this run's evidence links to
it. The cutoff is the end of each provider's evidence (or --as-of) minus --lag: an effect newer
than the cutoff with no evidence is pending, not missing.

Exit status: 0 reconciled and nothing needs a person (or skipped); 3 reconciled and something
needs a person (a mismatched or escalated effect, unexpected money, a refused action); 2 usage
error or an unreadable input (nothing changed); 1 any other failure, including a page that could
not be delivered.

Environment:
  RECONCILE_LEDGER             ledger URL when --ledger is not given
  RECONCILE_STRIPE_URL         --provider-url;  STRIPE_API_KEY  the provider's API key (never printed)
  RECONCILE_PAGER_URL          --pager-url;     RECONCILE_PAGER_ROUTING_KEY  PagerDuty routing key
  RECONCILE_PAGER_WEBHOOK      --pager-webhook
  RECONCILE_CLIENT_URL         --client-url: the runbook or dashboard a PagerDuty incident links to
  RECONCILE_S3_PATH_STYLE      --s3-path-style; AWS_* and AWS_ENDPOINT_URL_S3 for S3 inputs

Examples:
  reconcile run settlements/2026-11-28.itemized.csv
  reconcile run --ledger postgres://reconcile@db/payments --json result.json s3://finance/stripe/2026/11/
  STRIPE_API_KEY=rk_live_... reconcile run --apply --max-refund EUR=5000.00 --pager-url https://events.pagerduty.com/v2/enqueue settlements/`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error { return a.run(cmd.Context(), &f, args) },
	}
	f.add(cmd)
	a.addLedgerFlag(cmd)
	return cmd
}

// runMemoryLimit is the soft limit of a run's heap, unless GOMEMLIMIT sets
// one. A run holds one partition at a time and the findings that are not
// confirmed (a few percent of the effects); the limit makes the collector
// give back what each partition left before the next one grows the heap,
// rather than let the heap reach twice what is live.
const runMemoryLimit = 768 << 20

// runGCPercent is how far a run's heap grows past what is live before the
// collector runs, unless GOGC sets it: the limit above bounds the heap, so
// that the collector need not run each time a small live heap doubles (1M
// effects: 15.4 to 16.2 s against 16.3 to 17.4 s, its peak 760 to 790 MB
// against 410 to 500 MB).
const runGCPercent = 400

// cpuProfileEnv names the file a run writes its CPU profile to, when set:
// how bench --cpuprofile profiles the run's own process.
const cpuProfileEnv = "RECONCILE_CPUPROFILE"

// startCPUProfile profiles this process's CPU into path until stop.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func (a *app) run(ctx context.Context, f *runFlags, args []string) error {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(runMemoryLimit)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(runGCPercent)
	}
	if path := os.Getenv(cpuProfileEnv); path != "" {
		stop, err := startCPUProfile(path)
		if err != nil {
			return err
		}
		defer stop()
	}
	asOf, err := parseAsOf(f.asOf)
	if err != nil {
		return err
	}
	if err := f.act.checkDurations(); err != nil {
		return err
	}
	if f.findingsExit != exitPerson && f.findingsExit != exitOK {
		return usageError("--findings-exit-code %d: want 3 (the default) or 0; 1 and 2 mean a failure and a usage error", f.findingsExit)
	}
	if f.workers < 0 {
		return usageError("--workers %d: want 0 or more", f.workers)
	}
	if f.partitionSize < 0 {
		return usageError("--partition-size %d: want 1 or more effects (0: the default)", f.partitionSize)
	}
	if f.lag < 0 {
		return usageError("--lag %s: want a duration of zero or more, such as 24h", f.lag)
	}
	opt, err := f.in.options()
	if err != nil {
		return err
	}
	p := &job.RunParams{Options: opt, AsOf: asOf, Lag: f.lag, Apply: f.apply, RunLease: f.runLease, PageRetry: pageRetry,
		PagerSecrets: pagerSecrets(&f.act), Distribute: f.distribute, Workers: f.workers,
		PartitionSize: f.partitionSize}
	if p.Actions, err = f.act.options(f.apply); err != nil {
		return err
	}
	if p.PageUnexpected, err = amounts("--page-unexpected", f.act.pageUnexpected); err != nil {
		return err
	}
	if p.PageCritical, err = amounts("--page-critical", f.page.critical); err != nil {
		return err
	}
	providers, err := f.act.providers(f.apply)
	if err != nil {
		return err
	}
	if p.Sources, err = f.in.sources(ctx, args, os.Stdin, a.log); err != nil {
		return inputFailure(err)
	}
	if err := f.out.checkOverwrite(p.Sources); err != nil {
		return err
	}
	var cleanup func()
	if p.Sources, cleanup, err = spoolStdin(ctx, p.Sources); err != nil {
		return err
	}
	defer cleanup()
	store, loc, err := a.openLedger(ctx)
	if err != nil {
		return err
	}
	defer a.closeLedger(store)
	if _, ok := store.(ledgerdb.Distributor); f.distribute && !ok {
		return usageError("--distribute: the ledger %s is not PostgreSQL; workers share a PostgreSQL ledger", where(loc))
	}
	p.ID = job.NewRunID(a.clock.Now())
	p.Args, _ = json.Marshal(map[string]any{"inputs": args, "as_of": f.asOf, "lag": f.lag.String(), "apply": f.apply, "slot": f.slot})
	j := &job.Job{Store: store, Clock: a.clock, Providers: providers, Pager: a.pager(&f.act, f.page.clientURL), Owner: owner(),
		Log: a.log, Progress: a.showProgress} // the job adds the run's id to its records
	defer func(log *slog.Logger) { a.log = log }(a.log)
	a.log = a.log.With("run_id", p.ID) // on every record of the run
	a.log.Info("run starting", "ledger", where(loc), "inputs", len(p.Sources), "apply", f.apply)
	var result *written // the --json file, written while the ledger records the run's end
	if path := f.out.jsonPath; path != "" && path != "-" {
		p.Beside = func(res *report.Result) (err error) {
			if result, err = writeBeside(path, func(w io.Writer) error { return report.WriteJSON(w, res, true) }); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
			return nil
		}
	}
	out, err := j.Run(ctx, p)
	if out.Skipped {
		return a.skipped(&f.out, p.ID, out.Holder)
	}
	if err != nil {
		if result != nil {
			result.discard()
		}
		if out.Result != nil {
			if merr := a.writeMetrics(context.WithoutCancel(ctx), &f.out, out.Result); merr != nil {
				a.log.Error("metrics not written", "err", merr)
			}
		}
		if out.PageErr == nil {
			return inputFailure(err)
		}
		return errors.Join(err, out.PageErr)
	}
	res := out.Result
	if err := a.writeOutputs(ctx, store, &f.out, res, result); err != nil {
		return err
	}
	if f.out.jsonPath != "-" {
		report.Summary(a.stdout, res)
	}
	code := exitOK
	switch {
	case out.PageErr != nil:
		code = exitFailure
	case res.NeedsPerson():
		code = f.findingsExit
	}
	a.log.Info("run finished", "counts", res.Counts, "money_at_risk", res.AtRisk, "money_repaired", res.Repaired,
		"needs_person", res.NeedsPerson(), "exit", code)
	if out.PageErr != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("run %s: %w", p.ID, out.PageErr)}
	}
	if res.NeedsPerson() {
		err := fmt.Errorf("run %s: %d mismatched, %d escalated, %d unexpected: a person should look",
			p.ID, res.Counts[string(reconcile.ClassMismatched)], res.Counts[string(reconcile.ClassEscalated)], res.Counts[string(reconcile.ClassUnexpected)])
		if code == exitOK {
			a.log.Warn(err.Error()) // said, not failed: --findings-exit-code 0
			return nil
		}
		return &exitError{code: code, err: err}
	}
	return nil
}

// skipped ends a run that another run's lease keeps out of the ledger
// (the job has logged it). When the run was asked for --json FILE, it
// writes there a result that says so (no findings, "skipped": true, who
// holds the lease and until when), so that an older result in FILE is not
// taken for this run's. Standard output stays empty, as scripts that read
// `--json -` expect of a skipped run. Nothing else is written: the run
// that holds the lease writes its own spreadsheet and metrics.
func (a *app) skipped(f *outputFlags, runID string, holder *reconcile.Claim) error {
	if f.jsonPath == "" || f.jsonPath == "-" {
		return nil
	}
	now := a.clock.Now().UTC()
	res := &report.Result{RunID: runID, Counts: map[string]int{}, Inputs: []report.Input{}, Discrepancies: []report.Discrepancy{},
		Rejected: []report.Rejected{}, Orphans: []report.Orphan{}, AtRisk: map[string]int64{}, Repaired: map[string]int64{},
		StartedAt: now, FinishedAt: now, Skipped: true, LeaseHolder: holder.Owner, LeaseUntil: holder.LeaseUntil}
	for _, c := range reconcile.Classes {
		res.Counts[string(c)] = 0
	}
	return a.writeResult(f.jsonPath, res)
}

// spoolStdin copies standard input to a temporary file, so that it can be
// read twice like any other input; a cancelled run stops waiting for it.
func spoolStdin(ctx context.Context, srcs []ingest.Source) ([]ingest.Source, func(), error) {
	cleanup := func() {}
	for i, s := range srcs {
		if s.URI != "-" {
			continue
		}
		f, err := os.CreateTemp("", "reconcile-stdin-*")
		if err != nil {
			return nil, cleanup, err
		}
		cleanup = func() { os.Remove(f.Name()) }
		in, err := s.Open(ctx)
		if err != nil {
			f.Close()
			return nil, cleanup, err
		}
		_, err = io.Copy(f, in)
		in.Close()
		if err != nil {
			f.Close()
			return nil, cleanup, fmt.Errorf("read standard input: %w", err)
		}
		f.Close()
		spooled, err := ingest.Expand(context.Background(), []string{f.Name()}, nil, nil)
		if err != nil {
			return nil, cleanup, err
		}
		srcs[i] = spooled[0]
	}
	return srcs, cleanup, nil
}

func parseAsOf(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, usageError("--as-of %q: want an RFC 3339 time (2026-11-28T00:00:00Z) or a date (2026-11-28)", s)
}
