package job

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/matcher"
)

// ledgerWorld is a random ledger, its states from earlier runs, and two
// sources: one ingested by an earlier run, one by this run.
type ledgerWorld struct {
	effects        []reconcile.Effect
	final, missing []string // keys an earlier run left confirmed (final) or missing
	earlier, run   []reconcile.Evidence
}

func randomLedgerWorld(r *rand.Rand) *ledgerWorld {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	w := &ledgerWorld{}
	steps := []string{"charge", "charge", "charge", "capture", "refund", "compensate", "payout", "notify_buyer"}
	prefix := map[reconcile.Kind]string{reconcile.KindCharge: "ch", reconcile.KindRefund: "re", reconcile.KindPayout: "po"}
	kinds := []reconcile.Kind{reconcile.KindCharge, reconcile.KindRefund, reconcile.KindPayout}
	n := 3 + r.IntN(30)
	ids := func() string { return fmt.Sprintf("pi_%d", r.IntN(n+5)) } // shared now and then
	record := func(ev reconcile.Evidence) {
		ev.Time = t0.Add(time.Duration(r.IntN(3000)) * time.Minute)
		if r.IntN(3) == 0 {
			w.earlier = append(w.earlier, ev)
		} else {
			w.run = append(w.run, ev)
		}
	}
	for i := range n {
		step := steps[r.IntN(len(steps))]
		provider := "stripe"
		if r.IntN(6) == 0 {
			provider = "adyen"
		}
		key := fmt.Sprintf("r%d:%s:%d", r.IntN(3), step, i)
		e := reconcile.Effect{Key: key, RunID: "r", Step: step, Provider: provider, Status: reconcile.StatusAttempted,
			CreatedAt: t0.Add(time.Duration(r.IntN(60)) * time.Hour)}
		amount := int64(100 * (1 + r.IntN(20)))
		e.Request = json.RawMessage(fmt.Sprintf(`{"amount": %d, "currency": "eur", "metadata": {"effect_key": %q}}`, amount, key))
		switch p := r.IntN(20); {
		case p < 9:
			e.Status, e.ExternalID = reconcile.StatusConfirmed, ids()
		case p == 9:
			e.Status = reconcile.StatusAbandoned
			if r.IntN(2) == 0 {
				e.ExternalID = ids()
			}
		}
		if provider == "adyen" && r.IntN(2) == 0 { // what an application records for an Adyen refund: the modification reference
			e.ExternalID = fmt.Sprintf("mod_%d_0", i)
		}
		switch r.IntN(8) {
		case 0:
			w.final = append(w.final, key)
		case 1:
			w.missing = append(w.missing, key)
		}
		w.effects = append(w.effects, e)
		kind, ok := matcher.ExpectedKind(step)
		if !ok {
			kind = reconcile.KindCharge
		}
		for j := range r.IntN(4) {
			k := kind
			if r.IntN(10) == 0 {
				k = kinds[r.IntN(len(kinds))]
			}
			sign := int64(1)
			if k != reconcile.KindCharge {
				sign = -1
			}
			id := fmt.Sprintf("%s_%d_%d", prefix[k], i, j)
			if provider == "adyen" {
				id = fmt.Sprintf("psp_%d_%d/mod_%d_%d", i, j, i, j)
			}
			tx := reconcile.Evidence{Provider: provider, TxID: id, Kind: k,
				Amount: reconcile.Money{Minor: sign * amount, Currency: "EUR"}, Failed: r.IntN(15) == 0}
			if r.IntN(10) == 0 {
				tx.Amount.Minor++
			}
			intent := ids()
			for range 1 + r.IntN(3) {
				ev := tx
				switch p := r.IntN(20); {
				case p < 11:
					ev.EffectKey = key
				case p < 14:
					ev.PaymentIntent = e.ExternalID
				case p < 16:
					ev.ParentTxID = e.ExternalID
				case p < 17:
					ev.EffectKey = fmt.Sprintf("r%d:charge:%d", r.IntN(3), r.IntN(n)) // another effect's key, maybe
				}
				switch r.IntN(12) {
				case 0: // an event that names the intent, not the charge
					ev.TxID, ev.PaymentIntent = "", intent
				case 1:
					ev.PaymentIntent = intent
				case 2: // a row with no id at all
					ev.TxID, ev.PaymentIntent = "", ""
				}
				record(ev)
			}
		}
		if kind == reconcile.KindCharge && r.IntN(3) == 0 { // a refund or dispute of the charge that no effect made
			k, id := reconcile.KindRefund, fmt.Sprintf("re_d%d", i)
			if r.IntN(3) == 0 {
				k, id = reconcile.KindDispute, fmt.Sprintf("du_d%d", i)
			}
			for range 1 + r.IntN(2) {
				ev := reconcile.Evidence{Provider: provider, TxID: id, Kind: k, Amount: reconcile.Money{Minor: -amount, Currency: "EUR"}, Webhook: r.IntN(3) == 0}
				if k == reconcile.KindDispute && r.IntN(3) == 0 {
					ev.Amount.Minor = amount // reinstated
				}
				switch r.IntN(5) {
				case 0:
					ev.ParentEffectKey = key
				case 1:
					ev.ParentEffectKey = fmt.Sprintf("r%d:charge:%d", r.IntN(3), r.IntN(n))
				case 2:
					ev.ParentTxID = fmt.Sprintf("ch_%d_%d", i, r.IntN(2))
				case 3:
					ev.PaymentIntent = e.ExternalID
				}
				record(ev)
			}
		}
	}
	for i := range r.IntN(5) { // unexpected money, fees and payouts that name what they like
		k := kinds[r.IntN(len(kinds))]
		ev := reconcile.Evidence{Provider: "stripe", TxID: fmt.Sprintf("%s_u%d", prefix[k], i), Kind: k, Amount: reconcile.Money{Minor: 700, Currency: "EUR"}}
		if r.IntN(3) == 0 {
			ev.PaymentIntent = ids()
		}
		record(ev)
		record(reconcile.Evidence{Provider: "stripe", Kind: reconcile.KindFee, Amount: reconcile.Money{Minor: -30, Currency: "EUR"},
			EffectKey: fmt.Sprintf("r%d:charge:%d", r.IntN(3), r.IntN(n))})
	}
	return w
}

