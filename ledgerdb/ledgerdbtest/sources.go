package ledgerdbtest

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ledgerdb"
)

func sampleEvidence(i int) *reconcile.Evidence {
	return &reconcile.Evidence{
		Provider: "stripe", TxID: fmt.Sprintf("ch_%d", i), Kind: reconcile.KindCharge, RawKind: "charge",
		Amount: reconcile.Money{Minor: int64(1000 + i), Currency: "EUR"}, Fee: 30,
		Time:      time.Date(2026, 11, 1, 10, 0, i%60, 0, time.UTC),
		EffectKey: fmt.Sprintf("run_1:charge:%d", i), PaymentIntent: fmt.Sprintf("pi_%d", i),
		Metadata: map[string]string{"payment_metadata[effect_key]": fmt.Sprintf("run_1:charge:%d", i)},
		URI:      "s.csv", Line: i + 2, Raw: fmt.Sprintf("ch_%d,10.00,eur", i),
	}
}

// ingest writes a source whose content hash is hash, with n evidence
// records and the given rejected rows, and fails with failAfter's error
// after that many records when failAfter > 0.
func (e *env) ingest(store ledgerdb.Store, hash string, n int, rejected []reconcile.Rejected, failAfter int) (*ledgerdb.IngestResult, error) {
	return store.SourceIngest(e.ctx, &ledgerdb.IngestParams{URI: "s.csv", ETag: "etag-" + hash},
		func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
			for i := range n {
				if failAfter > 0 && i == failAfter {
					return nil, errors.New("truncated gzip")
				}
				if err := w.Evidence(sampleEvidence(i)); err != nil {
					return nil, err
				}
			}
			for i := range rejected {
				if err := w.Reject(&rejected[i]); err != nil {
					return nil, err
				}
			}
			return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Format: "stripe-itemized", Hash: hash, Bytes: 123, Rows: n + len(rejected) + 1, Evidence: n, Rejected: len(rejected), Ignored: 1}}, nil
		})
}

func (e *env) sources() []ledgerdb.SourceRecord {
	e.t.Helper()
	got, err := e.store.SourceList(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func testIngestWritesRowsAndManifest(e *env) {
	rejected := []reconcile.Rejected{
		{URI: "s.csv", Line: 9, Reason: "amount \"12.345\" has more decimals than the currency allows (2)", Raw: "ch_9,12.345,eur"},
		{URI: "s.csv", Line: 9, Reason: "same line, same reason", Raw: "ch_9,12.345,eur"}, // two malformed rows never merge
		{URI: "s.csv", Line: 10, Reason: "same line, same reason", Raw: "ch_9,12.345,eur"},
	}
	res, err := e.ingest(e.store, "h1", 3, rejected, 0)
	if err != nil || res.Duplicate || res.SourceID == 0 {
		e.t.Fatalf("SourceIngest = %+v, %v", res, err)
	}
	rec, ev, rej, err := e.store.SourceGetRows(e.ctx, res.SourceID)
	if err != nil {
		e.t.Fatal(err)
	}
	wantRec := ledgerdb.SourceRecord{ID: res.SourceID, SourceAccount: reconcile.SourceAccount{URI: "s.csv", ETag: "etag-h1", Format: "stripe-itemized", Hash: "h1", Bytes: 123, Rows: 7, Evidence: 3, Rejected: 3, Ignored: 1}}
	if diff := cmp.Diff(wantRec, *rec); diff != "" {
		e.t.Errorf("manifest entry (-want +got):\n%s", diff)
	}
	var wantEv []reconcile.Evidence
	for i := range 3 {
		x := *sampleEvidence(i)
		x.SourceHash = "h1"
		wantEv = append(wantEv, x)
	}
	if diff := cmp.Diff(wantEv, ev); diff != "" {
		e.t.Errorf("evidence (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(rejected, rej); diff != "" {
		e.t.Errorf("rejected rows (-want +got):\n%s", diff)
	}
	for _, q := range [][2]string{{"h1", ""}, {"", "etag-h1"}, {"h1", "other"}} {
		if got, err := e.store.SourceFind(e.ctx, q[0], q[1]); err != nil || got.ID != res.SourceID {
			e.t.Errorf("SourceFind(%q, %q) = %+v, %v; want source %d", q[0], q[1], got, err, res.SourceID)
		}
	}
	for _, q := range [][2]string{{"h2", ""}, {"", ""}, {"", "etag-h2"}} {
		if got, err := e.store.SourceFind(e.ctx, q[0], q[1]); !errors.Is(err, reconcile.ErrNotFound) {
			e.t.Errorf("SourceFind(%q, %q) = %+v, %v; want ErrNotFound", q[0], q[1], got, err)
		}
	}
}

// Every value of a record comes back as written, at the edges of its type:
// a time before 2000 and one with milliseconds (SQLite's precision), no time, negative and
// large amounts, text that a CSV or COPY would have to escape, metadata
// and none.
func testIngestKeepsEveryValue(e *env) {
	want := []reconcile.Evidence{
		{Provider: "stripe", TxID: "re_1", Kind: reconcile.KindRefund, RawKind: "refund", Amount: reconcile.Money{Minor: -(1 << 53), Currency: "JPY"},
			Fee: -7, Time: time.Date(1999, 12, 31, 23, 59, 59, 999000000, time.UTC), Pending: true, Failed: true,
			EffectKey: "app:refund:1", ParentEffectKey: "app:charge:1", PaymentIntent: "pi_1", ParentTxID: "ch_1",
			Description: "Zürich — 払い\tab\t \"quoted\"", Metadata: map[string]string{"a\"b": "c\\d\n", "": "empty key"},
			URI: "s.csv", Line: 1 << 30, Raw: "re_1,\"a\tb\nc\\\",-1"},
		{Provider: "adyen", Kind: reconcile.KindFee, Amount: reconcile.Money{Currency: "EUR"}, Time: time.Date(2026, 3, 29, 1, 30, 0, 1000000, time.UTC),
			URI: "s.csv", Line: 1},
		{Provider: "paypal", TxID: "T1", Kind: reconcile.KindCharge, Amount: reconcile.Money{Minor: 1, Currency: "USD"}, URI: "s.csv", Line: 2, Raw: ""},
	}
	res, err := e.store.SourceIngest(e.ctx, &ledgerdb.IngestParams{URI: "s.csv"},
		func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
			for i := range want {
				if err := w.Evidence(&want[i]); err != nil {
					return nil, err
				}
			}
			return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Format: "stripe-itemized", Hash: "h-values", Rows: 3, Evidence: 3}}, nil
		})
	if err != nil {
		e.t.Fatal(err)
	}
	_, got, _, err := e.store.SourceGetRows(e.ctx, res.SourceID)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range want {
		want[i].SourceHash = "h-values"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("evidence read back (-written +read):\n%s", diff)
	}
}

