package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"reconcile"
	"reconcile/compensate"
	"reconcile/ingest"
	"reconcile/ledgerdb"
	"reconcile/matcher"
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
	findingsExit int
}

func (f *runFlags) add(cmd *cobra.Command) {
	f.in.add(cmd)
	f.act.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.asOf, "as-of", "", "pin the end of the evidence's coverage (RFC 3339 time or YYYY-MM-DD, UTC) instead of taking it from the evidence")
	fl.DurationVar(&f.lag, "lag", 24*time.Hour, "settlement lag: effects newer than the end of coverage minus this, with no evidence, are pending")
	fl.BoolVar(&f.apply, "apply", false, "make the planned refunds and redeliveries, and page; without it nothing outside the ledger changes")
	fl.BoolVar(&f.runLease, "run-lease", true, "take the ledger's run lease, so that overlapping runs (cron and an ad hoc run, two replicas) skip instead of running at once; actions are claimed one by one either way")
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

func (a *app) run(ctx context.Context, f *runFlags, args []string) error {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(runMemoryLimit)
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
	if f.lag < 0 {
		return usageError("--lag %s: want a duration of zero or more, such as 24h", f.lag)
	}
	opt, err := f.in.options()
	if err != nil {
		return err
	}
	srcs, err := f.in.sources(ctx, args, os.Stdin, a.log)
	if err != nil {
		return inputFailure(err)
	}
	if err := f.out.checkOverwrite(srcs); err != nil {
		return err
	}
	srcs, cleanup, err := spoolStdin(ctx, srcs)
	if err != nil {
		return err
	}
	defer cleanup()
	store, loc, err := openLedger(ctx, a.ledgerURL, ledgerdb.Config{})
	if err != nil {
		return err
	}
	defer store.Close()
	runID := newRunID(time.Now())
	defer func(log *slog.Logger) { a.log = log }(a.log)
	a.log = a.log.With("run_id", runID) // on every record of the run
	a.log.Info("run starting", "ledger", where(loc), "inputs", len(srcs), "apply", f.apply)
	ap, err := a.applier(&f.act, store, runID, f.apply)
	if err != nil {
		return err
	}
	raiser, err := a.raiser(f, store, ap.Owner)
	if err != nil {
		return err
	}
	ap.Escalator = raiser
	pageFrom, err := amounts("--page-unexpected", f.act.pageUnexpected)
	if err != nil {
		return err
	}
	if f.runLease {
		lease, holder, err := takeRunLease(ctx, store, ap.Owner, f.act.lease, a.log)
		if err != nil {
			return err
		}
		if lease == nil { // another run holds it: this one is skipped, and says so
			return a.skipped(&f.out, runID, holder)
		}
		defer lease.release()
		ctx = lease.ctx
	}

	in, err := a.ingestAll(ctx, store, srcs, opt)
	if err != nil {
		return inputFailure(err)
	}

	argsJSON, _ := json.Marshal(map[string]any{"inputs": args, "as_of": f.asOf, "lag": f.lag.String(), "apply": f.apply, "slot": f.slot})
	if _, err := store.StartRun(ctx, &ledgerdb.StartRunParams{ID: runID, Args: argsJSON}); err != nil {
		return err
	}
	res, err := a.reconcile(ctx, store, runID, in, asOf, f.lag, ap, pageFrom)
	if err != nil { // a failed run still reports its metrics and failed pages, without a success
		res = &report.Result{RunID: runID, StartedAt: time.Now().UTC()}
	}
	var pageErr error
	if f.apply { // the actions are made and the findings recorded: now the pages, even when the run failed
		pageErr = a.pageOpen(ctx, raiser, res, pagerSecrets(&f.act))
		if err == nil {
			res.FinishedAt = time.Now().UTC()
		}
	}
	status := reconcile.RunSucceeded
	var resJSON []byte
	if err != nil {
		status = reconcile.RunFailed
	} else {
		// What the matching and the actions left is given back before the
		// result, which for a large run is the largest thing it holds.
		debug.FreeOSMemory()
		var buf bytes.Buffer
		buf.Grow(512 * len(res.Discrepancies)) // about what each takes: grown once, not doubled
		if err = report.WriteJSON(&buf, res, false); err != nil {
			status = reconcile.RunFailed
		}
		resJSON = buf.Bytes()
	}
	t := time.Now()
	if _, ferr := store.FinishRun(context.WithoutCancel(ctx), &ledgerdb.FinishRunParams{ID: runID, Status: status, Result: resJSON}); ferr != nil && err == nil {
		err = ferr
	}
	a.log.Debug("phase done", "phase", "finish", "elapsed", time.Since(t).Round(time.Millisecond), "result_mb", len(resJSON)>>20)
	resJSON = nil
	if err != nil {
		if merr := a.writeMetrics(context.WithoutCancel(ctx), &f.out, res); merr != nil {
			a.log.Error("metrics not written", "err", merr)
		}
		return errors.Join(err, pageErr)
	}
	if err := a.writeOutputs(ctx, store, &f.out, res); err != nil {
		return err
	}
	if f.out.jsonPath != "-" {
		report.Summary(a.stdout, res)
	}
	code := exitOK
	switch {
	case pageErr != nil:
		code = exitFailure
	case res.NeedsPerson():
		code = f.findingsExit
	}
	a.log.Info("run finished", "counts", res.Counts, "money_at_risk", res.AtRisk, "money_repaired", res.Repaired,
		"needs_person", res.NeedsPerson(), "exit", code)
	if pageErr != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("run %s: %w", runID, pageErr)}
	}
	if res.NeedsPerson() {
		err := fmt.Errorf("run %s: %d mismatched, %d escalated, %d unexpected: a person should look",
			runID, res.Counts[string(reconcile.Mismatched)], res.Counts[string(reconcile.Escalated)], res.Counts[string(reconcile.Unexpected)])
		if code == exitOK {
			a.log.Warn(err.Error()) // said, not failed: --findings-exit-code 0
			return nil
		}
		return &exitError{code: code, err: err}
	}
	return nil
}