// load writes the world into a ledger and returns the run's source.
func (w *ledgerWorld) load(t *testing.T, store ledgerdb.Store) int64 {
	ctx := context.Background()
	if err := store.EffectLoad(ctx, w.effects); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RunStart(ctx, &ledgerdb.StartRunParams{ID: "run_0"}); err != nil {
		t.Fatal(err)
	}
	var ds []reconcile.Discrepancy
	for _, k := range w.final {
		ds = append(ds, reconcile.Discrepancy{Class: reconcile.ClassConfirmed, EffectKey: k, Transactions: []reconcile.Transaction{{ID: "x"}}})
	}
	for _, k := range w.missing {
		ds = append(ds, reconcile.Discrepancy{Class: reconcile.ClassMissing, EffectKey: k})
	}
	if _, err := store.FindingRecord(ctx, &ledgerdb.FindingsParams{RunID: "run_0", Discrepancies: ds}); err != nil {
		t.Fatal(err)
	}
	ingest := func(uri string, evs []reconcile.Evidence) int64 {
		res, err := store.SourceIngest(ctx, &ledgerdb.IngestParams{URI: uri}, func(sw ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
			for i := range evs {
				evs[i].URI, evs[i].Line = uri, i+2
				if err := sw.Evidence(&evs[i]); err != nil {
					return nil, err
				}
			}
			return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Format: "test", Hash: uri, Evidence: len(evs)}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return res.SourceID
	}
	ingest("earlier.csv", w.earlier)
	return ingest("run.csv", w.run)
}

// oneMatch classifies the run as one match over everything: the run's
// evidence, the effects in scope and the earlier evidence linked to them,
// read whole.
func (w *ledgerWorld) oneMatch(t *testing.T, store ledgerdb.Store, run int64, in matcher.Input) *matcher.Result {
	ctx := context.Background()
	_, evidence, _, err := store.SourceGetRows(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]string]bool{} // transactions earlier evidence holds: they name no closed effect back into scope
	for _, e := range w.earlier {
		seen[[2]string{e.Provider, e.TxID}] = e.TxID != ""
	}
	named := map[string]bool{}
	for _, e := range evidence {
		if seen[[2]string{e.Provider, e.TxID}] {
			continue
		}
		for _, id := range []string{e.EffectKey, e.ParentEffectKey, e.TxID, e.PaymentIntent, e.ParentTxID} {
			if id != "" {
				named[id] = true
			}
		}
	}
	final := map[string]bool{}
	for _, k := range w.final {
		final[k] = true
	}
	link := &ledgerdb.LinkParams{ExcludeSources: []int64{run}}
	for i := range w.effects {
		e := &w.effects[i]
		open := e.Status != reconcile.StatusAbandoned && !final[e.Key]
		if !open && !named[e.Key] && !(e.ExternalID != "" && named[e.ExternalID]) {
			continue
		}
		x, err := store.EffectGet(ctx, e.Key)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := matcher.FromLedger(x)
		in.Effects = append(in.Effects, m)
		link.Keys = append(link.Keys, e.Key)
		if e.ExternalID != "" {
			link.IDs = append(link.IDs, e.ExternalID)
		}
	}
	before, err := store.EvidenceListLinked(ctx, link)
	if err != nil {
		t.Fatal(err)
	}
	in.Evidence = append(evidence, before...)
	res := matcher.Match(&in)
	unlinked := map[*reconcile.Discrepancy]bool{}
	for _, i := range res.Unlinked {
		unlinked[&res.Discrepancies[i]] = true
	}
	var kept []reconcile.Discrepancy
	for i := range res.Discrepancies {
		d := &res.Discrepancies[i]
		// A transaction that earlier evidence holds and that links to
		// nothing in scope was reported when it was first seen.
		if d.Class == reconcile.ClassUnexpected && unlinked[d] {
			if tx := &d.Transactions[0]; seen[[2]string{tx.Provider, tx.ID}] {
				continue
			}
		}
		kept = append(kept, *d)
	}
	kept = onlyThisRunsUnexpected(kept, evidence)
	res.Discrepancies = kept
	return res
}

