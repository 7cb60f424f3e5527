package ledgerdbtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"reconcile"
	"reconcile/ledgerdb"
)

// stepKinds is the table matcher.StepKinds gives.
var stepKinds = map[string]reconcile.Kind{"charge": reconcile.KindCharge, "capture": reconcile.KindCharge,
	"refund": reconcile.KindRefund, "compensate": reconcile.KindRefund, "payout": reconcile.KindPayout}

// ingestEvidence writes a source of the given records and returns its id.
func (e *env) ingestEvidence(hash, uri string, evs []reconcile.Evidence) int64 {
	e.t.Helper()
	return e.ingestResult(hash, uri, evs).SourceID
}

// ingestResult is ingestEvidence's SourceIngest's result. Each source
// goes in as a large input would, its indexes deferred and built after
// it, so that the matching finds earlier evidence through rebuilt ones.
func (e *env) ingestResult(hash, uri string, evs []reconcile.Evidence) *ledgerdb.IngestResult {
	e.t.Helper()
	if _, err := e.store.IndexesDefer(e.ctx, largeInput); err != nil {
		e.t.Fatal(err)
	}
	defer e.buildIndexes()
	res, err := e.store.SourceIngest(e.ctx, &ledgerdb.IngestParams{URI: uri}, func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
		for i := range evs {
			evs[i].URI = uri
			if evs[i].Line == 0 {
				evs[i].Line = i + 2
			}
			if err := w.Evidence(&evs[i]); err != nil {
				return nil, err
			}
		}
		return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Format: "test", Hash: hash, Rows: len(evs), Evidence: len(evs)}}, nil
	})
	if err != nil || res.Duplicate {
		e.t.Fatalf("SourceIngest(%s) = %+v, %v", hash, res, err)
	}
	return res
}

// partitions runs PartitionMatch over the given sources and returns what
// each partition held; match, when set, answers for each.
func (e *env) partitions(size int, sources []int64, match func(*ledgerdb.Partition) []ledgerdb.Confirmation) ([]*ledgerdb.Partition, *ledgerdb.MatchSummary) {
	e.t.Helper()
	var (
		mu    sync.Mutex // match is called from several goroutines
		parts []*ledgerdb.Partition
	)
	// As a run matches: what the ledger leaves the next run goes on
	// beside, and is waited for.
	sum, err := e.store.PartitionMatch(e.ctx, &ledgerdb.MatchParams{RunID: "run_m", Sources: sources, Kinds: stepKinds, PartitionSize: size, MarkBeside: true},
		func(p *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
			mu.Lock()
			defer mu.Unlock()
			parts = append(parts, p)
			if match == nil {
				return nil, nil
			}
			return match(p), nil
		})
	if err == nil && sum.Marked != nil {
		err = sum.Marked()
	}
	if err != nil {
		e.t.Fatalf("PartitionMatch: %v", err)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].Index < parts[j].Index })
	all, err := e.store.SourceList(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	earlier := slices.ContainsFunc(all, func(s ledgerdb.SourceRecord) bool { return !slices.Contains(sources, s.ID) })
	if sum.NoEarlier == earlier {
		e.t.Errorf("PartitionMatch over %d of %d sources says NoEarlier %v", len(sources), len(all), sum.NoEarlier)
	}
	return parts, sum
}

// scope returns the keys of the effects a run over the given sources
// classifies.
func (e *env) scope(sources ...int64) []string {
	e.t.Helper()
	return e.scopeMatching(nil, sources...)
}

// scopeMatching is scope with match, when set, answering for each
// partition (partitions).
func (e *env) scopeMatching(match func(*ledgerdb.Partition) []ledgerdb.Confirmation, sources ...int64) []string {
	e.t.Helper()
	parts, _ := e.partitions(0, sources, match)
	var keys []string
	for _, p := range parts {
		for _, x := range p.Effects {
			keys = append(keys, x.Key)
		}
	}
	sort.Strings(keys)
	return keys
}

func charge(key, provider, step string, status reconcile.Status, externalID string, at time.Time) reconcile.Effect {
	return reconcile.Effect{Key: key, RunID: "r", Step: step, Provider: provider, Status: status, ExternalID: externalID, CreatedAt: at,
		Request: json.RawMessage(`{"amount": 1000, "currency": "eur", "metadata": {"effect_key": "` + key + `"}}`)}
}

