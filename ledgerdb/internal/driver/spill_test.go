package driver

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/matcher"
)

// Every row added to a Spill comes back once, whole, in the partition the
// Router gives it, however many rows share a partition and however few
// values the Spill joins at a time: the effects, the records read from the
// ledger, and those two ingests kept (each with its source's URI and
// webhook flag, numbering its strings in an order of its own, and with
// rows of a kind that links to nothing, which the Spill leaves out), added
// between the others.
func TestASpillGivesBackEveryRowInItsPartition(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	at := time.Date(2026, 11, 30, 23, 59, 59, 123456000, time.UTC)
	type origin struct {
		uri     string
		webhook bool
	}
	origins := map[int64]origin{11: {"s3://b/report.csv", false}, 12: {"/data/events.jsonl", true}}
	for _, n := range []int{0, 1, 7, 3000} {
		var effects []ledgerdb.ScopedEffect
		var records []reconcile.Evidence
		var from []int64 // 0: read from the ledger as earlier, 1: as the run's own; else the kept source
		for i := range n {
			e := ledgerdb.ScopedEffect{Effect: reconcile.Effect{Key: fmt.Sprintf("r:charge:%d", i), Provider: "stripe", Step: "charge",
				Status: reconcile.StatusAttempted, CreatedAt: at, Request: []byte(`{"amount":100,"currency":"eur"}`)}}
			if i%3 == 0 {
				e.ExternalID, e.State, e.Since, e.Final = fmt.Sprintf("pi_%d", i/2), reconcile.ClassMissing, at.Add(-time.Hour), true
			}
			effects = append(effects, e)
			for range r.IntN(4) {
				rec := reconcile.Evidence{Provider: "stripe", Kind: reconcile.KindCharge, TxID: fmt.Sprintf("ch_%d", r.IntN(n)),
					PaymentIntent: fmt.Sprintf("pi_%d", r.IntN(n)), EffectKey: e.Key, Amount: reconcile.Money{Minor: -int64(r.IntN(1e9)), Currency: "EUR"},
					Time: at.Add(time.Duration(r.IntN(1e6)) * time.Millisecond), URI: "s3://b/k.csv", Line: 1 + r.IntN(1e6),
					Pending: r.IntN(2) == 0, Failed: r.IntN(3) == 0, Webhook: r.IntN(2) == 0}
				source := []int64{0, 1, 11, 12}[r.IntN(4)]
				if source > 1 && r.IntN(5) == 0 {
					rec.Provider, rec.Amount.Currency = "adyen", "USD"
				}
				if source > 1 && r.IntN(7) == 0 {
					rec.Kind, rec.TxID, rec.PaymentIntent = reconcile.KindFee, "", "" // no line of its own either: it must not join
				}
				records = append(records, rec)
				from = append(from, source)
			}
		}
		// The kept sources are ingested in the order their rows come,
		// numbering their strings as they meet them.
		var k Kept
		keeping := map[int64]*Keeping{}
		writers := map[int64]ledgerdb.SourceWriter{}
		for _, id := range []int64{12, 11} {
			kw, err := k.Keep(&ledgerdb.IngestParams{Keep: true}, time.Microsecond)
			if err != nil {
				t.Fatal(err)
			}
			keeping[id], writers[id] = kw, kw.Over(&countWriter{})
		}
		for i := range records {
			if from[i] > 1 {
				rec := records[i]
				rec.URI, rec.Webhook = "", !origins[from[i]].webhook // what the Spill must not take from the ingest
				if err := writers[from[i]].Evidence(&rec); err != nil {
					t.Fatal(err)
				}
				records[i].URI, records[i].Webhook = origins[from[i]].uri, origins[from[i]].webhook
			}
		}
		for id, kw := range keeping {
			k.Done(kw, &ledgerdb.IngestResult{SourceID: id}, nil)
		}

		s, err := NewSpill()
		if err != nil {
			t.Fatal(err)
		}
		if n == 3000 {
			s.share = 500 // some twenty shares
			s.hold = 4000 // and some fifty moves of the rows
			s.maxKept = 1 // the second source's rows written again
		}
		router := matcher.NewRouter(0)
		for i := range effects {
			if err := s.Effect(&effects[i]); err != nil {
				t.Fatal(err)
			}
			router.Effect(effects[i].Provider, effects[i].Key, effects[i].ExternalID)
		}
		var order []int // the records' indexes in the order added
		read := func(half int) {
			for i := range records {
				if from[i] <= 1 && i%2 == half {
					if err := s.Record(&records[i], from[i] == 1); err != nil {
						t.Fatal(err)
					}
					order = append(order, i)
				}
			}
		}
		read(0)
		taken, rest := k.Take([]int64{11, 12, 13})
		if len(taken) != 2 || len(rest) != 1 {
			t.Fatalf("%d sources taken, %v not kept; want 2 and [13]", len(taken), rest)
		}
		added, err := s.AddKept(taken, []string{string(reconcile.KindCharge), string(reconcile.KindDispute)}, func(id int64) (string, bool, bool) {
			o, ok := origins[id]
			return o.uri, o.webhook, ok
		})
		if err != nil {
			t.Fatal(err)
		}
		before := len(order)
		for _, id := range []int64{11, 12} {
			for i := range records {
				if from[i] == id && records[i].Kind == reconcile.KindCharge {
					order = append(order, i)
				}
			}
		}
		if added != len(order)-before {
			t.Fatalf("%d rows: AddKept added %d records, want %d", n, added, len(order)-before)
		}
		read(1)
		for _, i := range order {
			router.Record(&records[i])
		}
		part, count := router.Partitions(40)
		var sum ledgerdb.MatchSummary
		if err := s.Cut(40, &sum); err != nil || sum.Partitions != count || sum.Effects != len(effects) || sum.Records != len(order) {
			t.Fatalf("%d rows: Cut says %+v, %v; want %d partitions, %d effects, %d records", n, sum, err, count, len(effects), len(order))
		}
		want := make([]ledgerdb.Partition, count)
		for i := range want {
			want[i].Index, want[i].Count = i, count
		}
		for i := range effects {
			p := &want[part[i]]
			p.Effects = append(p.Effects, effects[i])
		}
		for j, i := range order {
			p := &want[part[len(effects)+j]]
			if from[i] != 0 {
				p.Evidence = append(p.Evidence, records[i])
			} else {
				p.Earlier = append(p.Earlier, records[i])
			}
		}
		for i := range count {
			p, err := s.Partition(i)
			if err != nil {
				t.Fatal(err)
			}
			// A kept record also says where the ledger holds it, with its raw
			// kind and fee (NamedRecords, sortOwn): not what this test adds.
			ledgerOnly := cmpopts.IgnoreFields(reconcile.Evidence{}, "SourceID", "Seq", "RawKind", "Fee")
			if diff := cmp.Diff(&want[i], p, cmpopts.IgnoreUnexported(ledgerdb.Partition{}), ledgerOnly); diff != "" {
				t.Fatalf("%d rows: partition %d (-added +read):\n%s", n, i, diff)
			}
		}
		s.Close()
	}
}

