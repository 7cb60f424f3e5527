package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"reconcile"
	"reconcile/clock"
	"reconcile/ingest"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
)

// nothingDeferred fails unless the ledger holds no deferred index: a
// store defers them for a huge input unless they are deferred already.
func nothingDeferred(t *testing.T, store ledgerdb.Store) {
	t.Helper()
	ctx := context.Background()
	if ok, err := store.IndexesDefer(ctx, 1<<40); err != nil || !ok {
		t.Fatalf("indexes left deferred (IndexesDefer = %v, %v)", ok, err)
	}
	if _, err := store.IndexesBuild(ctx); err != nil {
		t.Fatal(err)
	}
}

// A run whose ingest defers the indexes and then fails, on an input that
// cannot be read, builds them again before it returns.
func TestARunThatFailsLeavesNoIndexDeferred(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		fake := clock.NewFake(t0)
		store := l.Open(t, fake.Now)
		// Large enough for the two inputs to defer the indexes of an empty
		// ledger (driver.BuildIndexesAfter).
		bad := filepath.Join(t.TempDir(), "notes.csv")
		if err := os.WriteFile(bad, []byte("what,is,this\n"+strings.Repeat("1,2,3\n", 100)), 0o644); err != nil {
			t.Fatal(err)
		}
		srcs, err := ingest.Expand(context.Background(), []string{bad}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		j := &Job{Store: store, Clock: fake, Owner: "test"}
		if _, err := j.Run(context.Background(), &RunParams{Sources: append(itemizedSource(t), srcs...), Options: &ingest.Options{},
			Actions: actionsFor(time.Hour)}); err == nil {
			t.Fatal("a run with an unreadable input succeeded")
		}
		nothingDeferred(t, store)
	})
}

