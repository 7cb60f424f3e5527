package ledgerdbtest

import (
	"encoding/json"
	"fmt"

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
