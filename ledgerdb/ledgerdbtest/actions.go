package ledgerdbtest

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ledgerdb"
)

const compKey = "r:charge:0:compensate:ch_b"

func compensation() *ledgerdb.RecordParams {
	return &ledgerdb.RecordParams{Key: compKey, RunID: "rec_1", Step: "compensate", Provider: "stripe", ParentKey: "r:charge:0", Depth: 1,
		Request: json.RawMessage(`{"charge": "ch_b", "metadata": {"effect_key": "` + compKey + `", "compensates": "r:charge:0"}}`)}
}

// A claim that carries an effect writes both in one transaction.
func testClaimWritesCompensationRow(e *env) {
	e.record("r:charge:0", chargeReq)
	r, err := e.store.ClaimAcquire(e.ctx, &ledgerdb.ClaimParams{Key: compKey, Owner: "a", TTL: Lease, Effect: compensation()})
	if err != nil || r.Outcome != reconcile.ClaimOutcomeClaimed {
		e.t.Fatalf("Claim with effect = %v, %v; want claimed", r, err)
	}
	got := e.effect(compKey)
	if got.Step != "compensate" || got.Depth != 1 || got.ParentKey != "r:charge:0" || got.Status != reconcile.StatusAttempted {
		e.t.Errorf("compensation row = %+v, want an attempted compensate at depth 1 under r:charge:0", got)
	}
	// Taking the action over after the lease records nothing new.
	e.clock.Advance(Lease)
	r, err = e.store.ClaimAcquire(e.ctx, &ledgerdb.ClaimParams{Key: compKey, Owner: "b", TTL: Lease, Effect: compensation()})
	if err != nil || r.Outcome != reconcile.ClaimOutcomeClaimed || r.Claim.Fence != 2 {
		e.t.Fatalf("second Claim = %+v, %v; want claimed with fence 2", r, err)
	}
	if again := e.effect(compKey); !again.CreatedAt.Equal(got.CreatedAt) {
		e.t.Errorf("second claim rewrote the row: created %v, was %v", again.CreatedAt, got.CreatedAt)
	}
}

// A claim whose effect row conflicts with what is recorded takes nothing:
// the claim is rolled back with the row.
func testClaimWithConflictingRowTakesNothing(e *env) {
	e.record("r:charge:0", chargeReq)
	other := compensation()
	other.Request = json.RawMessage(`{"charge": "ch_c"}`)
	if _, err := e.store.EffectRecord(e.ctx, other); err != nil {
		e.t.Fatal(err)
	}
	_, err := e.store.ClaimAcquire(e.ctx, &ledgerdb.ClaimParams{Key: compKey, Owner: "a", TTL: Lease, Effect: compensation()})
	if !errors.Is(err, reconcile.ErrKeyReused) {
		e.t.Fatalf("Claim over a conflicting row: err = %v, want ErrKeyReused", err)
	}
	if _, err := e.store.ClaimGet(e.ctx, compKey); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("the refused claim was kept: ClaimGet err = %v, want ErrNotFound", err)
	}
}

// A settle confirms the action's effect in the same transaction; a
// superseded settle confirms nothing.
func testSettleConfirmsOnlyWhenWritten(e *env) {
	e.record("r:charge:0", chargeReq)
	claim := func(owner string) int64 {
		r, err := e.store.ClaimAcquire(e.ctx, &ledgerdb.ClaimParams{Key: compKey, Owner: owner, TTL: Lease, Effect: compensation()})
		if err != nil || r.Outcome != reconcile.ClaimOutcomeClaimed {
			e.t.Fatalf("Claim = %v, %v", r, err)
		}
		return r.Claim.Fence
	}
	settle := func(fence int64, id string) *reconcile.WriteResult {
		r, err := e.store.ClaimSettle(e.ctx, &ledgerdb.SettleParams{Key: compKey, Fence: fence, Success: true, Result: json.RawMessage(`{"id":"` + id + `"}`),
			Confirm: &ledgerdb.ConfirmParams{Key: compKey, ExternalID: id}})
		if err != nil {
			e.t.Fatal(err)
		}
		return r
	}
	stale := claim("a")
	e.clock.Advance(Lease)
	live := claim("b")
	if r := settle(stale, "re_stale"); r.Outcome != reconcile.WriteOutcomeSuperseded || r.Orphan == nil {
		e.t.Fatalf("stale settle = %+v, want superseded with an orphan", r)
	}
	if got := e.effect(compKey); got.Status != reconcile.StatusAttempted {
		e.t.Errorf("a superseded settle confirmed the effect: %s %s", got.Status, got.ExternalID)
	}
	if r := settle(live, "re_live"); r.Outcome != reconcile.WriteOutcomeWritten {
		e.t.Fatalf("live settle = %s, want written", r.Outcome)
	}
	if got := e.effect(compKey); got.Status != reconcile.StatusConfirmed || got.ExternalID != "re_live" {
		e.t.Errorf("after the live settle the effect is %s %q, want confirmed re_live", got.Status, got.ExternalID)
	}
}