// A time comes back as it went in, beyond the years a count of
// nanoseconds since 1970 holds (1678 to 2262): a report may date a row
// 9999-12-31, and a wrong time there moves it across a cutoff.
func TestASpillKeepsEveryTime(t *testing.T) {
	times := []time.Time{{}, time.Unix(0, 0).UTC(), time.Unix(-1, 500).UTC(),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(1000, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2262, 4, 12, 0, 0, 0, 0, time.UTC), time.Date(1677, 9, 21, 0, 0, 0, 0, time.UTC)}
	s, err := NewSpill()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := ledgerdb.ScopedEffect{Effect: reconcile.Effect{Key: "r:charge:1", Provider: "stripe", Step: "charge", Status: reconcile.StatusAttempted}}
	if err := s.Effect(&e); err != nil {
		t.Fatal(err)
	}
	for i, at := range times {
		rec := reconcile.Evidence{Provider: "stripe", Kind: reconcile.KindCharge, TxID: "ch_1", EffectKey: e.Key, Time: at, Line: i + 2}
		if err := s.Record(&rec, true); err != nil {
			t.Fatal(err)
		}
	}
	var sum ledgerdb.MatchSummary
	if err := s.Cut(10, &sum); err != nil || sum.Partitions != 1 {
		t.Fatalf("Cut: %+v, %v", sum, err)
	}
	p, err := s.Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	for i, at := range times {
		if got := p.Evidence[i].Time; got != at {
			t.Errorf("record %d: time %v read back as %v", i, at, got)
		}
	}
}

