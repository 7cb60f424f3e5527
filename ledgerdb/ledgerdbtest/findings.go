package ledgerdbtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ledgerdb"
)

// A confirmed effect is final: later runs do not read it again unless new
// evidence names it. Open and abandoned effects behave as the contract says.
func testScopeFollowsOpenEffectsAndNewEvidence(e *env) {
	for i := range 4 {
		e.record(fmt.Sprintf("r:charge:%d", i), chargeReq)
	}
	if _, err := e.store.EffectConfirm(e.ctx, &ledgerdb.ConfirmParams{Key: "r:charge:2", ExternalID: "pi_2"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.EffectAbandon(e.ctx, &ledgerdb.AbandonParams{Key: "r:charge:3"}); err != nil {
		e.t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r:charge:0", "r:charge:1", "r:charge:2"}, e.scope()); diff != "" {
		e.t.Errorf("scope of a new ledger (-want +got):\n%s", diff)
	}
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_a"}); err != nil {
		e.t.Fatal(err)
	}
	conf := func(key, id string) reconcile.Discrepancy {
		return reconcile.Discrepancy{Class: reconcile.ClassConfirmed, EffectKey: key, Provider: "stripe",
			Transactions: []reconcile.Transaction{{Provider: "stripe", ID: id, Kind: reconcile.KindCharge}}}
	}
	if _, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_a", Discrepancies: []reconcile.Discrepancy{
		conf("r:charge:0", "ch_0"), conf("r:charge:2", "ch_2"), {Class: reconcile.ClassMissing, EffectKey: "r:charge:1", Provider: "stripe"},
	}}); err != nil {
		e.t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r:charge:1"}, e.scope()); diff != "" {
		e.t.Errorf("scope after a run (-want +got):\n%s", diff)
	}
	// A late duplicate re-opens a confirmed effect: new evidence names it,
	// by key (a fee line's key counts too) or by external id.
	src := e.ingestEvidence("h1", "late.csv", []reconcile.Evidence{
		{Provider: "stripe", TxID: "ch_0b", Kind: reconcile.KindCharge, EffectKey: "r:charge:0"},
		{Provider: "stripe", Kind: reconcile.KindFee, EffectKey: "r:charge:3"},
		{Provider: "stripe", TxID: "ch_2b", Kind: reconcile.KindCharge, PaymentIntent: "pi_2"},
	})
	if diff := cmp.Diff([]string{"r:charge:0", "r:charge:1", "r:charge:2", "r:charge:3"}, e.scope(src)); diff != "" {
		e.t.Errorf("scope with new evidence (-want +got):\n%s", diff)
	}
}

// An effect that a run leaves without a state (out of its scope: an
// email's step, a provider none of its inputs covers) is in every later
// run's scope, beside the effects written since, until a run gives it one:
// a ledger may find a night's new effects without reading every effect,
// but must not lose one it has read.
func testAnEffectLeftWithoutAStateStaysInScope(e *env) {
	t0 := e.clock.Now()
	load := func(keys ...string) {
		for _, key := range keys {
			if err := e.store.EffectLoad(e.ctx, []reconcile.Effect{charge(key, "stripe", "charge", reconcile.StatusConfirmed, "ch_"+key, t0)}); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	confirm := func(keys ...string) func(*ledgerdb.Partition) []ledgerdb.Confirmation {
		return func(p *ledgerdb.Partition) []ledgerdb.Confirmation {
			var out []ledgerdb.Confirmation
			for _, x := range p.Effects {
				if slices.Contains(keys, x.Key) {
					out = append(out, ledgerdb.Confirmation{Key: x.Key, ExternalID: x.ExternalID})
				}
			}
			return out
		}
	}
	run := func(confirmed ...string) []string { return e.scopeMatching(confirm(confirmed...)) }
	load("r:charge:1", "r:charge:2", "r:charge:3")
	for i, c := range []struct {
		load, confirm, want []string
	}{
		{nil, []string{"r:charge:1"}, []string{"r:charge:1", "r:charge:2", "r:charge:3"}},
		{[]string{"r:charge:4"}, []string{"r:charge:4"}, []string{"r:charge:2", "r:charge:3", "r:charge:4"}},
		{[]string{"r:charge:5"}, nil, []string{"r:charge:2", "r:charge:3", "r:charge:5"}},
		{nil, []string{"r:charge:3"}, []string{"r:charge:2", "r:charge:3", "r:charge:5"}},
		{nil, nil, []string{"r:charge:2", "r:charge:5"}},
	} {
		load(c.load...)
		if diff := cmp.Diff(c.want, run(c.confirm...)); diff != "" {
			e.t.Errorf("run %d: scope (-want +got):\n%s", i+1, diff)
		}
	}
	// A state that is not final keeps an effect in scope.
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_a"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_a", Discrepancies: []reconcile.Discrepancy{
		{Class: reconcile.ClassMissing, EffectKey: "r:charge:2", Provider: "stripe"}}}); err != nil {
		e.t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r:charge:2", "r:charge:5"}, run()); diff != "" {
		e.t.Errorf("scope after a finding (-want +got):\n%s", diff)
	}
}