// ingested is what a run's inputs gave: the report's part of them, and
// their sources in the ledger.
type ingested struct {
	inputs    []report.Input
	rejected  []report.Rejected // listed
	unlisted  int               // rejected rows beyond those listed
	sourceIDs []int64
}

// ingestAll writes the run's new inputs into the ledger. An input that
// cannot be read at all stops the run before it changes anything: every
// new input but the largest is read once, writing nothing, before any is
// written; the largest is then written first, in a transaction of its own
// that its failure rolls back, so that it is parsed only once (a local
// file is hashed first, to find it in the manifest).
func (a *app) ingestAll(ctx context.Context, store ledgerdb.Store, srcs []ingest.Source, opt *ingest.Options) (*ingested, error) {
	defer func(t time.Time) {
		a.log.Debug("phase done", "phase", "ingest", "elapsed", time.Since(t).Round(time.Millisecond))
	}(time.Now())
	hashes := make([]string, len(srcs))
	fresh := make([]bool, len(srcs))
	first := -1 // the largest new input
	for i, src := range srcs {
		hash, found, err := lookupSource(ctx, store, src)
		if err != nil {
			return nil, err
		}
		hashes[i], fresh[i] = hash, !found
		if !found && (first < 0 || src.Size > srcs[first].Size) {
			first = i
		}
	}
	order := make([]int, 0, len(srcs))
	if first >= 0 {
		order = append(order, first)
	}
	for i := range srcs {
		if i == first {
			continue
		}
		order = append(order, i)
		if !fresh[i] {
			continue
		}
		stop := a.ingestProgress("checking", srcs[i], opt)
		in, err := ingest.Read(ctx, srcs[i], opt, discard{})
		stop()
		if err != nil {
			return nil, err
		}
		hashes[i] = in.Hash
	}
	out := &ingested{inputs: make([]report.Input, len(srcs)), sourceIDs: make([]int64, len(srcs))}
	var rejected rejectedList
	for _, i := range order {
		src, c := srcs[i], rejected.collect(i)
		stop := a.ingestProgress("ingesting", src, opt)
		in, id, err := persist(ctx, store, src, hashes[i], opt, c)
		stop()
		if err != nil {
			return nil, err
		}
		if in.AlreadyIngested { // report its rejected rows as the first run did
			rej, err := store.RejectedRows(ctx, id, maxListedRejected+1) // no more than the result lists
			if err != nil {
				return nil, err
			}
			for _, r := range rej {
				c.Reject(&r)
			}
			c.list.unlisted[c.i] += max(in.Rejected-len(rej), 0) // the rows not read back
		}
		out.sourceIDs[i] = id
		out.inputs[i] = report.Input{URI: in.URI, Format: in.Format, Rows: in.Rows, Evidence: in.Evidence,
			Rejected: in.Rejected, Ignored: in.Ignored, AlreadyIngested: in.AlreadyIngested}
		for _, t := range in.Totals {
			out.inputs[i].Totals = append(out.inputs[i].Totals, report.Volume{Provider: t.Provider, Currency: t.Currency, Kind: t.Kind,
				Count: t.Count, AmountMinor: t.AmountMinor, FeeMinor: t.FeeMinor})
		}
	}
	out.rejected, out.unlisted = rejected.listed()
	return out, nil
}

