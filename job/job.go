// Package job is the reconciliation run as a library: it ingests and
// persists the run's inputs, has the ledger scope and link them, matches
// partition by partition, makes the actions, records the findings, pages,
// and holds the ledger's run lease meanwhile; it also holds the schedule
// loop that starts runs, what `reconcile show` tells of one effect, and,
// on a PostgreSQL ledger, the matching of a run's partitions by worker
// processes (distribute.go).
//
// A Job takes its clock, ledger, provider and pager from its caller, so
// that tests move a fake clock instead of sleeping. cmd/reconcile keeps
// the flags, the output and the exit statuses.
package job

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"reconcile"
	"reconcile/clock"
	"reconcile/compensate"
	"reconcile/escalate"
	"reconcile/ingest"
	"reconcile/ledgerdb"
	"reconcile/report"
)

// Job is what a run works with.
type Job struct {
	Store ledgerdb.Store
	// Clock is the run's time: run ids, leases, cutoffs, grace periods.
	// The ledger must be opened on the same clock. Default clock.System.
	Clock clock.Clock
	// Providers make the actions, by provider name ("stripe"); an action at
	// a provider not listed is handed to a person. They may be missing when
	// the run does not apply.
	Providers map[string]compensate.Provider
	// Pager takes the run's pages; default one that discards them.
	Pager escalate.Pager
	// Owner names this process in claims (host:pid); the run adds its id.
	Owner string
	Log   *slog.Logger // default: discard
	// Progress, when set, shows how far a step is while it works: line
	// says it; the function returned ends the display.
	Progress func(line func() string) (stop func())
}

// RunParams are one run's inputs and limits.
type RunParams struct {
	// ID is the run's id; NewRunID makes one when it is empty.
	ID      string
	Sources []ingest.Source
	Options *ingest.Options
	// Args are recorded with the run, for people reading the runs table.
	Args json.RawMessage
	// AsOf pins the end of the evidence's coverage; zero takes it from the
	// evidence. Lag is the settlement lag.
	AsOf time.Time
	Lag  time.Duration
	// Apply makes the actions and sends the pages.
	Apply bool
	// RunLease takes the ledger's run lease for the run (for
	// Actions.Lease), so that runs do not overlap.
	RunLease bool
	// Actions are the actions' limits: lease, key lifetime, grace,
	// deferral, blast radius. The run sets its id, owner, Apply and log.
	Actions compensate.Options
	// PageUnexpected is, per currency, the unexpected money from which a
	// person is paged; PageCritical the money at risk from which a page is
	// critical.
	PageUnexpected, PageCritical map[string]int64
	// PageRetry is how a page the pager did not take is tried again.
	PageRetry escalate.Retry
	// PagerSecrets are removed from a pager's errors before they are shown.
	PagerSecrets []string
	// Distribute has the partitions matched and recorded by worker
	// processes (Job.Work) on a PostgreSQL ledger, Workers of them at once
	// in this process (0: none, the run waits for other processes).
	Distribute bool
	Workers    int
	// PartitionSize is about how many effects a partition holds; 0 is
	// ledgerdb.DefaultPartitionSize.
	PartitionSize int
	// Beside, when set, is called with the result of a run that
	// succeeded, on a goroutine of its own while the ledger records the
	// run's end: what the caller writes of the result goes to a temporary
	// file, put in its place once Run has returned without error. Run
	// returns once it is done, with its error.
	Beside func(*report.Result) error
}

// Outcome is how a run ended.
type Outcome struct {
	// Result is the run's result; a failed run's holds no findings, only
	// the pages that failed.
	Result *report.Result
	// Skipped is set when another run held the run lease; Holder is its
	// claim. Nothing was read or written.
	Skipped bool
	Holder  *reconcile.Claim
	// PageErr says which pages the pager did not take: the run must not
	// pass for a success.
	PageErr error
}

func (j *Job) clock() clock.Clock {
	if j.Clock == nil {
		return clock.System{}
	}
	return j.Clock
}

func (j *Job) now() time.Time { return j.clock().Now().UTC() }

func (j *Job) log() *slog.Logger {
	if j.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return j.Log
}

func (j *Job) progress(line func() string) (stop func()) {
	if j.Progress == nil {
		return func() {}
	}
	return j.Progress(line)
}

// NewRunID names a run started at now: its time, and random bytes that keep
// two runs started in one second apart.
func NewRunID(now time.Time) string {
	b := make([]byte, 3)
	rand.Read(b)
	return "rec_" + now.UTC().Format("20060102T150405Z") + "_" + hex.EncodeToString(b)
}