// The ledger puts every record in the partition of the effects it names:
// by key, or by its id, payment intent, parent or modification reference
// against their external ids, whatever the kind (the matcher decides the
// links, inside the partition); effects and records that name one another
// stay together however small the partitions, records of one transaction
// stay together, earlier evidence of an effect in scope comes along, and
// what names nothing in scope is on its own.
func testMatchPartitionsKeepWhatRelatesTogether(e *env) {
	t0 := e.clock.Now()
	effects := []reconcile.Effect{
		charge("r:charge:1", "stripe", "charge", reconcile.StatusAttempted, "", t0),
		charge("r:charge:2", "stripe", "charge", reconcile.StatusConfirmed, "pi_2", t0),
		charge("r:refund:3", "stripe", "refund", reconcile.StatusConfirmed, "re_3", t0),
		charge("r:charge:4", "stripe", "charge", reconcile.StatusConfirmed, "ch_4", t0),
		charge("r:payout:5", "adyen", "payout", reconcile.StatusConfirmed, "PSP5", t0),
		charge("r:charge:6", "stripe", "charge", reconcile.StatusAttempted, "", t0),
		charge("r:charge:7", "stripe", "charge", reconcile.StatusAttempted, "", t0),
		charge("r:charge:8", "stripe", "charge", reconcile.StatusAttempted, "", t0),
		charge("r:charge:9", "stripe", "charge", reconcile.StatusAttempted, "", t0),
		charge("r:charge:10", "stripe", "charge", reconcile.StatusAttempted, "", t0),
		charge("r:charge:11", "stripe", "charge", reconcile.StatusAttempted, "", t0),
		charge("r:charge:12", "stripe", "charge", reconcile.StatusConfirmed, "pi_12", t0),
		charge("r:charge:13", "stripe", "charge", reconcile.StatusConfirmed, "pi_13", t0),
		charge("r:charge:14", "stripe", "charge", reconcile.StatusAbandoned, "pi_14", t0),
		charge("r:charge:15", "adyen", "charge", reconcile.StatusConfirmed, "pi_2", t0),
		charge("r:charge:16a", "stripe", "charge", reconcile.StatusConfirmed, "pi_16", t0),
		charge("r:charge:16b", "stripe", "refund", reconcile.StatusConfirmed, "pi_16", t0),
		charge("r:notify:17", "ses", "notify", reconcile.StatusAttempted, "", t0),
		charge("r:refund:18", "adyen", "refund", reconcile.StatusConfirmed, "MOD18", t0),
		charge("r:charge:19", "stripe", "charge", reconcile.StatusConfirmed, "pi_19", t0),
	}
	if err := e.store.EffectLoad(e.ctx, effects); err != nil {
		e.t.Fatal(err)
	}
	// r:charge:12, 13 and 19 are confirmed and final: 12 is named again by
	// key, 19 as a refund's parent.
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_0"}); err != nil {
		e.t.Fatal(err)
	}
	var final []reconcile.Discrepancy
	for _, k := range []string{"r:charge:12", "r:charge:13", "r:charge:19"} {
		final = append(final, reconcile.Discrepancy{Class: reconcile.ClassConfirmed, EffectKey: k, Provider: "stripe",
			Transactions: []reconcile.Transaction{{Provider: "stripe", ID: "x"}}})
	}
	if _, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_0", Discrepancies: final}); err != nil {
		e.t.Fatal(err)
	}
	ev := func(provider, id string, kind reconcile.Kind, key, intent, parent string) reconcile.Evidence {
		return reconcile.Evidence{Provider: provider, TxID: id, Kind: kind, RawKind: string(kind), Amount: reconcile.Money{Minor: 1000, Currency: "EUR"},
			Time: t0, EffectKey: key, PaymentIntent: intent, ParentTxID: parent, Description: "d", Metadata: map[string]string{"k": "v"}, Raw: "raw " + id}
	}
	e.ingestEvidence("h0", "old.csv", []reconcile.Evidence{
		ev("stripe", "ch_11", reconcile.KindCharge, "r:charge:11", "", ""),  // names an effect in scope: read
		ev("stripe", "ch_4", reconcile.KindCharge, "", "", ""),              // an external id in scope: read, and one transaction with this run's ch_4
		ev("stripe", "ch_old", reconcile.KindCharge, "r:charge:13", "", ""), // names an effect out of scope: not read
		ev("stripe", "ch_1", reconcile.KindCharge, "", "", ""),              // names nothing in scope: not read
	})
	refund19 := ev("stripe", "re_19", reconcile.KindRefund, "", "", "")
	refund19.ParentEffectKey = "r:charge:19" // and no id of the charge's
	run := e.ingestEvidence("h1", "new.csv", []reconcile.Evidence{
		ev("stripe", "ch_1", reconcile.KindCharge, "r:charge:1", "pi_1", ""),
		ev("stripe", "ch_1", reconcile.KindCharge, "", "", ""),               // the same transaction in a webhook
		ev("stripe", "ch_2", reconcile.KindCharge, "", "pi_2", ""),           // by payment intent, not adyen's pi_2
		ev("stripe", "re_3", reconcile.KindRefund, "r:charge:1", "pi_1", ""), // r:charge:1 makes no refunds: by its id
		ev("stripe", "ch_4", reconcile.KindCharge, "", "", ""),               // by its own id
		ev("adyen", "PSP5b/MOD", reconcile.KindPayout, "", "", "PSP5"),       // by its parent
		ev("stripe", "ch_6a", reconcile.KindCharge, "r:charge:6", "", ""),
		ev("stripe", "ch_6b", reconcile.KindCharge, "r:charge:6", "", ""),
		ev("stripe", "ch_7", reconcile.KindCharge, "r:charge:8", "", ""), // two keys: the smallest wins
		ev("stripe", "ch_7", reconcile.KindCharge, "r:charge:7", "", ""),
		ev("stripe", "", reconcile.KindCharge, "", "pi_9", ""), // its charge's id comes from the record below
		ev("stripe", "ch_9", reconcile.KindCharge, "r:charge:9", "pi_9", ""),
		ev("stripe", "", reconcile.KindCharge, "r:charge:10", "", ""), // a record of its own, by key
		ev("stripe", "", reconcile.KindCharge, "", "", ""),            // a record of its own, linking to nothing
		ev("stripe", "ch_u", reconcile.KindCharge, "", "", ""),        // unexpected
		ev("stripe", "ch_12", reconcile.KindCharge, "r:charge:12", "", ""),
		ev("stripe", "ch_14", reconcile.KindCharge, "", "pi_14", ""),
		ev("stripe", "ch_16", reconcile.KindCharge, "", "pi_16", ""),     // pi_16 is also a refund's: the effect that makes charges
		ev("stripe", "", reconcile.KindFee, "r:charge:1", "", ""),        // fees link to nothing and are not read
		ev("adyen", "PSP18/MOD18", reconcile.KindRefund, "", "", "PSP0"), // by its modification reference alone
		refund19,
	})
	parts, sum := e.partitions(1, []int64{run}, nil)

	want := map[string][]string{ // the effects of a partition → its records (id@uri:line)
		"r:charge:1 r:refund:3": {"ch_1@new.csv:2", "ch_1@new.csv:3", "re_3@new.csv:5"}, "r:charge:2": {"ch_2@new.csv:4"},
		"r:charge:4": {"ch_4@new.csv:6", "ch_4@old.csv:3"}, "r:payout:5": {"PSP5b/MOD@new.csv:7"},
		"r:charge:6": {"ch_6a@new.csv:8", "ch_6b@new.csv:9"}, "r:charge:7 r:charge:8": {"ch_7@new.csv:10", "ch_7@new.csv:11"},
		"r:charge:9": {"@new.csv:12", "ch_9@new.csv:13"}, "r:charge:10": {"@new.csv:14"}, "r:charge:11": {"ch_11@old.csv:2"},
		"r:charge:12": {"ch_12@new.csv:17"}, "r:charge:14": {"ch_14@new.csv:18"}, "r:charge:15": nil,
		"r:charge:16a r:charge:16b": {"ch_16@new.csv:19"}, "r:notify:17": nil, "r:refund:18": {"PSP18/MOD18@new.csv:21"},
		"r:charge:19": {"re_19@new.csv:22"},
	}
	got := map[string][]string{}
	var alone []string // records in partitions without an effect
	for i, p := range parts {
		if p.Index != i || p.Count != len(parts) {
			e.t.Errorf("partition %d says it is %d of %d", i, p.Index, p.Count)
		}
		var recs []string
		for _, x := range append(append([]reconcile.Evidence{}, p.Evidence...), p.Earlier...) {
			recs = append(recs, fmt.Sprintf("%s@%s:%d", x.TxID, x.URI, x.Line))
			if x.Raw != "" || x.Metadata != nil || x.Description != "" || x.RawKind != "" || x.SourceHash != "" {
				e.t.Errorf("record %s is not compact: %+v", x.TxID, x)
			}
		}
		for _, x := range p.Earlier {
			if x.URI != "old.csv" {
				e.t.Errorf("record %s@%s given as earlier evidence", x.TxID, x.URI)
			}
		}
		sort.Strings(recs)
		var keys []string
		for _, x := range p.Effects {
			keys = append(keys, x.Key)
		}
		sort.Strings(keys)
		if len(keys) == 0 {
			alone = append(alone, recs...)
		} else {
			got[strings.Join(keys, " ")] = recs
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("records by effect (-want +got):\n%s", diff)
	}
	sort.Strings(alone)
	if diff := cmp.Diff([]string{"@new.csv:15", "ch_u@new.csv:16"}, alone); diff != "" {
		e.t.Errorf("records that link to nothing (-want +got):\n%s", diff)
	}
	if sum.Effects != 19 || sum.Records != 22 || sum.Partitions != len(parts) {
		e.t.Errorf("summary = %+v, want 19 effects, 22 records, %d partitions", sum, len(parts))
	}
}