// An escalation is opened once however often it is raised; a resolved one
// that comes back is opened again, under the next generation.
func testEscalationOpensOnce(e *env) {
	e.record("r:charge:0", chargeReq)
	p := &ledgerdb.EscalateParams{Key: compKey + ":escalate:escalated", Subject: compKey, Class: reconcile.ClassEscalated, Reason: "in doubt", RunID: "rec_1"}
	first, err := e.store.EscalationOpen(e.ctx, p)
	if err != nil || !first.Opened || first.Escalation.Generation != 1 || first.Escalation.Status != reconcile.EscalationStatusOpen {
		e.t.Fatalf("first Escalate = %+v, %v; want opened, generation 1", first, err)
	}
	p.RunID = "rec_2"
	again, err := e.store.EscalationOpen(e.ctx, p)
	if err != nil || again.Opened || again.Escalation.RunID != "rec_1" {
		e.t.Fatalf("second Escalate = %+v, %v; want the open one, not opened", again, err)
	}
	if err := e.store.EscalationMarkPaged(e.ctx, &ledgerdb.MarkPagedParams{Key: p.Key, Generation: 1}); err != nil {
		e.t.Fatal(err)
	}
	open, err := e.store.EscalationList(e.ctx, &ledgerdb.EscalationsParams{Open: true})
	if err != nil || len(open) != 1 || open[0].PagedAt.IsZero() {
		e.t.Fatalf("open escalations = %+v, %v; want one, paged", open, err)
	}
	// Resolving the parent effect closes the escalations of its compensations.
	res, err := e.store.EffectResolve(e.ctx, &ledgerdb.ResolveParams{EffectKey: "r:charge:0", As: reconcile.ResolutionCompensated, Note: "refunded by hand", By: "ana"})
	if err != nil || len(res.Closed) != 1 || res.Closed[0].ResolvedBy != "ana" {
		e.t.Fatalf("Resolve = %+v, %v; want one escalation closed by ana", res, err)
	}
	if open, _ := e.store.EscalationList(e.ctx, &ledgerdb.EscalationsParams{Open: true}); len(open) != 0 {
		e.t.Errorf("after Resolve, open escalations = %+v", open)
	}
	at := res.Closed[0].ResolvedAt
	if got, err := e.store.EscalationList(e.ctx, &ledgerdb.EscalationsParams{ResolvedSince: at.Add(-time.Millisecond)}); err != nil || len(got) != 1 {
		e.t.Errorf("escalations resolved since just before the decision = %+v, %v; want the one", got, err)
	}
	if got, err := e.store.EscalationList(e.ctx, &ledgerdb.EscalationsParams{ResolvedSince: at}); err != nil || len(got) != 0 {
		e.t.Errorf("escalations resolved after the decision = %+v, %v; want none", got, err)
	}
	back, err := e.store.EscalationOpen(e.ctx, p)
	if err != nil || !back.Opened || back.Escalation.Generation != 2 || !back.Escalation.PagedAt.IsZero() {
		e.t.Fatalf("Escalate after resolve = %+v, %v; want opened again, generation 2, not paged", back, err)
	}
}