// reconcile matches and records one run over what its inputs gave.
func (a *app) reconcile(ctx context.Context, store ledgerdb.Store, runID string, in *ingested,
	asOf time.Time, lag time.Duration, ap *compensate.Applier, pageFrom map[string]int64) (*report.Result, error) {
	res := &report.Result{RunID: runID, Applied: ap.Apply, StartedAt: time.Now().UTC(), Counts: map[string]int{}, Inputs: in.inputs, Discrepancies: []report.Discrepancy{}, Rejected: in.rejected,
		RejectedUnlisted: in.unlisted, Orphans: []report.Orphan{}}
	sourceIDs := in.sourceIDs
	start := time.Now()
	phase := func(name string) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		a.log.Debug("phase done", "phase", name, "elapsed", time.Since(start).Round(time.Millisecond), "heap_mb", ms.HeapAlloc>>20, "heap_sys_mb", ms.HeapSys>>20)
		start = time.Now()
	}
	cover, err := store.Coverage(ctx, sourceIDs)
	if err != nil {
		return nil, err
	}
	ends := make(map[matcher.Coverage]time.Time, len(cover))
	now := time.Now().UTC()
	for _, c := range cover {
		// Evidence may run a few minutes ahead of this clock (a provider's
		// clock skew), never the end of coverage: no report covers the future.
		ends[matcher.Coverage{Provider: c.Provider, Kind: c.Kind}] = minTime(c.End, now)
	}
	scope, cutoff := matcher.Window(ends, asOf, lag)
	res.AsOf = coverageEnd(asOf, cutoff, lag)
	m := &partitionMatch{in: matcher.Input{Cutoff: cutoff, Scope: scope, EscalateUnexpected: pageFrom}, created: map[string]time.Time{},
		since: map[string]time.Time{}, log: a.log,
		linked: func() { phase("link") }}
	stopMatch := a.showProgress(func() string { return fmt.Sprintf("matching: partition %d of %d", m.done.Load(), m.count.Load()) })
	// Inputs read again are earlier evidence: what they hold was seen,
	// reported and perhaps resolved by a person already.
	var fresh []int64
	for i, id := range sourceIDs {
		if !in.inputs[i].AlreadyIngested {
			fresh = append(fresh, id)
		}
	}
	sum, err := store.MatchPartitions(ctx, &ledgerdb.MatchParams{RunID: runID, Sources: fresh, Kinds: matcher.StepKinds(),
		WebhookFormats: ingest.WebhookFormats()}, m.match)
	stopMatch()
	if err != nil {
		return nil, err
	}
	kept := m.sorted()
	a.log.Debug("partitions matched", "partitions", sum.Partitions, "effects", sum.Effects, "records", sum.Records,
		"matching", m.matching.Round(time.Millisecond), "reading_and_recording", (time.Since(start) - m.matching).Round(time.Millisecond))
	phase("partitions")
	var done, total atomic.Int64
	ap.Progress = func(d, t int) { done.Store(int64(d)); total.Store(int64(t)) }
	stop := a.showProgress(func() string { return fmt.Sprintf("applying: %d of %d actions", done.Load(), total.Load()) })
	acted, err := ap.Act(ctx, kept)
	stop()
	if err != nil {
		return nil, err
	}
	phase("act")
	crashHook()("run:acted") // everything is made; of this run only the confirmations are recorded yet
	if _, err := store.RecordFindings(ctx, &ledgerdb.FindingsParams{RunID: runID, Discrepancies: acted.Discrepancies}); err != nil {
		return nil, err
	}
	phase("record")
	for _, o := range acted.Orphans {
		res.Orphans = append(res.Orphans, report.Orphan{Key: o.Key, StaleOwner: o.StaleOwner, StaleFence: o.StaleFence, StaleResult: string(o.StaleResult),
			CurrentOwner: o.CurrentOwner, CurrentFence: o.CurrentFence, CurrentState: string(o.CurrentState)})
	}
	for _, c := range reconcile.Classes {
		res.Counts[string(c)] = 0
	}
	res.Counts[string(reconcile.Confirmed)] = m.confirmed
	res.Discrepancies = make([]report.Discrepancy, 0, len(acted.Discrepancies))
	for i := range acted.Discrepancies {
		d := &acted.Discrepancies[i]
		res.Counts[string(d.Class)]++
		if d.Class == reconcile.Confirmed {
			continue
		}
		out := report.Discrepancy{Class: d.Class, EffectKey: d.EffectKey, Provider: d.Provider, Currency: d.Currency,
			ExpectedMinor: d.ExpectedMinor, ObservedMinor: d.ObservedMinor, Transactions: []string{}, Actions: []report.Action{}, Reason: d.Reason,
			Time: m.created[d.EffectKey], FirstFound: res.StartedAt}
		if since, ok := m.since[d.EffectKey]; ok {
			out.FirstFound = since
		}
		if d.EffectKey == "" && len(d.Transactions) > 0 {
			out.Time = d.Transactions[0].Time
		}
		for _, t := range d.Transactions {
			out.Transactions = append(out.Transactions, t.ID)
		}
		if d.Class == reconcile.Mismatched && len(d.Transactions) == 1 && !strings.EqualFold(d.Transactions[0].Amount.Currency, d.Currency) {
			out.ObservedCurrency = strings.ToUpper(d.Transactions[0].Amount.Currency)
		}
		for _, t := range d.Related {
			out.Related = append(out.Related, t.ID)
		}
		for _, x := range d.Actions {
			out.Actions = append(out.Actions, report.Action{Kind: x.Kind, Key: x.Key, Target: x.Target, Outcome: x.Outcome,
				AmountMinor: x.Amount.Minor, Currency: x.Amount.Currency, Made: x.Made, Note: x.Note})
		}
		res.Discrepancies = append(res.Discrepancies, out)
		*d = reconcile.Discrepancy{} // what the result keeps of it is out; the rest can go
	}
	acted, m.created, m.since = nil, nil, nil
	res.OutOfScope = m.outOfScope
	res.AtRisk, res.Repaired, res.Confirmed = res.MoneyAtRisk(), res.MoneyRepaired(), m.volumes()
	if res.Resolved, err = moneyResolved(ctx, store, runID); err != nil {
		return nil, err
	}
	res.FinishedAt = time.Now().UTC()
	a.log.Debug("run recorded", "run", runID, "inputs", len(res.Inputs), "records", sum.Records, "effects", sum.Effects,
		"partitions", sum.Partitions, "confirmed_now", sum.Confirmed)
	return res, nil
}