// A closed effect that the run's records name back into scope comes with
// its earlier records, each once, also one that names an open effect in
// scope as well (read for either).
func testMatchNamedBackComesWithItsEarlierRecordsOnce(e *env) {
	t0 := e.clock.Now()
	if err := e.store.EffectLoad(e.ctx, []reconcile.Effect{
		charge("r:charge:20", "stripe", "charge", reconcile.StatusConfirmed, "ch_20", t0),
		charge("r:charge:21", "stripe", "charge", reconcile.StatusAttempted, "pi_21", t0),
	}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_0"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_0", Discrepancies: []reconcile.Discrepancy{{
		Class: reconcile.ClassConfirmed, EffectKey: "r:charge:20", Provider: "stripe",
		Transactions: []reconcile.Transaction{{Provider: "stripe", ID: "ch_20"}}}}}); err != nil {
		e.t.Fatal(err)
	}
	ev := func(id, key, intent string) reconcile.Evidence {
		return reconcile.Evidence{Provider: "stripe", TxID: id, Kind: reconcile.KindCharge, RawKind: "charge",
			Amount: reconcile.Money{Minor: 1000, Currency: "EUR"}, Time: t0, EffectKey: key, PaymentIntent: intent}
	}
	e.ingestEvidence("h0", "old.csv", []reconcile.Evidence{
		ev("ch_20", "r:charge:20", "pi_21"), // names the closed effect and, by payment intent, the open one
		ev("ch_20", "", ""),                 // the closed effect's transaction, by its id alone
	})
	run := e.ingestEvidence("h1", "new.csv", []reconcile.Evidence{ev("ch_20x", "r:charge:20", "")}) // a late duplicate
	parts, _ := e.partitions(0, []int64{run}, nil)
	var keys, recs []string
	for _, p := range parts {
		for _, x := range p.Effects {
			keys = append(keys, x.Key)
		}
		for _, x := range append(append([]reconcile.Evidence{}, p.Evidence...), p.Earlier...) {
			recs = append(recs, fmt.Sprintf("%s@%s:%d", x.TxID, x.URI, x.Line))
		}
	}
	sort.Strings(keys)
	sort.Strings(recs)
	if diff := cmp.Diff([]string{"r:charge:20", "r:charge:21"}, keys); diff != "" {
		e.t.Errorf("effects in scope (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ch_20@old.csv:2", "ch_20@old.csv:3", "ch_20x@new.csv:2"}, recs); diff != "" {
		e.t.Errorf("records (-want +got):\n%s", diff)
	}
}