// Matching partition by partition, as the ledger cuts and reads them,
// finds what one match over all of the data finds, however small the
// partitions, on both ledgers.
func TestPartitionedMatchEqualsOneMatch(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		r := rand.New(rand.NewPCG(11, uint64(len(l.Driver))))
		for i := range 40 {
			w, size := randomLedgerWorld(r), 1+r.IntN(4)
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				w.checkPartitioned(t, ledgerdbtest.New(t, l.Driver).Open(t, nil), size)
			})
		}
	})
}

// inputOf is the matcher's input for a run over the source run: its
// window, from the source's coverage (ends), and a paging threshold.
func inputOf(t *testing.T, store ledgerdb.Store, run int64) (matcher.Input, map[matcher.Coverage]time.Time) {
	t.Helper()
	cover, err := store.CoverageList(context.Background(), []int64{run})
	if err != nil {
		t.Fatal(err)
	}
	ends := map[matcher.Coverage]time.Time{}
	for _, c := range cover {
		ends[matcher.Coverage{Provider: c.Provider, Kind: c.Kind}] = c.End
	}
	scope, cutoff := matcher.Window(ends, time.Time{}, time.Hour)
	return matcher.Input{Cutoff: cutoff, Scope: scope, EscalateUnexpected: map[string]int64{"EUR": 500}}, ends
}