// Resolving is recorded with who and when; an attempted effect resolved as
// abandoned is abandoned, and the effect leaves the scope.
func testResolveAbandonsAndClosesScope(e *env) {
	e.record("r:charge:0", chargeReq)
	e.record("r:charge:1", chargeReq)
	res, err := e.store.EffectResolve(e.ctx, &ledgerdb.ResolveParams{EffectKey: "r:charge:0", As: reconcile.ResolutionAbandoned, Note: "customer cancelled", By: "ana"})
	if err != nil {
		e.t.Fatal(err)
	}
	if res.Effect.Status != reconcile.StatusAbandoned {
		e.t.Errorf("resolved as abandoned: status %s, want abandoned", res.Effect.Status)
	}
	if _, err := e.store.EffectResolve(e.ctx, &ledgerdb.ResolveParams{EffectKey: "r:charge:1", As: reconcile.ResolutionConfirmed, Note: "seen in dashboard",
		By: "ana", ExternalID: "pi_9"}); err != nil {
		e.t.Fatal(err)
	}
	if got := e.effect("r:charge:1"); got.Status != reconcile.StatusConfirmed || got.ExternalID != "pi_9" {
		e.t.Errorf("resolved as confirmed: %s %q, want confirmed pi_9", got.Status, got.ExternalID)
	}
	if diff := cmp.Diff([]string(nil), e.scope()); diff != "" {
		e.t.Errorf("resolved effects still in scope (-want +got):\n%s", diff)
	}
	states, err := e.store.EffectStateGetMany(e.ctx, []string{"r:charge:0", "r:charge:1", "r:charge:9"})
	if err != nil || len(states) != 2 || states["r:charge:0"].Class != reconcile.ClassResolved || !states["r:charge:0"].Final {
		e.t.Errorf("EffectStateGetMany = %+v, %v; want two final resolved states", states, err)
	}
	if _, err := e.store.EffectResolve(e.ctx, &ledgerdb.ResolveParams{EffectKey: "r:nope", As: reconcile.ResolutionAbandoned, By: "ana"}); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("Resolve of an unknown effect: err = %v, want ErrNotFound", err)
	}
}

// An effect's state remembers since when it has been in its class.
func testStateSinceFollowsClassChanges(e *env) {
	e.record("r:charge:0", chargeReq)
	run := func(id string, c reconcile.Class) reconcile.EffectState {
		if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: id}); err != nil {
			e.t.Fatal(err)
		}
		if _, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: id,
			Discrepancies: []reconcile.Discrepancy{{Class: c, EffectKey: "r:charge:0", Provider: "stripe"}}}); err != nil {
			e.t.Fatal(err)
		}
		st, err := e.store.EffectStateGetMany(e.ctx, []string{"r:charge:0"})
		if err != nil {
			e.t.Fatal(err)
		}
		return st["r:charge:0"]
	}
	start := e.clock.Now()
	run("run_1", reconcile.ClassDeferred)
	e.clock.Advance(Lease)
	if st := run("run_2", reconcile.ClassDeferred); !st.Since.Equal(start) || !st.ClassifiedAt.Equal(e.clock.Now()) {
		e.t.Errorf("deferred twice: since %v classified %v; want since %v", st.Since, st.ClassifiedAt, start)
	}
	e.clock.Advance(Lease)
	if st := run("run_3", reconcile.ClassMissing); !st.Since.Equal(e.clock.Now()) {
		e.t.Errorf("class changed: since %v, want %v", st.Since, e.clock.Now())
	}
	hist, err := e.store.FindingListByEffect(e.ctx, "r:charge:0")
	if err != nil || len(hist) != 3 || hist[0].RunID != "run_1" || hist[2].Class != reconcile.ClassMissing {
		e.t.Errorf("FindingListByEffect = %+v, %v; want three findings, oldest first", hist, err)
	}
}

// ClaimListByEffect finds an effect's own claims and those derived from its key,
// and nothing of an effect whose key merely starts the same.
func testClaimsOfAnEffect(e *env) {
	for _, k := range []string{"r:charge:1", "r:charge:1:compensate:ch_b", "r:charge:10", "r:charge:1x", "r:charge:2"} {
		e.claimed(k, "a")
	}
	got, err := e.store.ClaimListByEffect(e.ctx, "r:charge:1")
	if err != nil {
		e.t.Fatal(err)
	}
	var keys []string
	for _, c := range got {
		keys = append(keys, c.Key)
	}
	if diff := cmp.Diff([]string{"r:charge:1", "r:charge:1:compensate:ch_b"}, keys); diff != "" {
		e.t.Errorf("ClaimListByEffect (-want +got):\n%s", diff)
	}
}