// An effect in scope comes with what the matcher reads of it: the amount
// and currency of its request, and the state the previous run left.
func testMatchPartitionsGiveEffectsAsTheMatcherReadsThem(e *env) {
	t0 := e.clock.Now()
	a := charge("r:charge:0", "stripe", "charge", reconcile.StatusAttempted, "", t0)
	b := charge("r:charge:1", "stripe", "refund", reconcile.StatusConfirmed, "re_1", t0)
	b.Request = json.RawMessage(`{"charge": "ch_1"}`)
	c := charge("r:charge:2", "stripe", "charge", reconcile.StatusAttempted, "", t0)
	c.Request = json.RawMessage(`["not", "an", "object"]`)
	// A member named twice counts as its last (as jsonb keeps it); names
	// are exact, and a nested amount is not the request's.
	d := charge("r:charge:3", "stripe", "charge", reconcile.StatusAttempted, "", t0)
	d.Request = json.RawMessage(`{"amount": 1, "AMOUNT": 7, "amount": 2500, "currency": "eur", "meta": {"amount": 9}, "currency": "usd"}`)
	if err := e.store.EffectLoad(e.ctx, []reconcile.Effect{a, b, c, d}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_0"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_0",
		Discrepancies: []reconcile.Discrepancy{{Class: reconcile.ClassMissing, EffectKey: "r:charge:0", Provider: "stripe"}}}); err != nil {
		e.t.Fatal(err)
	}
	parts, _ := e.partitions(0, nil, nil)
	if len(parts) != 1 || len(parts[0].Effects) != 4 {
		e.t.Fatalf("partitions = %+v, want one with four effects", parts)
	}
	got := map[string]ledgerdb.ScopedEffect{}
	for _, x := range parts[0].Effects {
		got[x.Key] = x
	}
	for key, want := range map[string]struct {
		request string
		state   reconcile.Class
		status  reconcile.Status
		ext     string
	}{
		"r:charge:0": {`{"amount": 1000, "currency": "eur"}`, reconcile.ClassMissing, reconcile.StatusAttempted, ""},
		"r:charge:1": {`{"amount": null, "currency": null}`, "", reconcile.StatusConfirmed, "re_1"},
		"r:charge:2": {`["not", "an", "object"]`, "", reconcile.StatusAttempted, ""},
		"r:charge:3": {`{"amount": 2500, "currency": "usd"}`, "", reconcile.StatusAttempted, ""},
	} {
		x := got[key]
		jsonEqual(e.t, x.Request, want.request)
		if x.State != want.state || x.Final || x.Status != want.status || x.ExternalID != want.ext || !x.CreatedAt.Equal(t0) || x.Provider != "stripe" {
			e.t.Errorf("%s = %+v; want state %q, status %s, external id %q, created %v", key, x, want.state, want.status, want.ext, t0)
		}
	}
}