// Run makes one run: it takes the run lease, ingests the inputs, matches,
// acts, records and, when it applies, pages; then it records how the run
// ended, with its result. An unreadable input stops it before it changes
// anything, with an error that wraps *ingest.InputError. A run that fails
// after it started still returns its Outcome, whose Result has the pages
// that failed, for the metrics.
func (j *Job) Run(ctx context.Context, p *RunParams) (_ *Outcome, err error) {
	if p.ID == "" {
		p.ID = NewRunID(j.now())
	}
	out := &Outcome{}
	log := j.log().With("run_id", p.ID) // on every record of the run
	run := *j
	run.Log = log
	j = &run
	owner := j.Owner + ":" + p.ID
	raiser := &escalate.Raiser{Store: j.Store, Pager: j.pager(), Owner: owner, Log: log, Retry: p.PageRetry, Critical: p.PageCritical,
		Hold: true}
	opts := p.Actions
	opts.RunID, opts.Owner, opts.Apply, opts.Log, opts.Crash, opts.Now = p.ID, owner, p.Apply, log, crash, j.clock().Now
	ap := &compensate.Applier{Store: j.Store, Providers: j.Providers, Escalator: raiser, Options: opts}
	if p.Apply && len(j.Providers) == 0 {
		return out, errors.New("a run that applies needs a provider")
	}
	if p.RunLease {
		lease, holder, err := j.takeRunLease(ctx, owner, p.Actions.Lease)
		if err != nil {
			return out, err
		}
		if lease == nil { // another run holds it: this one is skipped
			out.Skipped, out.Holder = true, holder
			return out, nil
		}
		defer lease.release()
		ctx = lease.ctx
	}
	in, err := j.ingestAll(ctx, p.Sources, p.Options)
	if err != nil {
		return out, err
	}
	// The evidence indexes a large ingest deferred are built while the run
	// goes on, and the run ends once they are. A ledger that builds an
	// index on one processor (SQLite) builds them beside all of it (a large
	// ingest on a ledger that holds earlier records finds them by scanning
	// meanwhile); elsewhere (PostgreSQL, whose builds take the processors
	// its reads need) the ledger has them built before its reads when those
	// look them up, else once it has read the effects in scope (a first
	// night, the usual large ingest).
	built := make(chan error, 1)
	start := sync.OnceFunc(func() { go func() { built <- in.build() }() })
	wait := sync.OnceValue(func() error { start(); return <-built })
	defer func() { err = errors.Join(err, wait()) }()
	if _, serial := j.Store.(ledgerdb.SerialBuilder); serial {
		start()
	} else {
		in.indexes = func(need bool) {
			start()
			if need {
				wait() // its error is the run's, at the end; the reads go on without them
			}
		}
	}
	if _, err := j.Store.RunStart(ctx, &ledgerdb.StartRunParams{ID: p.ID, Args: p.Args}); err != nil {
		return out, err
	}
	res, err := j.reconcile(ctx, p, in, ap)
	if err != nil { // a failed run still reports its metrics and failed pages, without a success
		res = &report.Result{RunID: p.ID, StartedAt: j.now()}
	}
	out.Result = res
	if p.Apply { // the actions are made and the findings recorded: now the pages, even when the run failed
		out.PageErr = j.pageOpen(ctx, raiser, res, p.PagerSecrets)
		if err == nil {
			res.FinishedAt = j.now()
		}
	}
	status := reconcile.RunStatusSucceeded
	var resJSON []byte
	if err != nil {
		status = reconcile.RunStatusFailed
	} else {
		// What the matching and the actions left is given back before the
		// result, which for a large run is the largest thing it holds.
		debug.FreeOSMemory()
		var buf bytes.Buffer
		buf.Grow(512 * len(res.Discrepancies)) // about what each takes: grown once, not doubled
		if err = report.WriteJSON(&buf, res, false); err != nil {
			status = reconcile.RunStatusFailed
		}
		resJSON = buf.Bytes()
	}
	t := j.now()
	beside := make(chan error, 1)
	if err == nil && p.Beside != nil {
		go func() { beside <- p.Beside(res) }()
	} else {
		beside <- nil
	}
	if _, ferr := j.Store.RunFinish(context.WithoutCancel(ctx), &ledgerdb.FinishRunParams{ID: p.ID, Status: status, Result: resJSON}); ferr != nil && err == nil {
		err = ferr
	}
	if berr := <-beside; berr != nil && err == nil {
		err = berr
	}
	log.Debug("phase done", "phase", "finish", "elapsed", j.now().Sub(t).Round(time.Millisecond), "result_mb", len(resJSON)>>20)
	return out, err
}

func (j *Job) pager() escalate.Pager {
	if j.Pager == nil {
		return &escalate.Log{W: io.Discard}
	}
	return j.Pager
}