func testIngestSameContentTwiceAddsNothing(e *env) {
	if _, err := e.ingest(e.store, "h1", 2, nil, 0); err != nil {
		e.t.Fatal(err)
	}
	res, err := e.ingest(e.store, "h1", 2, nil, 0)
	if err != nil || !res.Duplicate {
		e.t.Fatalf("second SourceIngest of the same content = %+v, %v; want a duplicate", res, err)
	}
	got := e.sources()
	if len(got) != 1 {
		e.t.Fatalf("manifest has %d sources, want 1", len(got))
	}
	if _, ev, _, err := e.store.SourceGetRows(e.ctx, got[0].ID); err != nil || len(ev) != 2 {
		e.t.Errorf("evidence after the duplicate = %d rows, %v; want 2", len(ev), err)
	}
}

// An input that turns out unreadable halfway (after some batches were
// written) leaves nothing behind.
func testIngestFailureRollsBackEverything(e *env) {
	_, err := e.ingest(e.store, "h1", 12000, nil, 11000)
	if err == nil {
		e.t.Fatalf("SourceIngest with a failing fill succeeded")
	}
	if got := e.sources(); len(got) != 0 {
		e.t.Errorf("manifest after a failed ingest = %+v, want empty", got)
	}
	if _, err := e.store.SourceFind(e.ctx, "h1", "etag-h1"); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("a failed ingest left its content marked as seen")
	}
	if res, err := e.ingest(e.store, "h1", 10, nil, 0); err != nil || res.Duplicate {
		e.t.Errorf("ingest after the failed one = %+v, %v; want it written", res, err)
	}
}

// largeInput is an input size that has a store defer its indexes in a
// ledger of fewer than two million records.
const largeInput = 1 << 30

// buildIndexes builds the indexes deferred, and fails when any is left.
func (e *env) buildIndexes() {
	e.t.Helper()
	if pending, err := e.store.IndexesBuild(e.ctx); err != nil || len(pending) > 0 {
		e.t.Fatalf("IndexesBuild = %q, %v", pending, err)
	}
}