// Partitions hold about the size asked for: that many effects, or groups
// of records that name no effect; every effect in scope is in exactly one.
func testMatchPartitionsAreBounded(e *env) {
	var effects []reconcile.Effect
	var evs []reconcile.Evidence
	for i := range 23 {
		key := fmt.Sprintf("r:charge:%02d", i)
		effects = append(effects, charge(key, "stripe", "charge", reconcile.StatusAttempted, "", e.clock.Now()))
		evs = append(evs, reconcile.Evidence{Provider: "stripe", TxID: fmt.Sprintf("ch_%02d", i), Kind: reconcile.KindCharge, EffectKey: key})
		evs = append(evs, reconcile.Evidence{Provider: "stripe", TxID: fmt.Sprintf("ch_u%02d", i), Kind: reconcile.KindCharge})
	}
	if err := e.store.EffectLoad(e.ctx, effects); err != nil {
		e.t.Fatal(err)
	}
	src := e.ingestEvidence("h1", "s.csv", evs)
	parts, sum := e.partitions(5, []int64{src}, nil)
	var keys []string
	unlinked := 0
	for _, p := range parts {
		linked := 0
		for _, x := range p.Effects {
			keys = append(keys, x.Key)
		}
		for _, x := range p.Evidence {
			if x.EffectKey == "" {
				unlinked++
			} else {
				linked++
			}
		}
		if len(p.Effects) > 5 || len(p.Evidence)-linked > 5 || linked != len(p.Effects) {
			e.t.Errorf("partition %d: %d effects, %d records (%d linked), want at most 5 effects and 5 records linking to nothing", p.Index, len(p.Effects), len(p.Evidence), linked)
		}
	}
	slices.Sort(keys)
	if len(keys) != 23 || len(slices.Compact(keys)) != 23 || unlinked != 23 {
		e.t.Errorf("effects across partitions = %v (%d records linking to nothing); want all 23 once", keys, unlinked)
	}
	if sum.Partitions < 6 || sum.Partitions != len(parts) {
		e.t.Errorf("%d partitions (summary %d), want at least 6", len(parts), sum.Partitions)
	}
}

// The confirmations of a partition are recorded before the next one is
// read: the state confirmed and final (since kept when it was confirmed
// already, whoever wrote a state meanwhile), an attempted effect confirmed
// with the transaction's id unless the application changed it meanwhile.
// An error stops the matching.
func testMatchPartitionsRecordConfirmations(e *env) {
	t0 := e.clock.Now()
	effects := []reconcile.Effect{
		charge("r:charge:0", "stripe", "charge", reconcile.StatusAttempted, "", t0),
		charge("r:charge:1", "stripe", "charge", reconcile.StatusConfirmed, "pi_1", t0),
		charge("r:charge:2", "stripe", "charge", reconcile.StatusConfirmed, "pi_2", t0),
		charge("r:charge:3", "stripe", "charge", reconcile.StatusAttempted, "", t0),
	}
	if err := e.store.EffectLoad(e.ctx, effects); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_0"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_0", Discrepancies: []reconcile.Discrepancy{
		{Class: reconcile.ClassMissing, EffectKey: "r:charge:1", Provider: "stripe"},
		{Class: reconcile.ClassConfirmed, EffectKey: "r:charge:2", Provider: "stripe", Transactions: []reconcile.Transaction{{ID: "ch_2"}}},
	}}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.EffectAbandon(e.ctx, &ledgerdb.AbandonParams{Key: "r:charge:3"}); err != nil { // the application, meanwhile
		e.t.Fatal(err)
	}
	// r:charge:2 is final: a new record names it.
	src := e.ingestEvidence("h1", "s.csv", []reconcile.Evidence{{Provider: "stripe", TxID: "ch_2", Kind: reconcile.KindCharge, EffectKey: "r:charge:2"}})
	e.clock.Advance(Lease)
	now := e.clock.Now()
	_, sum := e.partitions(0, []int64{src}, func(p *ledgerdb.Partition) []ledgerdb.Confirmation {
		// Another writer gives r:charge:0, read without a state, one.
		other := e.another()
		if _, err := other.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_x"}); err != nil {
			e.t.Fatal(err)
		}
		if _, err := other.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_x",
			Discrepancies: []reconcile.Discrepancy{{Class: reconcile.ClassPending, EffectKey: "r:charge:0", Provider: "stripe"}}}); err != nil {
			e.t.Fatal(err)
		}
		return []ledgerdb.Confirmation{{Key: "r:charge:0", ExternalID: "pi_0"}, {Key: "r:charge:1"}, {Key: "r:charge:2"}, {Key: "r:charge:3", ExternalID: "pi_3"}}
	})
	if sum.Confirmed != 1 {
		e.t.Errorf("PartitionMatch confirmed %d attempted effects, want 1", sum.Confirmed)
	}
	for key, want := range map[string][2]string{"r:charge:0": {"confirmed", "pi_0"}, "r:charge:1": {"confirmed", "pi_1"},
		"r:charge:2": {"confirmed", "pi_2"}, "r:charge:3": {"abandoned", ""}} {
		if got := e.effect(key); string(got.Status) != want[0] || got.ExternalID != want[1] {
			e.t.Errorf("%s = %s %q, want %s %q", key, got.Status, got.ExternalID, want[0], want[1])
		}
	}
	if got := e.effect("r:charge:0"); !got.ConfirmedAt.Equal(now) {
		e.t.Errorf("confirmed_at = %v, want %v", got.ConfirmedAt, now)
	}
	states, err := e.store.EffectStateGetMany(e.ctx, []string{"r:charge:0", "r:charge:1", "r:charge:2"})
	if err != nil {
		e.t.Fatal(err)
	}
	for key, since := range map[string]time.Time{"r:charge:0": now, "r:charge:1": now, "r:charge:2": t0} {
		st := states[key]
		if st.Class != reconcile.ClassConfirmed || !st.Final || st.RunID != "run_m" || !st.ClassifiedAt.Equal(now) || !st.Since.Equal(since) {
			e.t.Errorf("state of %s = %+v; want confirmed, final, by run_m at %v, since %v", key, st, now, since)
		}
	}
	if got := e.scope(); len(got) != 0 {
		e.t.Errorf("scope after the confirmations = %v, want none", got)
	}

	boom := errors.New("boom")
	e.record("r:charge:9", chargeReq)
	_, err = e.store.PartitionMatch(e.ctx, &ledgerdb.MatchParams{RunID: "run_n", Kinds: stepKinds},
		func(*ledgerdb.Partition) ([]ledgerdb.Confirmation, error) { return nil, boom })
	if !errors.Is(err, boom) {
		e.t.Errorf("PartitionMatch with a failing match: err = %v, want it returned", err)
	}
}