// Evidence confirms an attempted effect with the transaction's id, through a
// write that cannot overwrite what the application wrote meanwhile.
func testFindingsConfirmAttemptedEffects(e *env) {
	e.record("r:charge:0", chargeReq)
	e.record("r:charge:1", chargeReq)
	e.record("r:charge:2", chargeReq)
	// The application confirms one and abandons another while the run matches.
	if _, err := e.store.EffectConfirm(e.ctx, &ledgerdb.ConfirmParams{Key: "r:charge:1", ExternalID: "pi_app"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.EffectAbandon(e.ctx, &ledgerdb.AbandonParams{Key: "r:charge:2"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_a"}); err != nil {
		e.t.Fatal(err)
	}
	findings := []reconcile.Discrepancy{}
	for i, key := range []string{"r:charge:0", "r:charge:1", "r:charge:2"} {
		findings = append(findings, reconcile.Discrepancy{Class: reconcile.ClassConfirmed, EffectKey: key, Provider: "stripe",
			Transactions: []reconcile.Transaction{{Provider: "stripe", ID: fmt.Sprintf("ch_%d", i), PaymentIntent: fmt.Sprintf("pi_%d", i), Kind: reconcile.KindCharge}}})
	}
	res, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_a", Discrepancies: findings})
	if err != nil {
		e.t.Fatal(err)
	}
	if res.Confirmed != 1 {
		e.t.Errorf("RecordFindings confirmed %d effects, want 1", res.Confirmed)
	}
	for key, want := range map[string][2]string{"r:charge:0": {"confirmed", "pi_0"}, "r:charge:1": {"confirmed", "pi_app"}, "r:charge:2": {"abandoned", ""}} {
		got := e.effect(key)
		if string(got.Status) != want[0] || got.ExternalID != want[1] {
			e.t.Errorf("%s = %s %q, want %s %q", key, got.Status, got.ExternalID, want[0], want[1])
		}
	}
	if got := e.effect("r:charge:0"); !got.ConfirmedAt.Equal(e.clock.Now()) {
		e.t.Errorf("confirmed_at = %v, want %v", got.ConfirmedAt, e.clock.Now())
	}
}

func testFindingsRoundTrip(e *env) {
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_a"}); err != nil {
		e.t.Fatal(err)
	}
	e.record("r:charge:0", chargeReq)
	want := []reconcile.Discrepancy{
		{Class: reconcile.ClassDuplicated, EffectKey: "r:charge:0", Provider: "stripe", Currency: "EUR", ExpectedMinor: 1420000, ObservedMinor: 2840000,
			Transactions: []reconcile.Transaction{{Provider: "stripe", ID: "ch_a", Kind: reconcile.KindCharge, Amount: reconcile.Money{Minor: 1420000, Currency: "EUR"}, Records: 2, EffectKeys: []string{"r:charge:0"}},
				{Provider: "stripe", ID: "ch_b", Kind: reconcile.KindCharge, Amount: reconcile.Money{Minor: 1420000, Currency: "EUR"}, Records: 1}},
			Actions: []reconcile.Action{{Kind: reconcile.ActionCompensate, Key: "r:charge:0:compensate:ch_b", Target: "ch_b", Outcome: reconcile.OutcomePlanned}},
			Reason:  "charge seen 2 times"},
		{Class: reconcile.ClassUnexpected, Provider: "stripe", Currency: "EUR", ObservedMinor: 5,
			Transactions: []reconcile.Transaction{{Provider: "stripe", ID: "ch_u", Kind: reconcile.KindCharge}}, Reason: "no effect"},
	}
	confirmed := reconcile.Discrepancy{Class: reconcile.ClassConfirmed, EffectKey: "r:charge:9", Provider: "stripe"}
	if _, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_a", Discrepancies: append([]reconcile.Discrepancy{confirmed}, want...)}); err == nil {
		e.t.Errorf("findings about an effect the ledger lacks were recorded")
	}
	if _, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_a", Discrepancies: want}); err != nil {
		e.t.Fatal(err)
	}
	got, err := e.store.FindingListByRun(e.ctx, "run_a")
	if err != nil {
		e.t.Fatal(err)
	}
	norm := func(ds []reconcile.Discrepancy) string { b, _ := json.Marshal(ds); return string(b) }
	if norm(got) != norm(want) {
		e.t.Errorf("Findings =\n%s\nwant\n%s", norm(got), norm(want))
	}
}