// checkPartitioned loads w and matches it partition by partition and as one.
func (w *ledgerWorld) checkPartitioned(t *testing.T, store ledgerdb.Store, size int) {
	ctx := context.Background()
	run := w.load(t, store)
	in, ends := inputOf(t, store, run)
	want := w.oneMatch(t, store, run, in)
	if _, evidence, _, err := store.SourceGetRows(ctx, run); err != nil || !cmp.Equal(matcher.Ends(evidence), ends) {
		t.Fatalf("Coverage = %v, the evidence's ends are %v (%v)", ends, matcher.Ends(evidence), err)
	}

	var got []reconcile.Discrepancy
	unlinked := map[txName]bool{}
	outOfScope := 0
	var mu sync.Mutex // match is called from several goroutines
	_, err := store.PartitionMatch(ctx, &ledgerdb.MatchParams{RunID: "run_1", Sources: []int64{run}, Kinds: matcher.StepKinds(), PartitionSize: size},
		func(part *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
			pin := in
			for _, e := range part.Effects {
				m, _ := matcher.FromLedger(&e.Effect)
				pin.Effects = append(pin.Effects, m)
			}
			pin.Evidence = append(part.Evidence, part.Earlier...)
			res := matcher.Match(&pin)
			mu.Lock()
			defer mu.Unlock()
			for _, i := range res.Unlinked {
				unlinked[nameOf(&res.Discrepancies[i].Transactions[0])] = true
			}
			got = append(got, onlyThisRunsUnexpected(res.Discrepancies, part.Evidence)...)
			outOfScope += res.OutOfScope
			return nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	pm := &partitionMatch{unlinked: unlinked}
	for i := range got {
		pm.kept.add(&got[i], time.Time{}, time.Time{})
	}
	if err := pm.dropReported(ctx, store, []int64{run}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(jsonOf(want.Discrepancies), jsonOf(pm.sorted())); diff != "" {
		t.Fatalf("partitioned matching differs from one match (-one +partitioned):\n%s", diff)
	}
	if outOfScope != want.OutOfScope {
		t.Errorf("%d out of scope, one match says %d", outOfScope, want.OutOfScope)
	}
}

// jsonOf shows discrepancies one per line, for a readable diff.
func jsonOf(ds []reconcile.Discrepancy) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		b, _ := json.Marshal(d)
		out = append(out, string(b))
	}
	return out
}

// The run's matching takes partitions on several goroutines at once (the
// driver's Pipeline, on a machine with processors to spare): matching the
// same partitions four at a time keeps what one at a time keeps. Under
// -race this also finds a finding kept without the lock.
func TestPartitionsMatchedAtOnceKeepWhatOneAtATimeKeeps(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 8 {
		w := randomLedgerWorld(r)
		store := ledgerdbtest.New(t, "sqlite").Open(t, nil)
		ctx := context.Background()
		run := w.load(t, store)
		var (
			mu    sync.Mutex
			parts []*ledgerdb.Partition
		)
		if _, err := store.PartitionMatch(ctx, &ledgerdb.MatchParams{RunID: "run_1", Sources: []int64{run}, Kinds: matcher.StepKinds(), PartitionSize: 2},
			func(p *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
				mu.Lock()
				defer mu.Unlock()
				parts = append(parts, p)
				return nil, nil
			}); err != nil {
			t.Fatal(err)
		}
		in, _ := inputOf(t, store, run)
		newMatch := func() *partitionMatch {
			return &partitionMatch{in: in, created: map[string]time.Time{}, since: map[string]time.Time{}, log: slog.New(slog.DiscardHandler), now: time.Now}
		}
		one, four := newMatch(), newMatch()
		var confOne, confFour atomic.Int64
		for _, p := range parts {
			c, _ := one.match(p)
			confOne.Add(int64(len(c)))
		}
		work := make(chan *ledgerdb.Partition)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for p := range work {
					c, _ := four.match(p)
					confFour.Add(int64(len(c)))
				}
			})
		}
		for _, p := range parts {
			work <- p
		}
		close(work)
		wg.Wait()
		if diff := cmp.Diff(jsonOf(one.sorted()), jsonOf(four.sorted())); diff != "" || confOne.Load() != confFour.Load() ||
			one.confirmed != four.confirmed || one.outOfScope != four.outOfScope || !cmp.Equal(one.volumes(), four.volumes()) ||
			!cmp.Equal(one.created, four.created) || !cmp.Equal(one.since, four.since) || !cmp.Equal(one.unlinked, four.unlinked) {
			t.Fatalf("world %d, %d partitions: four at a time differ from one at a time (-one +four):\n%s", i, len(parts), diff)
		}
	}
}