// Coverage says which providers and kinds the given sources report on,
// and the latest time of each.
//
// SourceIngest gives the same coverage of what it wrote, as stored: to
// the ledger's precision (a time of a nanosecond past the millisecond is
// cut to the microsecond on PostgreSQL, to the millisecond on SQLite).
func testCoverage(e *env) {
	t0 := e.clock.Now()
	res := e.ingestResult("h1", "a.csv", []reconcile.Evidence{
		{Provider: "stripe", TxID: "ch_1", Kind: reconcile.KindCharge, Time: t0},
		{Provider: "stripe", TxID: "ch_2", Kind: reconcile.KindCharge, Time: t0.Add(time.Hour + 1234567)},
		{Provider: "stripe", TxID: "re_1", Kind: reconcile.KindRefund, Time: t0},
		{Provider: "stripe", Kind: reconcile.KindFee},
	})
	a := res.SourceID
	b := e.ingestEvidence("h2", "b.csv", []reconcile.Evidence{{Provider: "adyen", TxID: "P/M", Kind: reconcile.KindCharge, Time: t0.Add(2 * time.Hour)}})
	got, err := e.store.CoverageList(e.ctx, []int64{a})
	if err != nil {
		e.t.Fatal(err)
	}
	if diff := cmp.Diff(got, res.Coverage); diff != "" {
		e.t.Errorf("SourceIngest's coverage against Coverage(a) (-read back +given):\n%s", diff)
	}
	if end := got[0].End; end.Before(t0.Add(time.Hour+time.Millisecond)) || !end.Before(t0.Add(time.Hour+1234567)) {
		e.t.Errorf("Coverage(a) ends at %s, want within the microsecond or the millisecond before %s", end, t0.Add(time.Hour+1234567))
	}
	got[0].End = t0.Add(time.Hour)
	want := []ledgerdb.CoverageEnd{{Provider: "stripe", Kind: reconcile.KindCharge, End: t0.Add(time.Hour)},
		{Provider: "stripe", Kind: reconcile.KindFee}, {Provider: "stripe", Kind: reconcile.KindRefund, End: t0}}
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("Coverage(a) (-want +got):\n%s", diff)
	}
	if got, err := e.store.CoverageList(e.ctx, []int64{a, b}); err != nil || len(got) != 4 || got[0].Provider != "adyen" {
		e.t.Errorf("Coverage(a, b) = %+v, %v; want adyen's charges first, then stripe's", got, err)
	}
	if got, err := e.store.CoverageList(e.ctx, nil); err != nil || len(got) != 0 {
		e.t.Errorf("Coverage() = %+v, %v; want nothing", got, err)
	}
}

// RejectedListBySource gives a source's rejected rows, as SourceGetRows does.
func testRejectedRows(e *env) {
	rejected := []reconcile.Rejected{{URI: "s.csv", Line: 9, Reason: "bad amount", Raw: "ch_9,x"}, {URI: "s.csv", Line: 12, Reason: "no id", Raw: ",1"}}
	res, err := e.ingest(e.store, "h1", 2, rejected, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	got, err := e.store.RejectedListBySource(e.ctx, res.SourceID, 0)
	if diff := cmp.Diff(rejected, got); err != nil || diff != "" {
		e.t.Errorf("RejectedListBySource (%v) (-want +got):\n%s", err, diff)
	}
	if first, err := e.store.RejectedListBySource(e.ctx, res.SourceID, 1); err != nil || len(first) != 1 || len(got) < 2 || first[0] != got[0] {
		e.t.Errorf("RejectedListBySource with a limit of 1 = %v, %v; want the first of %d", first, err, len(got))
	}
	if _, err := e.store.RejectedListBySource(e.ctx, res.SourceID+1, 0); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("RejectedListBySource of an unknown source: err = %v, want ErrNotFound", err)
	}
}

