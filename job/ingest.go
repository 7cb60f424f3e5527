package job

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"reconcile"
	"reconcile/ingest"
	"reconcile/ledgerdb"
	"reconcile/report"
)

// ingested is what a run's inputs gave: the report's part of them, and
// their sources in the ledger.
type ingested struct {
	inputs    []report.Input
	rejected  []report.Rejected // listed
	unlisted  int               // rejected rows beyond those listed
	sourceIDs []int64
	matched   []bool                   // per input in the manifest that a run matched before
	coverage  [][]ledgerdb.CoverageEnd // per input written by this run, as the ledger gave it back
	// build builds the evidence indexes the ingest deferred, if any: left
	// to the caller (Run), which has them built while it goes on, and
	// indexes the run's ledgerdb.MatchParams.Indexes.
	build   func() error
	indexes func(need bool)
}

// ingestAll writes the run's new inputs into the ledger. An input that
// cannot be read at all stops the run before it changes anything: the
// largest new input is written in a transaction of its own, so that it is
// parsed only once (a local file is hashed first, to find it in the
// manifest), while every other new input is read once into a spool
// (ingest.Spool), writing nothing, and then written from it. The ledger
// may defer its indexes meanwhile (deferIndexes): it builds them before it
// returns when it fails, else leaves them to the caller (out.build). No
// transaction commits
// before every input has been read whole: the largest waits for the others' checks, and each other
// waits for the largest. Where the ledger takes several writers at once
// (ledgerdb.ParallelWriter) the next largest is written as it is read,
// like the largest, and the others while the largest is; elsewhere after
// it.
func (j *Job) ingestAll(ctx context.Context, srcs []ingest.Source, opt *ingest.Options) (_ *ingested, err error) {
	defer j.phase("ingest")()
	opt = j.clocked(opt)
	// The local inputs are hashed side by side (a night's report and
	// webhook dump of 1M: 0.3 s of a processor), and an input's error is
	// reported in the inputs' order.
	hashes, fresh, errs := make([]string, len(srcs)), make([]bool, len(srcs)), make([]error, len(srcs))
	var looked errgroup.Group
	looked.SetLimit(runtime.GOMAXPROCS(0))
	for i, src := range srcs {
		looked.Go(func() error {
			var found bool
			hashes[i], found, errs[i] = j.lookupSource(ctx, src)
			fresh[i] = !found
			return nil
		})
	}
	looked.Wait()
	if err := cmp.Or(errs...); err != nil {
		return nil, err
	}
	first := -1     // the largest new input
	var bytes int64 // of the new inputs, where known
	for i, src := range srcs {
		if fresh[i] {
			bytes += max(src.Size, 0)
			if first < 0 || src.Size > srcs[first].Size {
				first = i
			}
		}
	}
	build, err := j.deferIndexes(ctx, bytes)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, build())
		}
	}()
	out := &ingested{inputs: make([]report.Input, len(srcs)), sourceIDs: make([]int64, len(srcs)), matched: make([]bool, len(srcs)),
		coverage: make([][]ledgerdb.CoverageEnd, len(srcs)), build: build}
	rejected := &RejectedList{}
	sinks := make([]*RejectedSink, len(srcs))
	for i := range srcs {
		sinks[i] = rejected.Collect(i)
	}
	write := func(ctx context.Context, i int, read reading, ready func() error) error {
		in, res, err := j.persist(ctx, srcs[i], hashes[i], read, sinks[i], ready, true)
		if err != nil {
			return err
		}
		id := res.SourceID
		out.matched[i] = res.MatchedBy != ""
		if in.AlreadyIngested { // report its rejected rows as the first run did
			rej, err := j.Store.RejectedListBySource(ctx, id, MaxListedRejected+1) // no more than the result lists
			if err != nil {
				return err
			}
			for _, r := range rej {
				sinks[i].Reject(&r)
			}
			sinks[i].unlist(max(in.Rejected-len(rej), 0)) // the rows not read back
		}
		out.sourceIDs[i], out.coverage[i] = id, res.Coverage
		out.inputs[i] = report.InputOf(in)
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	checked, written := make(chan struct{}), make(chan struct{}) // the others read whole; the largest committed
	wait := func(c chan struct{}) func() error {
		return func() error {
			select {
			case <-c:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		}
	}
	if first >= 0 {
		g.Go(func() error {
			o := *opt
			stop := j.ingestProgress("ingesting", srcs[first], &o)
			defer stop()
			if err := write(gctx, first, readSource(gctx, srcs[first], &o), wait(checked)); err != nil {
				return err
			}
			close(written)
			return nil
		})
	} else {
		close(written)
	}
	// Where the ledger takes several writers, the next largest new input
	// is written as it is read too, instead of spooled: it counts among
	// the others' checks once read whole, and commits after the largest,
	// as a spooled one does (so that the same content under two names is
	// written as the input named first). Same content known beforehand
	// (local files' hashes) is left to the spool.
	second, secondRead := -1, make(chan struct{})
	if _, ok := j.Store.(ledgerdb.ParallelWriter); ok && first >= 0 {
		for i := range srcs {
			if fresh[i] && i != first && (hashes[i] == "" || hashes[i] != hashes[first]) && (second < 0 || srcs[i].Size > srcs[second].Size) {
				second = i
			}
		}
	}
	if second >= 0 {
		g.Go(func() error {
			// Read whole, or found in the manifest: never on an error,
			// which must stop the others before the largest commits.
			var once sync.Once
			read := func() { once.Do(func() { close(secondRead) }) }
			o := *opt
			err := write(gctx, second, func(s ingest.Sink) (*ingest.Input, error) {
				in, err := ingest.Read(gctx, srcs[second], &o, s)
				if err == nil {
					read()
				}
				return in, err
			}, wait(written))
			if err == nil {
				read()
			}
			return err
		})
	} else {
		close(secondRead)
	}
	// The others show their checks' progress only once the largest's line
	// is gone.
	checking := func(i int, o *ingest.Options) (stop func()) {
		select {
		case <-written:
			return j.ingestProgress("checking", srcs[i], o)
		default:
			return func() {}
		}
	}
	// What the others' checks read is spooled, and written from there.
	checkedIn := make([]*ingest.Input, len(srcs))
	spools := make([]*ingest.Spool, len(srcs))
	defer func() {
		for _, s := range spools {
			if s != nil {
				s.Close()
			}
		}
	}()
	g.Go(func() error {
		for i := range srcs {
			if i == first || i == second || !fresh[i] {
				continue
			}
			o := *opt
			stop := checking(i, &o)
			spool, err := ingest.NewSpool()
			if err != nil {
				stop()
				return err
			}
			spools[i] = spool
			checkedIn[i], err = ingest.Read(gctx, srcs[i], &o, spool)
			stop()
			if err != nil {
				return err
			}
			hashes[i] = checkedIn[i].Hash
		}
		if err := wait(secondRead)(); err != nil {
			return err
		}
		close(checked)
		if _, ok := j.Store.(ledgerdb.ParallelWriter); !ok {
			if err := wait(written)(); err != nil {
				return err
			}
		}
		for i := range srcs {
			if i == first || i == second {
				continue
			}
			o := *opt
			read := readSource(gctx, srcs[i], &o) // not read: in the ledger already
			if spools[i] != nil {
				read = func(s ingest.Sink) (*ingest.Input, error) { return checkedIn[i], spools[i].Replay(s) }
			}
			if err := write(gctx, i, read, wait(written)); err != nil {
				return err
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out.rejected, out.unlisted = rejected.Listed()
	return out, nil
}

// Ingest reads one input into the ledger, unless its content is there
// already, or with check only reads it, writing nothing (the Job then needs
// no Store). Its rejected rows also go to c, for the report.
func (j *Job) Ingest(ctx context.Context, src ingest.Source, opt *ingest.Options, check bool, c *RejectedSink) (*ingest.Input, error) {
	opt = j.clocked(opt)
	stop := j.ingestProgress("reading", src, opt)
	defer stop()
	if check {
		return ingest.Read(ctx, src, opt, c)
	}
	build, err := j.deferIndexes(ctx, max(src.Size, 0))
	if err != nil {
		return nil, err
	}
	in, _, err := j.persist(ctx, src, "", readSource(ctx, src, opt), c, nil, false)
	return in, errors.Join(err, build())
}

// deferIndexes builds the evidence indexes an earlier large ingest left
// deferred, then defers them for an ingest of bytes of new input when
// the ledger finds that worth it (ledgerdb.Store.IndexesDefer), and
// returns what builds them again after it, however it ended.
func (j *Job) deferIndexes(ctx context.Context, bytes int64) (build func() error, err error) {
	build = func() error { return nil }
	pending, err := j.Store.IndexesBuild(ctx)
	if err != nil {
		return build, err
	}
	if len(pending) > 0 {
		j.log().Warn("evidence indexes left dropped by a large ingest that did not end: queries are slower until the tables' owner builds them (reconcile migrate does)",
			"indexes", pending)
		return build, nil
	}
	deferred, err := j.Store.IndexesDefer(ctx, bytes)
	if err != nil || !deferred {
		return build, err
	}
	return func() error {
		start := j.now()
		_, err := j.Store.IndexesBuild(context.WithoutCancel(ctx))
		j.log().Debug("evidence indexes built after the ingest", "elapsed", j.now().Sub(start).Round(time.Millisecond), "error", err)
		return err
	}, nil
}

// reading reads a source into a Sink.
type reading func(ingest.Sink) (*ingest.Input, error)

// clocked is opt on the job's clock, which no evidence may be dated after,
// unless opt has a clock of its own.
func (j *Job) clocked(opt *ingest.Options) *ingest.Options {
	var o ingest.Options
	if opt != nil {
		o = *opt
	}
	if o.Now == nil {
		o.Now = j.now
	}
	return &o
}

// readSource reads src with ingest.Read.
func readSource(ctx context.Context, src ingest.Source, opt *ingest.Options) reading {
	return func(s ingest.Sink) (*ingest.Input, error) { return ingest.Read(ctx, src, opt, s) }
}

// persist ingests one source into the ledger, unless its content is there
// already, and returns its account and the ledger's result (of a source in
// already, only its id in the manifest). hash is the
// content's hash when the caller knows it, else "". read gives its rows
// (readSource, or a spool's replay); rejected rows also go to c, for the
// report. ready, when set, is asked once the input has been read
// whole, before its transaction commits; its error rolls the input back.
// keep asks the store to keep the records for this run's matching
// (ledgerdb.IngestParams.Keep).
func (j *Job) persist(ctx context.Context, src ingest.Source, hash string, read reading, c *RejectedSink, ready func() error, keep bool) (*ingest.Input, *ledgerdb.IngestResult, error) {
	if hash == "" && src.Local() {
		var err error
		if hash, err = src.Hash(ctx); err != nil {
			return nil, nil, err
		}
	}
	already := func(rec *ledgerdb.SourceRecord) (*ingest.Input, *ledgerdb.IngestResult, error) {
		acc := rec.SourceAccount
		acc.URI, acc.ETag = src.URI, src.ETag
		return &ingest.Input{SourceAccount: acc, AlreadyIngested: true, Totals: []ingest.Total{}}, &ledgerdb.IngestResult{SourceID: rec.ID, MatchedBy: rec.RunID}, nil
	}
	rec, err := j.Store.SourceFind(ctx, hash, src.ETag)
	if err == nil {
		return already(rec)
	}
	if !errors.Is(err, reconcile.ErrNotFound) {
		return nil, nil, err
	}
	var input *ingest.Input
	res, err := j.Store.SourceIngest(ctx, &ledgerdb.IngestParams{URI: src.URI, ETag: src.ETag, Keep: keep},
		func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
			var err error
			input, err = read(teeRejected{w, c})
			if err == nil && ready != nil {
				err = ready()
			}
			if err != nil {
				return nil, err
			}
			return &ledgerdb.SourceRecord{SourceAccount: input.SourceAccount}, nil
		})
	if err != nil {
		return nil, nil, err
	}
	if res.Duplicate { // another process ingested the same content meanwhile
		c.reset()
		if rec, err = j.Store.SourceFind(ctx, input.Hash, src.ETag); err != nil {
			return nil, nil, err
		}
		return already(rec)
	}
	return input, res, nil
}

// lookupSource says whether a source's content is in the ledger already,
// and gives its hash when it is known without reading it through.
func (j *Job) lookupSource(ctx context.Context, src ingest.Source) (hash string, found bool, err error) {
	if src.Local() {
		if hash, err = src.Hash(ctx); err != nil {
			return "", false, err
		}
	}
	if _, err := j.Store.SourceFind(ctx, hash, src.ETag); err == nil {
		return hash, true, nil
	} else if !errors.Is(err, reconcile.ErrNotFound) {
		return "", false, err
	}
	return hash, false, nil
}

// teeRejected writes to the ledger and keeps rejected rows for the report.
type teeRejected struct {
	w ledgerdb.SourceWriter
	c *RejectedSink
}

func (t teeRejected) Evidence(e *reconcile.Evidence) error { return t.w.Evidence(e) }
func (t teeRejected) Reject(r *reconcile.Rejected) error {
	t.c.Reject(r)
	return t.w.Reject(r)
}

// A result lists at most MaxListedRejected rejected rows, each with at
// most MaxListedRaw bytes of its raw text, and counts the rest: the counts
// per input stay exact and a run keeps every rejected row whole in the
// ledger, but a file of a million bad rows is not held in memory.
const MaxListedRejected, MaxListedRaw = 1000, 1024

// RejectedList is what a result lists of the rejected rows of all its
// inputs. Its sinks may be written at once, one input each; each input
// keeps up to MaxListedRejected rows, and Listed takes them in input
// order, so that what is listed does not depend on which input was read
// first.
type RejectedList struct {
	mu       sync.Mutex
	rows     [][]report.Rejected // per input
	unlisted []int               // per input: the rows beyond those kept
}

// Collect returns the sink that lists input i's rejected rows.
func (l *RejectedList) Collect(i int) *RejectedSink {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.rows) <= i {
		l.rows, l.unlisted = append(l.rows, nil), append(l.unlisted, 0)
	}
	return &RejectedSink{list: l, i: i}
}

// Listed returns the first MaxListedRejected rows, in input order, and how
// many more there are.
func (l *RejectedList) Listed() ([]report.Rejected, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out, n := []report.Rejected{}, 0
	for i, rows := range l.rows {
		k := min(len(rows), MaxListedRejected-len(out))
		out = append(out, rows[:k]...)
		n += len(rows) - k + l.unlisted[i]
	}
	return out, n
}

// RejectedSink lists an input's rejected rows and drops the evidence.
type RejectedSink struct {
	list *RejectedList
	i    int
}

// Evidence drops e.
func (c *RejectedSink) Evidence(*reconcile.Evidence) error { return nil }

// Reject lists r, its raw text cut to MaxListedRaw bytes, or counts it
// when the input has as many listed as a result can hold.
func (c *RejectedSink) Reject(r *reconcile.Rejected) error {
	l := c.list
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.rows[c.i]) >= MaxListedRejected {
		l.unlisted[c.i]++
		return nil
	}
	raw := r.Raw
	if len(raw) > MaxListedRaw {
		raw = strings.ToValidUTF8(raw[:MaxListedRaw], "") + fmt.Sprintf("… (%d bytes in all)", len(r.Raw))
	}
	l.rows[c.i] = append(l.rows[c.i], report.Rejected{URI: r.URI, Line: r.Line, Reason: r.Reason, Raw: raw})
	return nil
}

// unlist counts n of the input's rejected rows that were not read back.
func (c *RejectedSink) unlist(n int) {
	c.list.mu.Lock()
	defer c.list.mu.Unlock()
	c.list.unlisted[c.i] += n
}

// reset forgets what was listed of the input: it is reported otherwise.
func (c *RejectedSink) reset() {
	l := c.list
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows[c.i], l.unlisted[c.i] = nil, 0
}