// ingestProgress shows the bytes and rows read of one input on a terminal.
func (a *app) ingestProgress(verb string, src ingest.Source, opt *ingest.Options) (stop func()) {
	p := &ingest.Progress{}
	opt.Progress = p
	start := time.Now()
	return a.showProgress(func() string {
		return progressLine(verb, src.URI, p.Bytes.Load(), src.Size, p.Rows.Load(), time.Since(start))
	})
}

// progressLine says how far a read is: of how much, in percent, and how
// fast, when the size is known.
func progressLine(verb, uri string, done, total, rows int64, elapsed time.Duration) string {
	line := fmt.Sprintf("%s %s: %s", verb, uri, size(done))
	if total > 0 {
		line += fmt.Sprintf(" of %s (%d%%)", size(total), min(100, done*100/total))
	}
	line += fmt.Sprintf(", %d rows", rows)
	if s := elapsed.Seconds(); s >= 1 {
		line += fmt.Sprintf(", %s/s", size(int64(float64(done)/s)))
	}
	return line
}

// lookupSource says whether a source's content is in the ledger already,
// and gives its hash when it is known without reading it through.
func lookupSource(ctx context.Context, store ledgerdb.Store, src ingest.Source) (hash string, found bool, err error) {
	if src.Local() {
		if hash, err = src.Hash(ctx); err != nil {
			return "", false, err
		}
	}
	if _, err := store.FindSource(ctx, hash, src.ETag); err == nil {
		return hash, true, nil
	} else if !errors.Is(err, reconcile.ErrNotFound) {
		return "", false, err
	}
	return hash, false, nil
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

// coverageEnd is the as-of of the result: --as-of when given, else the
// latest end of coverage over the providers.
func coverageEnd(asOf time.Time, cutoff map[string]time.Time, lag time.Duration) string {
	if !asOf.IsZero() {
		return asOf.Format(time.RFC3339)
	}
	var end time.Time
	for _, c := range cutoff {
		if c.Add(lag).After(end) {
			end = c.Add(lag)
		}
	}
	if end.IsZero() {
		return ""
	}
	return end.Format(time.RFC3339)
}

func minTime(a, b time.Time) time.Time {
	if a.After(b) {
		return b
	}
	return a
}

func newRunID(now time.Time) string {
	b := make([]byte, 3)
	rand.Read(b)
	return "rec_" + now.UTC().Format("20060102T150405Z") + "_" + hex.EncodeToString(b)
}

// moneyResolved is what the findings a person resolved since the last run
// had at risk, per currency: the third part of the exposure, beside what
// is open and what this run repaired.
func moneyResolved(ctx context.Context, store ledgerdb.Store, runID string) (map[string]int64, error) {
	runs, err := store.Runs(ctx, &ledgerdb.RunsParams{Limit: 2})
	if err != nil {
		return nil, err
	}
	var since time.Time // the start of the run before this one
	for _, r := range runs {
		if r.ID != runID {
			since = r.StartedAt
			break
		}
	}
	es, err := store.Escalations(ctx, &ledgerdb.EscalationsParams{})
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	done := map[string]bool{}
	for _, e := range es {
		if e.Status != reconcile.EscalationResolved || !e.ResolvedAt.After(since) || done[e.Subject] {
			continue
		}
		done[e.Subject] = true
		fs, err := store.EffectFindings(ctx, e.Subject)
		if err != nil || len(fs) == 0 {
			continue // unexpected money names no effect: its amount is in its own finding only
		}
		d := findingOut(&fs[len(fs)-1])
		out[d.Currency], _ = reconcile.AddMinor(out[d.Currency], d.AtRisk())
	}
	return out, nil
}