// A run's result is kept whole, whatever text its strings hold.
func testRunResult(e *env) {
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_1"}); err != nil {
		e.t.Fatal(err)
	}
	result := "{\"reason\": \"a \\\"quoted\\\" C:\\\\path,\\ttab and\\nline\",\n\t\"inputs\": [{\"uri\": \"s3://b/k\\u00e9\"}], \"n\": 12345678901234}"
	r, err := e.store.RunFinish(e.ctx, &ledgerdb.FinishRunParams{ID: "run_1", Status: reconcile.RunStatusSucceeded, Result: json.RawMessage(result)})
	if err != nil || r.Status != reconcile.RunStatusSucceeded || r.ID != "run_1" {
		e.t.Fatalf("RunFinish = %+v, %v", r, err)
	}
	jsonEqual(e.t, r.Result, result)
	got, err := e.store.RunGet(e.ctx, "run_1")
	if err != nil {
		e.t.Fatal(err)
	}
	jsonEqual(e.t, got.Result, result)
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_2"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.RunFinish(e.ctx, &ledgerdb.FinishRunParams{ID: "run_2", Status: reconcile.RunStatusFailed}); err != nil {
		e.t.Fatal(err)
	}
	if got, err := e.store.RunGet(e.ctx, "run_2"); err != nil || got.Result != nil {
		e.t.Errorf("Run(run_2) = %+v, %v; want no result", got, err)
	}
}

// The run lease is renewed, through the run's own handle, while that
// handle matches: a run longer than its lease does not lose it to its own
// work (SQLite's handle has one connection, which the matching holds).
func testRenewWhileMatching(e *env) {
	c, err := e.store.ClaimAcquire(e.ctx, &ledgerdb.ClaimParams{Key: "lease:run", Owner: "run:1", TTL: Lease})
	if err != nil || c.Outcome != reconcile.ClaimOutcomeClaimed {
		e.t.Fatalf("Claim = %+v, %v", c, err)
	}
	src := e.ingestEvidence("h1", "s.csv", []reconcile.Evidence{{Provider: "stripe", TxID: "ch_1", Kind: reconcile.KindCharge}})
	e.partitions(0, []int64{src}, func(*ledgerdb.Partition) []ledgerdb.Confirmation {
		e.clock.Advance(Lease / 2)
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second) // a safety net: the renewal must not wait for the matching
		defer cancel()
		w, err := e.store.ClaimRenew(ctx, &ledgerdb.RenewParams{Key: "lease:run", Fence: c.Claim.Fence, TTL: Lease})
		if err != nil || w.Outcome != reconcile.WriteOutcomeWritten || !w.Claim.LeaseUntil.Equal(e.clock.Now().Add(Lease)) {
			e.t.Errorf("Renew while matching = %+v, %v; want written, until %s", w, err, e.clock.Now().Add(Lease))
		}
		return nil
	})
}