// ClaimGetMany gives the claims on the keys that have one, each as ClaimGet
// does, and nothing for the others.
func testClaimsByKey(e *env) {
	for _, k := range []string{"r:charge:1", "r:charge:2", "r:charge:3"} {
		e.claimed(k, "a")
	}
	got, err := e.store.ClaimGetMany(e.ctx, []string{"r:charge:1", "r:charge:3", "r:charge:9", "r:charge:1"})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(got) != 2 {
		e.t.Errorf("ClaimGetMany = %d claims, want 2 (%v)", len(got), got)
	}
	for _, k := range []string{"r:charge:1", "r:charge:3"} {
		one, err := e.store.ClaimGet(e.ctx, k)
		if err != nil {
			e.t.Fatal(err)
		}
		if diff := cmp.Diff(one, got[k]); diff != "" {
			e.t.Errorf("ClaimGetMany[%s] (-ClaimGet +got):\n%s", k, diff)
		}
	}
	if none, err := e.store.ClaimGetMany(e.ctx, nil); err != nil || len(none) != 0 {
		e.t.Errorf("ClaimGetMany(nil) = %v, %v; want none", none, err)
	}
}

// A duplicate whose compensations were all made leaves the scope; one whose
// compensation is still to make stays.
func testCompensatedDuplicateIsFinal(e *env) {
	e.record("r:charge:0", chargeReq)
	e.record("r:charge:1", chargeReq)
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_1"}); err != nil {
		e.t.Fatal(err)
	}
	dup := func(key string, o reconcile.Outcome) reconcile.Discrepancy {
		return reconcile.Discrepancy{Class: reconcile.ClassDuplicated, EffectKey: key, Provider: "stripe",
			Actions: []reconcile.Action{{Kind: reconcile.ActionCompensate, Key: key + ":compensate:ch_x", Outcome: o}}}
	}
	if _, err := e.store.FindingRecord(e.ctx, &ledgerdb.FindingsParams{RunID: "run_1",
		Discrepancies: []reconcile.Discrepancy{dup("r:charge:0", reconcile.OutcomeApplied), dup("r:charge:1", reconcile.OutcomeDeferred)}}); err != nil {
		e.t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"r:charge:1"}, e.scope()); diff != "" {
		e.t.Errorf("scope after compensating one duplicate (-want +got):\n%s", diff)
	}
}

// An escalation is acknowledged once, stays open to Escalate, and cannot be
// acknowledged once resolved.
func testAcknowledgeEscalation(e *env) {
	e.record("r:charge:0", chargeReq)
	p := &ledgerdb.EscalateParams{Key: "r:charge:0:escalate:mismatched", Subject: "r:charge:0", Class: reconcile.ClassMismatched, Reason: "moved", RunID: "rec_1"}
	if _, err := e.store.EscalationOpen(e.ctx, p); err != nil {
		e.t.Fatal(err)
	}
	ack := &ledgerdb.AcknowledgeParams{Key: p.Key, By: "ana"}
	got, err := e.store.EscalationAcknowledge(e.ctx, ack)
	if err != nil || got.Status != reconcile.EscalationStatusAcknowledged || got.AcknowledgedBy != "ana" || !got.AcknowledgedAt.Equal(e.clock.Now()) {
		e.t.Fatalf("Acknowledge = %+v, %v; want acknowledged by ana now", got, err)
	}
	e.clock.Advance(Lease)
	if again, err := e.store.EscalationAcknowledge(e.ctx, &ledgerdb.AcknowledgeParams{Key: p.Key, By: "bo"}); err != nil || again.AcknowledgedBy != "ana" {
		e.t.Errorf("second Acknowledge = %+v, %v; want the first one kept", again, err)
	}
	if r, err := e.store.EscalationOpen(e.ctx, p); err != nil || r.Opened || r.Escalation.Status != reconcile.EscalationStatusAcknowledged {
		e.t.Errorf("Escalate of an acknowledged escalation = %+v, %v; want it as it is", r, err)
	}
	if open, _ := e.store.EscalationList(e.ctx, &ledgerdb.EscalationsParams{Open: true}); len(open) != 1 {
		e.t.Errorf("an acknowledged escalation is not listed as open: %+v", open)
	}
	if _, err := e.store.EffectResolve(e.ctx, &ledgerdb.ResolveParams{EffectKey: "r:charge:0", As: reconcile.ResolutionConfirmed, Note: "ok", By: "ana"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.EscalationAcknowledge(e.ctx, ack); !errors.Is(err, reconcile.ErrInvalidTransition) {
		e.t.Errorf("Acknowledge of a resolved escalation: err = %v, want ErrInvalidTransition", err)
	}
	if _, err := e.store.EscalationAcknowledge(e.ctx, &ledgerdb.AcknowledgeParams{Key: "nope"}); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("Acknowledge of an unknown key: err = %v, want ErrNotFound", err)
	}
}