func testLinkedEvidence(e *env) {
	first, err := e.ingest(e.store, "h1", 3, nil, 0) // ch_0..2, pi_0..2, keys run_1:charge:0..2
	if err != nil {
		e.t.Fatal(err)
	}
	second, err := e.ingest(e.store, "h2", 1, nil, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	_, ev, _, err := e.store.SourceGetRows(e.ctx, second.SourceID)
	if err != nil || len(ev) != 1 || ev[0].SourceHash != "h2" || ev[0].URI != "s.csv" {
		e.t.Fatalf("SourceRows = %+v, %v", ev, err)
	}
	linked, err := e.store.EvidenceListLinked(e.ctx, &ledgerdb.LinkParams{Keys: []string{"run_1:charge:1"}, IDs: []string{"pi_2", "ch_0"},
		ExcludeSources: []int64{second.SourceID}})
	if err != nil {
		e.t.Fatal(err)
	}
	var got []string
	for _, x := range linked {
		got = append(got, x.TxID+"@"+x.SourceHash)
	}
	if diff := cmp.Diff([]string{"ch_0@h1", "ch_1@h1", "ch_2@h1"}, got); diff != "" {
		e.t.Errorf("LinkedEvidence (-want +got):\n%s", diff)
	}
	if linked, err := e.store.EvidenceListLinked(e.ctx, &ledgerdb.LinkParams{Keys: []string{"run_1:charge:0"},
		ExcludeSources: []int64{first.SourceID, second.SourceID}}); err != nil || len(linked) != 0 {
		e.t.Errorf("LinkedEvidence excluding every source = %d rows, %v", len(linked), err)
	}
}

// testAKeptSourceKeepsTheRawRowsOfItsFindings: a source that a run
// ingests and matches itself (IngestParams.Keep) keeps each record's
// description, metadata and raw row only when a finding of the run's other
// than confirmed names the record's transaction (among its transactions or
// its related ones) or its effect; every record keeps its normalized fields
// and provenance. A source ingested on its own keeps every raw row, and so
// does a run that ends before it records its findings, when its store
// closes.
func testAKeptSourceKeepsTheRawRowsOfItsFindings(e *env) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if err := e.store.EffectLoad(e.ctx, []reconcile.Effect{
		charge("r:charge:1", "stripe", "charge", reconcile.StatusConfirmed, "ch_1", t0),
		charge("r:charge:2", "stripe", "charge", reconcile.StatusConfirmed, "ch_2", t0),
		charge("r:charge:6", "stripe", "charge", reconcile.StatusAttempted, "", t0),
	}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_d"}); err != nil {
		e.t.Fatal(err)
	}
	ev := func(id, key string) reconcile.Evidence {
		return reconcile.Evidence{Provider: "stripe", TxID: id, EffectKey: key, Kind: reconcile.KindCharge, RawKind: "charge",
			Amount: reconcile.Money{Minor: 1000, Currency: "EUR"}, Time: t0, Description: "about " + id,
			Metadata: map[string]string{"id": id}, Raw: "raw," + id}
	}
	ingest := func(store ledgerdb.Store, hash string, keep bool, evs ...reconcile.Evidence) int64 {
		e.t.Helper()
		res, err := store.SourceIngest(e.ctx, &ledgerdb.IngestParams{URI: hash + ".csv", Keep: keep}, func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
			for i := range evs {
				evs[i].URI, evs[i].Line = hash+".csv", i+2
				if err := w.Evidence(&evs[i]); err != nil {
					return nil, err
				}
			}
			return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Format: "stripe-itemized", Hash: hash, Rows: len(evs), Evidence: len(evs)}}, nil
		})
		if err != nil || res.Duplicate {
			e.t.Fatalf("SourceIngest(%s) = %+v, %v", hash, res, err)
		}
		return res.SourceID
	}
	refund := ev("re_4", "")
	refund.Kind, refund.ParentTxID = reconcile.KindRefund, "ch_2"
	ingest(e.store, "h_report", true, ev("ch_1", "r:charge:1"), ev("ch_2", "r:charge:2"), ev("ch_3", ""), refund, ev("fee_5", ""),
		ev("", "r:charge:6"))
	ingest(e.store, "h_hooks", true, ev("ch_2", "r:charge:2"), ev("ch_1", "r:charge:1"))
	ingest(e.store, "h_alone", false, ev("ch_7", ""))
	other := e.another()
	ingest(other, "h_unrecorded", true, ev("ch_8", ""))
	if err := other.Close(); err != nil {
		e.t.Fatal(err)
	}

	tx := func(id string) reconcile.Transaction {
		return reconcile.Transaction{Provider: "stripe", ID: id, Kind: reconcile.KindCharge}
	}
	findings := []reconcile.Discrepancy{
		{Class: reconcile.ClassConfirmed, EffectKey: "r:charge:1", Provider: "stripe", Transactions: []reconcile.Transaction{tx("ch_1")}},
		{Class: reconcile.ClassMismatched, EffectKey: "r:charge:2", Provider: "stripe", Currency: "EUR", Transactions: []reconcile.Transaction{tx("ch_2")},
			Related: []reconcile.Transaction{tx("re_4")}, Reason: "amount"},
		{Class: reconcile.ClassMissing, EffectKey: "r:charge:6", Provider: "stripe", Currency: "EUR", Reason: "none"},
		{Class: reconcile.ClassUnexpected, Provider: "stripe", Currency: "EUR", Transactions: []reconcile.Transaction{tx("ch_3")}, Reason: "no effect"},
	}
	if _, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_d", Discrepancies: append(findings,
		reconcile.Discrepancy{Class: reconcile.ClassMissing, EffectKey: "r:charge:404", Provider: "stripe"})}); err == nil {
		e.t.Fatal("findings about an effect the ledger lacks were recorded")
	}
	if _, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_d", Discrepancies: findings}); err != nil {
		e.t.Fatal(err)
	}
	linked, err := e.store.EvidenceListLinked(e.ctx, &ledgerdb.LinkParams{Keys: []string{"r:charge:6"},
		IDs: []string{"ch_1", "ch_2", "ch_3", "re_4", "fee_5", "ch_7", "ch_8"}})
	if err != nil {
		e.t.Fatal(err)
	}
	var got []string
	for _, x := range linked {
		s := fmt.Sprintf("%s %s:%d %s", x.TxID, x.URI, x.Line, x.SourceHash)
		if x.Raw != "" || x.Description != "" || x.Metadata != nil {
			s += fmt.Sprintf(" %q %q %v", x.Raw, x.Description, x.Metadata)
		}
		got = append(got, s)
	}
	want := []string{
		"ch_1 h_report.csv:2 h_report",
		`ch_2 h_report.csv:3 h_report "raw,ch_2" "about ch_2" map[id:ch_2]`,
		`ch_3 h_report.csv:4 h_report "raw,ch_3" "about ch_3" map[id:ch_3]`,
		`re_4 h_report.csv:5 h_report "raw,re_4" "about re_4" map[id:re_4]`,
		"fee_5 h_report.csv:6 h_report",
		` h_report.csv:7 h_report "raw," "about " map[id:]`,
		`ch_2 h_hooks.csv:2 h_hooks "raw,ch_2" "about ch_2" map[id:ch_2]`,
		"ch_1 h_hooks.csv:3 h_hooks",
		`ch_7 h_alone.csv:2 h_alone "raw,ch_7" "about ch_7" map[id:ch_7]`,
		`ch_8 h_unrecorded.csv:2 h_unrecorded "raw,ch_8" "about ch_8" map[id:ch_8]`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("evidence after the run (-want +got):\n%s", diff)
	}
}