// A run's own records come to its partitions as its ingest wrote them
// (IngestParams.Keep), without reading them back, and exactly as they
// would have been read back: times at the ledger's precision, the
// source's URI, webhook or not by its format, only the kinds that link.
// Content ingested again writes nothing and keeps nothing; what was kept
// is taken once, by the first matching, which drops what it does not take;
// a store that did not ingest reads back.
func testMatchTakesTheRunsRecordsAsIngested(e *env) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)
	if err := e.store.EffectLoad(e.ctx, []reconcile.Effect{
		charge("r:charge:1", "stripe", "charge", reconcile.StatusAttempted, "", t0),
		charge("r:charge:2", "stripe", "charge", reconcile.StatusConfirmed, "pi_2", t0),
		charge("r:refund:3", "adyen", "refund", reconcile.StatusConfirmed, "MOD3", t0),
	}); err != nil {
		e.t.Fatal(err)
	}
	ev := func(id string, kind reconcile.Kind, at time.Time) reconcile.Evidence {
		return reconcile.Evidence{Provider: "stripe", TxID: id, Kind: kind, RawKind: "x", Amount: reconcile.Money{Minor: -1000, Currency: "EUR"},
			Time: at, Description: "d", Metadata: map[string]string{"k": "v"}, Raw: "raw " + id}
	}
	ingest := func(store ledgerdb.Store, hash, uri, format string, keep bool, evs []reconcile.Evidence) *ledgerdb.IngestResult {
		e.t.Helper()
		res, err := store.SourceIngest(e.ctx, &ledgerdb.IngestParams{URI: uri, Keep: keep}, func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
			for i := range evs {
				evs[i].URI, evs[i].Line = "as the parser named it", 2*i+7
				if err := w.Evidence(&evs[i]); err != nil {
					return nil, err
				}
			}
			return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Format: format, Hash: hash, Rows: len(evs), Evidence: len(evs)}}, nil
		})
		if err != nil {
			e.t.Fatalf("SourceIngest(%s) = %+v, %v", hash, res, err)
		}
		return res
	}
	old := ingest(e.another(), "h_old", "old.csv", "stripe-itemized", false, []reconcile.Evidence{
		func() reconcile.Evidence {
			x := ev("ch_1", reconcile.KindCharge, t0)
			x.EffectKey = "r:charge:1"
			return x
		}()})
	report := []reconcile.Evidence{
		func() reconcile.Evidence {
			x := ev("ch_1", reconcile.KindCharge, t0)
			x.EffectKey = "r:charge:1"
			return x
		}(),
		func() reconcile.Evidence {
			x := ev("ch_2", reconcile.KindCharge, time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC))
			x.PaymentIntent, x.Pending = "pi_2", true
			return x
		}(),
		ev("ch_9", reconcile.KindCharge, time.Time{}),
		func() reconcile.Evidence {
			x := ev("re_8", reconcile.KindRefund, time.Unix(-1, 999999999).UTC())
			x.ParentTxID, x.Failed, x.Amount.Currency = "ch_2", true, "jpy"
			return x
		}(),
		ev("fee_1", reconcile.KindFee, t0), // links to nothing: not matched
		func() reconcile.Evidence {
			x := ev("MOD3", reconcile.KindRefund, t0.Add(time.Microsecond+999*time.Nanosecond))
			x.Provider, x.ParentEffectKey, x.EffectKey = "adyen", "r:charge:1", "r:refund:3 ünïcode"
			return x
		}(),
	}
	fresh := ingest(e.store, "h_report", "s3://bucket/report.csv", "stripe-itemized", true, report)
	hooks := ingest(e.store, "h_hooks", "hooks.jsonl", "stripe-webhooks", true, []reconcile.Evidence{ev("ch_1", reconcile.KindCharge, t0.Add(time.Second))})
	if again := ingest(e.store, "h_report", "again.csv", "stripe-itemized", true, report); !again.Duplicate {
		e.t.Fatalf("the same content again: %+v, want a duplicate", again)
	}
	stale := ingest(e.store, "h_stale", "stale.csv", "stripe-itemized", true, []reconcile.Evidence{ev("ch_7", reconcile.KindCharge, t0)})
	match := func(store ledgerdb.Store, sources ...int64) ([]*ledgerdb.Partition, *ledgerdb.MatchSummary) {
		e.t.Helper()
		var (
			mu    sync.Mutex
			parts []*ledgerdb.Partition
		)
		sum, err := store.PartitionMatch(e.ctx, &ledgerdb.MatchParams{RunID: "run_k", Sources: sources, Kinds: stepKinds,
			WebhookFormats: []string{"stripe-webhooks"}}, func(p *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, rs := range [][]reconcile.Evidence{p.Evidence, p.Earlier} {
				sort.Slice(rs, func(i, j int) bool { return rs[i].URI+fmt.Sprint(rs[i].Line) < rs[j].URI+fmt.Sprint(rs[j].Line) })
			}
			parts = append(parts, p)
			return nil, nil
		})
		if err != nil {
			e.t.Fatalf("PartitionMatch: %v", err)
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i].Index < parts[j].Index })
		return parts, sum
	}
	readBack, readSum := match(e.another(), fresh.SourceID, hooks.SourceID)
	kept, keptSum := match(e.store, fresh.SourceID, hooks.SourceID)
	again, againSum := match(e.store, fresh.SourceID, hooks.SourceID)
	staleParts, staleSum := match(e.store, stale.SourceID)
	var staleRead int
	for _, p := range staleParts {
		staleRead += len(p.Evidence)
	}
	if readSum.Kept != 0 || keptSum.Kept != 6 || againSum.Kept != 0 || staleSum.Kept != 0 || staleRead != 1 {
		e.t.Fatalf("records taken as ingested: %d by a store that did not ingest, %d by the one that did, %d by it again, %d of %d of a source kept "+
			"but not taken by the first matching; want 0, 6 (the linking kinds), 0, 0 of 1", readSum.Kept, keptSum.Kept, againSum.Kept, staleSum.Kept, staleRead)
	}
	var n int
	for _, p := range readBack {
		n += len(p.Evidence)
		for _, r := range p.Earlier {
			if r.URI != "old.csv" {
				e.t.Errorf("earlier record %+v: want only source %d's", r, old.SourceID)
			}
		}
	}
	if n != 6 {
		e.t.Fatalf("read back %d of the run's records, want 6: %+v", n, readBack)
	}
	// Only a record as ingested says where the ledger holds it, with its
	// raw kind and fee, which the matching does not read: for sorting the
	// run's sources (PostgreSQL's TestAKeptNightSortsItsRecordsAsOneReadFromTheLedger).
	ledgerOnly := cmpopts.IgnoreFields(reconcile.Evidence{}, "SourceID", "Seq", "RawKind", "Fee")
	for _, got := range [][]*ledgerdb.Partition{kept, again} {
		if diff := cmp.Diff(readBack, got, cmpopts.IgnoreUnexported(ledgerdb.Partition{}), ledgerOnly); diff != "" {
			e.t.Fatalf("partitions (-read back +as ingested):\n%s", diff)
		}
	}
}