// What a run keeps of a partition (the key of an effect found wanting)
// holds that row alone, not the partition it was read with: a night's
// findings come from every partition, and holding those would hold the
// whole night.
func TestAPartitionsRowsOutliveItAlone(t *testing.T) {
	s, err := NewSpill()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 20000 {
		e := ledgerdb.ScopedEffect{Effect: reconcile.Effect{Key: fmt.Sprintf("r:charge:%05d%0200d", i, 0), Provider: "stripe", Step: "charge",
			Status: reconcile.StatusAttempted, ExternalID: fmt.Sprintf("pi_%d", i)}}
		if err := s.Effect(&e); err != nil {
			t.Fatal(err)
		}
	}
	var sum ledgerdb.MatchSummary
	if err := s.Cut(1<<20, &sum); err != nil || sum.Partitions != 1 || sum.Spilled < 4<<20 {
		t.Fatalf("Cut: %+v, %v; want one partition of more than 4 MB", sum, err)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	p, err := s.Partition(0)
	if err != nil {
		t.Fatal(err)
	}
	kept := []string{p.Effects[7].Key, p.Effects[7].ExternalID}
	p = nil
	if held := int64(heap()) - int64(before); held > 1<<20 {
		t.Errorf("two strings of a partition hold %d bytes after it is gone; want the row's few hundred", held)
	}
	runtime.KeepAlive(kept)
}

// TestNamedRecordsComeBackAsAdded: a list of named records, held in one
// buffer, gives each back as added, in order: what a partition holds of
// it, its URI, and where the ledger holds it with its raw kind and fee.
func TestNamedRecordsComeBackAsAdded(t *testing.T) {
	var want []reconcile.Evidence
	var l NamedRecords
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i := range 1000 {
		r := reconcile.Evidence{URI: fmt.Sprintf("s3://bucket/night-%d.csv", i%3), Line: i * 7919 % 100003, TxID: fmt.Sprintf("ch_%d", i*31),
			Provider: []string{"stripe", "adyen"}[i%2], Kind: reconcile.KindCharge, RawKind: fmt.Sprint("raw ", i%4),
			Amount: reconcile.Money{Minor: int64(i*i) - 5000, Currency: "EUR"}, Fee: int64(i % 7), Time: t0.Add(time.Duration(i) * time.Minute),
			Pending: i%3 == 0, Failed: i%7 == 0, PaymentIntent: fmt.Sprint("pi_", i%9), ParentTxID: fmt.Sprint("ch_p", i%11),
			SourceID: int64(i % 3), Seq: i * 13}
		if i%4 != 0 {
			r.EffectKey = strings.Repeat("k", i%300) // longer than a one-byte length
		}
		if i%5 == 0 {
			r.TxID, r.ParentEffectKey, r.Time = "", "r:charge:1", time.Time{}
		}
		want = append(want, r)
		l.Add(&r)
	}
	if l.Len() != len(want) {
		t.Fatalf("Len %d, %d added", l.Len(), len(want))
	}
	var got []reconcile.Evidence
	for r := range l.All() {
		c := *r
		c.URI, c.TxID, c.EffectKey = strings.Clone(r.URI), strings.Clone(r.TxID), strings.Clone(r.EffectKey)
		c.ParentEffectKey, c.PaymentIntent, c.ParentTxID = strings.Clone(r.ParentEffectKey), strings.Clone(r.PaymentIntent), strings.Clone(r.ParentTxID)
		got = append(got, c)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("came back otherwise (-added +given back):\n%s", diff)
	}
	var none NamedRecords
	for r := range none.All() {
		t.Fatalf("an empty list gave %v", r)
	}
}