// Indexes left deferred by a process that died are built by the next run.
func TestTheNextRunBuildsTheIndexesADeadOneDeferred(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		fake := clock.NewFake(t0)
		store := l.Open(t, fake.Now)
		if ok, err := l.Open(t, fake.Now).IndexesDefer(context.Background(), 1<<30); err != nil || !ok {
			t.Fatalf("IndexesDefer = %v, %v", ok, err)
		}
		j := &Job{Store: store, Clock: fake, Owner: "test"}
		if _, err := j.Run(context.Background(), &RunParams{Sources: itemizedSource(t), Options: &ingest.Options{}, Actions: actionsFor(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		nothingDeferred(t, store)
	})
}

// buildLast is a ledger that builds an index on one processor, whose index
// builds after an ingest wait until the run is finishing (RunFinish: it has
// matched and recorded everything), and which says whether they were made.
type buildLast struct {
	ledgerdb.Store
	ingested  bool
	finishing chan struct{}
	built     atomic.Bool
}

func (s *buildLast) SerialBuilds() {}

func (s *buildLast) SourceIngest(ctx context.Context, p *ledgerdb.IngestParams, fill func(ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error)) (*ledgerdb.IngestResult, error) {
	s.ingested = true
	return s.Store.SourceIngest(ctx, p, fill)
}

func (s *buildLast) RunFinish(ctx context.Context, p *ledgerdb.FinishRunParams) (*reconcile.Run, error) {
	close(s.finishing)
	return s.Store.RunFinish(ctx, p)
}

func (s *buildLast) IndexesBuild(ctx context.Context) ([]string, error) {
	if s.ingested {
		select {
		case <-s.finishing:
		case <-time.After(time.Minute): // not a wait: a run that builds first never finishes
			return nil, errors.New("the run waited for the indexes before it matched")
		}
		defer s.built.Store(true)
	}
	return s.Store.IndexesBuild(ctx)
}

// buildGate is a ledger that builds an index with several processors (not
// a SerialBuilder), whose index builds after an ingest wait until the run
// matches its first partition or, with onAsk, until the ledger asks for
// them (ledgerdb.MatchParams.Indexes). It notes whether they were made,
// and whether they were when the ledger's call for them returned.
type buildGate struct {
	ledgerdb.Store
	onAsk     bool
	ingested  bool
	open      chan struct{}
	once      sync.Once
	built     atomic.Bool
	builtRead atomic.Bool // built when the ledger's call that needs them returned
}

func (s *buildGate) SourceIngest(ctx context.Context, p *ledgerdb.IngestParams, fill func(ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error)) (*ledgerdb.IngestResult, error) {
	s.ingested = true
	return s.Store.SourceIngest(ctx, p, fill)
}

func (s *buildGate) PartitionMatch(ctx context.Context, p *ledgerdb.MatchParams, match func(*ledgerdb.Partition) ([]ledgerdb.Confirmation, error)) (*ledgerdb.MatchSummary, error) {
	q := *p
	if p.Indexes != nil {
		q.Indexes = func(need bool) {
			if s.onAsk {
				s.once.Do(func() { close(s.open) })
			}
			p.Indexes(need)
			s.builtRead.Store(need && s.built.Load())
		}
	}
	return s.Store.PartitionMatch(ctx, &q, func(part *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
		if !s.onAsk {
			s.once.Do(func() { close(s.open) })
		}
		return match(part)
	})
}

func (s *buildGate) IndexesBuild(ctx context.Context) ([]string, error) {
	if !s.ingested {
		return s.Store.IndexesBuild(ctx)
	}
	select {
	case <-s.open:
	case <-time.After(time.Minute): // not a wait: a run that builds first never matches
		return nil, errors.New("the indexes were built before the run matched, or asked for them")
	}
	defer s.built.Store(true)
	return s.Store.IndexesBuild(ctx)
}

// twoNights runs, on l, a first night that confirms ten charges, and a
// second night more than ten times larger that charges those ten again,
// on a ledger that the ingest of each defers its indexes for; wrap gives
// the store each night runs on. The second night must find the first
// night's records, and call the ten duplicated.
func twoNights(t *testing.T, l *ledgerdbtest.Ledger, wrap func(night int, s ledgerdb.Store) ledgerdb.Store) {
	ctx := context.Background()
	fake := clock.NewFake(t0)
	store := l.Open(t, fake.Now)
	charges := func(from, to int) []reconcile.Effect {
		var out []reconcile.Effect
		for i := from; i < to; i++ {
			key := fmt.Sprint("app:charge:", i)
			out = append(out, reconcile.Effect{Key: key, RunID: "app", Step: "charge", Provider: "stripe", Status: reconcile.StatusConfirmed,
				ExternalID: fmt.Sprint("pi_", i), CreatedAt: t0.Add(-21 * time.Hour),
				Request: json.RawMessage(`{"amount": 1000, "currency": "eur", "metadata": {"effect_key": "` + key + `"}}`)})
		}
		return out
	}
	report := func(name string, rows func(b *strings.Builder)) []ingest.Source {
		var b strings.Builder
		b.WriteString("balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,charge_id,payment_intent_id,payment_metadata[effect_key]\n")
		rows(&b)
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		srcs, err := ingest.Expand(ctx, []string{path}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return srcs
	}
	charge := func(b *strings.Builder, i int, tx string) {
		fmt.Fprintf(b, "txn_%s,2026-11-30 09:00:00,eur,10.00,0.30,9.70,charge,%s,%s,pi_%s,app:charge:%d\n", tx, tx, tx, tx, i)
	}
	run := func(night int, srcs []ingest.Source) map[string]int {
		t.Helper()
		j := &Job{Store: wrap(night, store), Clock: fake, Owner: "test"}
		out, err := j.Run(ctx, &RunParams{Sources: srcs, Options: &ingest.Options{}, Actions: actionsFor(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		nothingDeferred(t, store)
		return out.Result.Counts
	}
	if err := store.EffectLoad(ctx, charges(0, 10)); err != nil {
		t.Fatal(err)
	}
	if got := run(1, report("day1.itemized.csv", func(b *strings.Builder) {
		for i := range 10 {
			charge(b, i, fmt.Sprint("ch_", i))
		}
	})); got["confirmed"] != 10 {
		t.Fatalf("first night: %v, want 10 confirmed", got)
	}
	if err := store.EffectLoad(ctx, charges(10, 110)); err != nil {
		t.Fatal(err)
	}
	got := run(2, report("day2.itemized.csv", func(b *strings.Builder) {
		for i := range 110 {
			charge(b, i, fmt.Sprint("ch_", i, "b"))
			if i == 50 { // a line no parser can take, naming one of ours
				b.WriteString("txn_x,2026-11-30 09:00:00,eur,ten,0.30,9.70,charge,ch_x,ch_x,pi_x,app:charge:1\n")
			}
		}
	}))
	if got["confirmed"] != 100 || got["duplicated"] != 10 {
		t.Errorf("second night: %v, want 100 confirmed and the first night's 10 duplicated", got)
	}
}

// A run whose ingest deferred the indexes, on a ledger that builds an
// index on one processor, matches while they are built, on a ledger whose
// earlier records it must find, and ends once they are. Both drivers: the
// way is the same whoever asks for it.
func TestARunMatchesWhileItBuildsTheIndexesItDeferred(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		var slow *buildLast
		twoNights(t, l, func(night int, s ledgerdb.Store) ledgerdb.Store {
			if night == 1 {
				return s
			}
			slow = &buildLast{Store: s, finishing: make(chan struct{})}
			return slow
		})
		if !slow.built.Load() {
			t.Error("the run returned before the indexes it deferred were built")
		}
	})
}

// On a ledger that builds an index with several processors, a first
// night's run, which looks up no earlier record, matches while the indexes
// its ingest deferred are built, and ends once they are; a run whose
// ledger holds earlier records has them built before it reads. Both
// drivers, each wrapped as such a ledger.
func TestARunHasItsIndexesBuiltBeforeTheReadsThatNeedThem(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		gates := map[int]*buildGate{}
		twoNights(t, l, func(night int, s ledgerdb.Store) ledgerdb.Store {
			gates[night] = &buildGate{Store: s, onAsk: night == 2, open: make(chan struct{})}
			return gates[night]
		})
		if !gates[1].built.Load() {
			t.Error("first night: the run returned before the indexes it deferred were built")
		}
		if !gates[2].builtRead.Load() {
			t.Error("second night: the ledger's reads went on before the indexes its ingest deferred were built")
		}
	})
}