// The indexes are deferred for an input that adds more records than the
// ledger holds, not for one of unknown size or one smaller than that, nor
// twice; whoever builds them, evidence written meanwhile is found by the
// values they serve (the drivers' own tests compare the indexes with the
// migrated ones).
func testIndexesDeferredForALargeInput(e *env) {
	deferIndexes := func(bytes int64, want bool) {
		e.t.Helper()
		if got, err := e.store.IndexesDefer(e.ctx, bytes); err != nil || got != want {
			e.t.Fatalf("IndexesDefer(%d) = %v, %v; want %v", bytes, got, err, want)
		}
	}
	ingest := func(hash string) {
		e.t.Helper()
		if res, err := e.ingest(e.store, hash, 100, nil, 0); err != nil || res.Duplicate {
			e.t.Fatalf("ingest %s = %+v, %v", hash, res, err)
		}
	}
	deferIndexes(largeInput, true)  // an empty ledger
	deferIndexes(largeInput, false) // deferred already
	ingest("h1")
	if pending, err := e.another().IndexesBuild(e.ctx); err != nil || len(pending) > 0 { // as the next process would
		e.t.Fatalf("IndexesBuild by another handle = %q, %v", pending, err)
	}
	e.buildIndexes()             // nothing left
	deferIndexes(0, false)       // of unknown size
	deferIndexes(512*100, false) // as many records as the ledger holds, at 512 bytes each
	ingest("h2")
	deferIndexes(512*200+512, true) // one more than the 200 it holds
	ingest("h3")
	e.buildIndexes()
	// Each source has a record naming run_1:charge:0 by key, one of
	// transaction ch_1 and one of payment intent pi_2, found through the
	// indexes by the effect of that key and those of those external ids.
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if err := e.store.EffectLoad(e.ctx, []reconcile.Effect{
		charge("run_1:charge:0", "stripe", "charge", reconcile.StatusAttempted, "", t0),
		charge("app:charge:1", "stripe", "charge", reconcile.StatusConfirmed, "ch_1", t0),
		charge("app:charge:2", "stripe", "charge", reconcile.StatusConfirmed, "pi_2", t0),
	}); err != nil {
		e.t.Fatal(err)
	}
	sum, err := e.store.PartitionMatch(e.ctx, &ledgerdb.MatchParams{RunID: "run_m", Sources: []int64{}, Kinds: stepKinds, PartitionSize: 10},
		func(p *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) { return nil, nil })
	if err != nil {
		e.t.Fatal(err)
	}
	if sum.Effects != 3 || sum.Records != 9 {
		e.t.Errorf("matching after the ingests: %d effects and %d earlier records, want 3 and 9 (3 of each source)", sum.Effects, sum.Records)
	}
}

// Two processes ingest the same content at once: one writes it, the other
// is told it is a duplicate.
func testConcurrentIngestOnce(e *env) {
	stores := []ledgerdb.Store{e.store, e.another()}
	var wg sync.WaitGroup
	results := make([]*ledgerdb.IngestResult, 2)
	for i, s := range stores {
		wg.Go(func() {
			r, err := e.ingest(s, "h1", 6000, nil, 0)
			if err != nil {
				e.t.Errorf("ingest %d: %v", i, err)
				return
			}
			results[i] = r
		})
	}
	wg.Wait()
	if results[0] == nil || results[1] == nil {
		return
	}
	if results[0].Duplicate == results[1].Duplicate {
		e.t.Errorf("concurrent ingests: duplicates %v and %v, want exactly one written", results[0].Duplicate, results[1].Duplicate)
	}
	if got := e.sources(); len(got) != 1 || got[0].Evidence != 6000 {
		e.t.Errorf("manifest = %+v, want one source with 6000 evidence", got)
	}
}

// A source is new to every run given it until one records its findings:
// only then is it noted as matched, by that run, which a later run does
// not change.
func testTheFirstRunToMatchASourceIsNoted(e *env) {
	a, err := e.ingest(e.store, "h1", 2, nil, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	b, err := e.ingest(e.store, "h2", 2, nil, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	runBy := func() map[int64]string {
		out := map[int64]string{}
		for _, s := range e.sources() {
			out[s.ID] = s.RunID
		}
		return out
	}
	if got := runBy(); got[a.SourceID] != "" || got[b.SourceID] != "" {
		e.t.Fatalf("matched by %v before any run", got)
	}
	for _, run := range []string{"run_1", "run_2"} {
		if _, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: run, Sources: []int64{a.SourceID}}); err != nil {
			e.t.Fatal(err)
		}
	}
	if got := runBy(); got[a.SourceID] != "run_1" || got[b.SourceID] != "" {
		e.t.Errorf("matched by %v, want %d by run_1 and %d by none", got, a.SourceID, b.SourceID)
	}
	found, err := e.store.SourceFind(e.ctx, "h1", "")
	if err != nil || found.RunID != "run_1" {
		e.t.Errorf("SourceFind = %+v, %v; want it matched by run_1", found, err)
	}
}
