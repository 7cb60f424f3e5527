// Package ledgerdbtest is the one behavioural suite that every ledger driver
// runs, so that PostgreSQL and SQLite cannot drift apart.
package ledgerdbtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/clock"
	"reconcile/ledgerdb"
)

// Opener opens a fresh, migrated ledger for one test, with the given clock.
// It returns the store and a function that opens another, independent handle
// (its own pool or connection) on the same ledger. Handles are closed by the
// opener's t.Cleanup.
type Opener func(t *testing.T, now func() time.Time) (ledgerdb.Store, func() ledgerdb.Store)

// Lease is the lease length the suite uses.
const Lease = 2 * time.Minute

type env struct {
	t       *testing.T
	ctx     context.Context
	clock   *clock.Fake
	store   ledgerdb.Store
	another func() ledgerdb.Store
}

// Exercise runs the suite against the driver behind open.
func Exercise(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(e *env)
	}{
		{"MigrateTwiceIsNoop", testMigrateTwiceIsNoop},
		{"RecordAttemptCreatesAttemptedRow", testRecordAttemptCreates},
		{"RecordAttemptSameRequestReturnsExistingRow", testRecordAttemptSameRequest},
		{"RecordAttemptFieldOrderIsNotAMismatch", testRecordAttemptFieldOrder},
		{"RecordAttemptRefusesKeyReusedWithOtherRequest", testRecordAttemptRefusesReuse},
		{"RecordAttemptRefusesInvalidRequest", testRecordAttemptInvalid},
		{"ConfirmRecordsExternalID", testConfirm},
		{"ConfirmIsIdempotentAndRefusesAnotherID", testConfirmTwice},
		{"AbandonOnlyAnAttemptedEffect", testAbandon},
		{"UnknownEffectIsNotFound", testUnknownEffect},
		{"LoadEffectsWritesRowsAsTheyAre", testLoadEffects},
		{"StaleFailureCannotUndoCompleted", testStaleFailureCannotUndoCompleted},
		{"StaleCompletionCannotOverwriteLiveResult", testStaleCompletionCannotOverwrite},
		{"StaleWriteRejectedEvenWhenNewerAttemptFailed", testStaleWriteRejectedWhenNewerFailed},
		{"StaleWriteWhileNewOwnerHoldsChangesNothing", testStaleWriteWhileNewOwnerHolds},
		{"SettledClaimRejectsSecondSettleWithSameToken", testSecondSettleSameToken},
		{"UnknownTokenRejected", testUnknownToken},
		{"CallThatOutlivesLeaseCannotFailWhatOtherCompleted", testOutlivesLease},
		{"SupersededSuccessIsReportedAsOrphan", testOrphan},
		{"ConcurrentClaimsYieldOneOwner", testConcurrentClaims},
		{"SettleUnknownKeyInsertsNothing", testSettleUnknownKey},
		{"LeaseWithNoDeadlineIsLive", testNoDeadline},
		{"InFlightClaimDoesNotBumpFence", testInFlightNoBump},
		{"RenewExtendsOnlyTheHoldersLease", testRenew},
		{"FailedClaimIsClaimableAgain", testFailedReclaim},
		{"FencesStrictlyIncrease", testFencesIncrease},
		{"RunsStartAndFinishOnce", testRuns},
		{"RunsAreListedNewestFirst", testRunsListed},
		{"IngestWritesRowsAndManifest", testIngestWritesRowsAndManifest},
		{"IngestSameContentTwiceAddsNothing", testIngestSameContentTwiceAddsNothing},
		{"IngestFailureRollsBackEverything", testIngestFailureRollsBackEverything},
		{"ConcurrentIngestOfOneSourceWritesItOnce", testConcurrentIngestOnce},
		{"ScopeFollowsOpenEffectsAndNewEvidence", testScopeFollowsOpenEffectsAndNewEvidence},
		{"FindingsConfirmAttemptedEffectsWithoutOverwritingTheApplication", testFindingsConfirmAttemptedEffects},
		{"FindingsRoundTrip", testFindingsRoundTrip},
		{"LinkedEvidenceFindsEarlierEvidence", testLinkedEvidence},
		{"ClaimWritesCompensationRowInTheSameTransaction", testClaimWritesCompensationRow},
		{"ClaimWithConflictingRowTakesNothing", testClaimWithConflictingRowTakesNothing},
		{"SettleConfirmsOnlyWhenWritten", testSettleConfirmsOnlyWhenWritten},
		{"EscalationOpensOnceAndAgainAfterResolve", testEscalationOpensOnce},
		{"ResolveAbandonsAndClosesScope", testResolveAbandonsAndClosesScope},
		{"StateSinceFollowsClassChanges", testStateSinceFollowsClassChanges},
		{"ClaimsOfAnEffect", testClaimsOfAnEffect},
		{"ClaimsByKey", testClaimsByKey},
		{"CompensatedDuplicateIsFinal", testCompensatedDuplicateIsFinal},
		{"AcknowledgeEscalation", testAcknowledgeEscalation},
		{"RunResultIsKeptAsGiven", testRunResult},
		{"CoverageOfTheRunsSources", testCoverage},
		{"RejectedRowsOfASource", testRejectedRows},
		{"MatchPartitionsKeepWhatRelatesTogether", testMatchPartitionsKeepWhatRelatesTogether},
		{"MatchPartitionsGiveEffectsAsTheMatcherReadsThem", testMatchPartitionsGiveEffectsAsTheMatcherReadsThem},
		{"MatchPartitionsAreBounded", testMatchPartitionsAreBounded},
		{"MatchPartitionsRecordConfirmations", testMatchPartitionsRecordConfirmations},
		{"RenewWhileMatching", testRenewWhileMatching},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := NewClock()
			store, another := open(t, fake.Now)
			tc.fn(&env{t: t, ctx: context.Background(), clock: fake, store: store, another: another})
		})
	}
}

func (e *env) record(key string, req string) *ledgerdb.RecordResult {
	e.t.Helper()
	r, err := e.store.RecordAttempt(e.ctx, &ledgerdb.RecordParams{Key: key, RunID: "run_8f3c1a", Step: "charge", Provider: "stripe", Request: json.RawMessage(req)})
	if err != nil {
		e.t.Fatalf("RecordAttempt(%s) error: %v", key, err)
	}
	return r
}

func (e *env) effect(key string) *reconcile.Effect {
	e.t.Helper()
	got, err := e.store.Effect(e.ctx, key)
	if err != nil {
		e.t.Fatalf("Effect(%s) error: %v", key, err)
	}
	return got
}

func (e *env) claim(key, owner string) *reconcile.ClaimResult {
	e.t.Helper()
	return e.claimTTL(key, owner, Lease)
}

func (e *env) claimTTL(key, owner string, ttl time.Duration) *reconcile.ClaimResult {
	e.t.Helper()
	r, err := e.store.Claim(e.ctx, &ledgerdb.ClaimParams{Key: key, Owner: owner, TTL: ttl})
	if err != nil {
		e.t.Fatalf("Claim(%s, %s) error: %v", key, owner, err)
	}
	return r
}

// claimed claims key and fails the test unless the caller became the owner.
func (e *env) claimed(key, owner string) int64 {
	e.t.Helper()
	r := e.claim(key, owner)
	if r.Outcome != reconcile.Claimed {
		e.t.Fatalf("Claim(%s, %s) = %s, want claimed", key, owner, r.Outcome)
	}
	return r.Claim.Fence
}

func (e *env) settle(key string, fence int64, success bool, result string) *reconcile.WriteResult {
	e.t.Helper()
	r, err := e.settleErr(key, fence, success, result)
	if err != nil {
		e.t.Fatalf("Settle(%s, fence %d, success %v) error: %v", key, fence, success, err)
	}
	return r
}

func (e *env) settleErr(key string, fence int64, success bool, result string) (*reconcile.WriteResult, error) {
	p := &ledgerdb.SettleParams{Key: key, Fence: fence, Success: success, Owner: fmt.Sprintf("owner-%d", fence)}
	if success {
		p.Result = json.RawMessage(result)
	} else {
		p.Error = result
	}
	return e.store.Settle(e.ctx, p)
}

func (e *env) claimOf(key string) *reconcile.Claim {
	e.t.Helper()
	c, err := e.store.ClaimOf(e.ctx, key)
	if err != nil {
		e.t.Fatalf("ClaimOf(%s) error: %v", key, err)
	}
	return c
}

// jsonEqual compares two JSON documents as values.
func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("stored JSON %q does not parse: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad test JSON %q: %v", want, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("JSON mismatch (-want +got):\n%s", diff)
	}
}

func testMigrateTwiceIsNoop(e *env) {
	applied, err := e.store.Migrate(e.ctx)
	if err != nil {
		e.t.Fatalf("second Migrate: %v", err)
	}
	if len(applied) != 0 {
		e.t.Errorf("second Migrate applied %d migrations, want none", len(applied))
	}
	if err := e.store.CheckSchema(e.ctx); err != nil {
		e.t.Errorf("CheckSchema after Migrate: %v", err)
	}
}

const chargeReq = `{"amount": 1420000, "currency": "eur", "customer": "acct_5512", "metadata": {"effect_key": "run_8f3c1a:charge:0", "order_ref": "PO-2026-0041"}}`

func testRecordAttemptCreates(e *env) {
	key := reconcile.EffectKey("run_8f3c1a", "charge", 0)
	r := e.record(key, chargeReq)
	if !r.Created {
		e.t.Errorf("RecordAttempt on a new key: Created = false, want true")
	}
	want := reconcile.Effect{Key: "run_8f3c1a:charge:0", RunID: "run_8f3c1a", Step: "charge", Provider: "stripe",
		Status: reconcile.StatusAttempted, CreatedAt: e.clock.Now()}
	got := *e.effect(key)
	jsonEqual(e.t, got.Request, chargeReq)
	got.Request = nil
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("Effect after RecordAttempt (-want +got):\n%s", diff)
	}
}

func testRecordAttemptSameRequest(e *env) {
	e.record("k:charge:0", chargeReq)
	e.clock.Advance(time.Hour)
	r := e.record("k:charge:0", chargeReq)
	if r.Created {
		e.t.Errorf("second RecordAttempt: Created = true, want false")
	}
	if !r.Effect.CreatedAt.Equal(e.clock.Now().Add(-time.Hour)) {
		e.t.Errorf("second RecordAttempt returned CreatedAt %v, want the first row's %v", r.Effect.CreatedAt, e.clock.Now().Add(-time.Hour))
	}
}

func testRecordAttemptFieldOrder(e *env) {
	e.record("k:charge:0", chargeReq)
	reordered := `{"metadata":{"order_ref":"PO-2026-0041","effect_key":"run_8f3c1a:charge:0"},"customer":"acct_5512","currency":"eur","amount":1420000}`
	r := e.record("k:charge:0", reordered)
	if r.Created {
		e.t.Errorf("RecordAttempt with reordered fields: Created = true, want the existing row")
	}
}

func testRecordAttemptRefusesReuse(e *env) {
	e.record("k:charge:0", chargeReq)
	moved := `{"amount": 1450000, "currency": "eur", "customer": "acct_5512", "metadata": {"effect_key": "run_8f3c1a:charge:0", "order_ref": "PO-2026-0041"}}`
	_, err := e.store.RecordAttempt(e.ctx, &ledgerdb.RecordParams{Key: "k:charge:0", RunID: "run_8f3c1a", Step: "charge", Provider: "stripe", Request: json.RawMessage(moved)})
	if !errors.Is(err, reconcile.ErrKeyReused) {
		e.t.Fatalf("RecordAttempt with a moved price: error %v, want ErrKeyReused", err)
	}
	var kr *reconcile.KeyReusedError
	if !errors.As(err, &kr) || kr.Key != "k:charge:0" {
		e.t.Errorf("error %v is not a *KeyReusedError for k:charge:0", err)
	}
	jsonEqual(e.t, e.effect("k:charge:0").Request, chargeReq)
	// A different step under the same key is a reuse too.
	_, err = e.store.RecordAttempt(e.ctx, &ledgerdb.RecordParams{Key: "k:charge:0", RunID: "run_8f3c1a", Step: "refund", Provider: "stripe", Request: json.RawMessage(chargeReq)})
	if !errors.Is(err, reconcile.ErrKeyReused) {
		e.t.Errorf("RecordAttempt with another step: error %v, want ErrKeyReused", err)
	}
}

func testRecordAttemptInvalid(e *env) {
	for _, req := range []string{``, `not json`, `[1,2]`, `{"a":1} {"b":2}`} {
		_, err := e.store.RecordAttempt(e.ctx, &ledgerdb.RecordParams{Key: "k:charge:0", RunID: "r", Step: "charge", Provider: "stripe", Request: json.RawMessage(req)})
		if err == nil {
			e.t.Errorf("RecordAttempt(request %q) succeeded, want an error", req)
		}
	}
	if _, err := e.store.Effect(e.ctx, "k:charge:0"); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("after invalid requests, Effect error = %v, want ErrNotFound", err)
	}
}

func testConfirm(e *env) {
	e.record("k:charge:0", chargeReq)
	e.clock.Advance(3 * time.Second)
	got, err := e.store.Confirm(e.ctx, &ledgerdb.ConfirmParams{Key: "k:charge:0", ExternalID: "pi_3PqR", Response: json.RawMessage(`{"id":"pi_3PqR","status":"succeeded"}`)})
	if err != nil {
		e.t.Fatalf("Confirm: %v", err)
	}
	if got.Status != reconcile.StatusConfirmed || got.ExternalID != "pi_3PqR" || !got.ConfirmedAt.Equal(e.clock.Now()) {
		e.t.Errorf("Confirm = status %s, external id %q, confirmed at %v; want confirmed, pi_3PqR, %v", got.Status, got.ExternalID, got.ConfirmedAt, e.clock.Now())
	}
	jsonEqual(e.t, e.effect("k:charge:0").Response, `{"id":"pi_3PqR","status":"succeeded"}`)
}

func testConfirmTwice(e *env) {
	e.record("k:charge:0", chargeReq)
	if _, err := e.store.Confirm(e.ctx, &ledgerdb.ConfirmParams{Key: "k:charge:0", ExternalID: "pi_1"}); err != nil {
		e.t.Fatalf("Confirm: %v", err)
	}
	if _, err := e.store.Confirm(e.ctx, &ledgerdb.ConfirmParams{Key: "k:charge:0", ExternalID: "pi_1"}); err != nil {
		e.t.Errorf("Confirm again with the same id: %v, want the row", err)
	}
	_, err := e.store.Confirm(e.ctx, &ledgerdb.ConfirmParams{Key: "k:charge:0", ExternalID: "pi_2"})
	if !errors.Is(err, reconcile.ErrInvalidTransition) {
		e.t.Errorf("Confirm with another id: error %v, want ErrInvalidTransition", err)
	}
	if got := e.effect("k:charge:0").ExternalID; got != "pi_1" {
		e.t.Errorf("external id after a refused confirm = %q, want pi_1", got)
	}
}

func testAbandon(e *env) {
	e.record("k:charge:0", chargeReq)
	got, err := e.store.Abandon(e.ctx, &ledgerdb.AbandonParams{Key: "k:charge:0"})
	if err != nil || got.Status != reconcile.StatusAbandoned {
		e.t.Fatalf("Abandon = %v, %v; want abandoned", got, err)
	}
	if _, err := e.store.Confirm(e.ctx, &ledgerdb.ConfirmParams{Key: "k:charge:0", ExternalID: "pi_1"}); !errors.Is(err, reconcile.ErrInvalidTransition) {
		e.t.Errorf("Confirm an abandoned effect: error %v, want ErrInvalidTransition", err)
	}
	e.record("k:charge:1", chargeReq)
	if _, err := e.store.Confirm(e.ctx, &ledgerdb.ConfirmParams{Key: "k:charge:1", ExternalID: "pi_1"}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.Abandon(e.ctx, &ledgerdb.AbandonParams{Key: "k:charge:1"}); !errors.Is(err, reconcile.ErrInvalidTransition) {
		e.t.Errorf("Abandon a confirmed effect: error %v, want ErrInvalidTransition", err)
	}
	if got := e.effect("k:charge:1").Status; got != reconcile.StatusConfirmed {
		e.t.Errorf("status after a refused abandon = %s, want confirmed", got)
	}
}

func testUnknownEffect(e *env) {
	if _, err := e.store.Effect(e.ctx, "nope:charge:0"); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("Effect(unknown) error = %v, want ErrNotFound", err)
	}
	if _, err := e.store.Confirm(e.ctx, &ledgerdb.ConfirmParams{Key: "nope:charge:0", ExternalID: "x"}); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("Confirm(unknown) error = %v, want ErrNotFound", err)
	}
	if _, err := e.store.Abandon(e.ctx, &ledgerdb.AbandonParams{Key: "nope:charge:0"}); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("Abandon(unknown) error = %v, want ErrNotFound", err)
	}
}

const action = "run_8f3c1a:charge:0:compensate:ch_extra"

// The bug from seed 004, verbatim: attempt A overruns its lease, B takes over
// and completes, then A's late failure arrives.
func testStaleFailureCannotUndoCompleted(e *env) {
	slow := e.claimed(action, "A")
	e.clock.Advance(Lease)
	fresh := e.claimed(action, "B")
	e.settle(action, fresh, true, `{"refund":"re_B"}`)

	stale := e.settle(action, slow, false, "provider outage")
	if stale.Outcome != reconcile.Superseded {
		e.t.Fatalf("stale failure: outcome %s, want superseded", stale.Outcome)
	}
	if c := e.claimOf(action); c.State != reconcile.ClaimDone {
		e.t.Errorf("state after the stale failure = %s, want done: the refund B made must survive", c.State)
	}
	// ...and the action must not be re-opened for a second refund.
	if r := e.claim(action, "C"); r.Outcome != reconcile.Done {
		e.t.Errorf("claim after the stale failure = %s, want done", r.Outcome)
	}
}

func testStaleCompletionCannotOverwrite(e *env) {
	slow := e.claimed(action, "A")
	e.clock.Advance(Lease + time.Second)
	fresh := e.claimed(action, "B")
	e.settle(action, fresh, true, `{"refund":"re_B"}`)

	stale := e.settle(action, slow, true, `{"refund":"re_A"}`)
	if stale.Outcome != reconcile.Superseded {
		e.t.Fatalf("stale completion: outcome %s, want superseded", stale.Outcome)
	}
	c := e.claimOf(action)
	jsonEqual(e.t, c.Result, `{"refund":"re_B"}`)
	if c.Fence != fresh {
		e.t.Errorf("fence after the stale completion = %d, want %d", c.Fence, fresh)
	}
}

func testStaleWriteRejectedWhenNewerFailed(e *env) {
	slow := e.claimed(action, "A")
	e.clock.Advance(Lease)
	fresh := e.claimed(action, "B")
	e.settle(action, fresh, false, "card declined")

	for _, success := range []bool{false, true} {
		r := e.settle(action, slow, success, `{"refund":"re_A"}`)
		if r.Outcome != reconcile.Superseded {
			e.t.Errorf("stale settle (success %v) after the newer attempt failed: outcome %s, want superseded", success, r.Outcome)
		}
	}
	c := e.claimOf(action)
	if c.State != reconcile.ClaimFailed || c.Fence != fresh || c.Error != "card declined" {
		e.t.Errorf("claim = %s fence %d error %q; want failed fence %d \"card declined\"", c.State, c.Fence, c.Error, fresh)
	}
	if next := e.claimed(action, "C"); next != fresh+1 {
		e.t.Errorf("next claim fence = %d, want %d", next, fresh+1)
	}
}

func testSecondSettleSameToken(e *env) {
	f := e.claimed(action, "A")
	e.settle(action, f, true, `{"refund":"re_A"}`)
	for _, success := range []bool{true, false} {
		if _, err := e.settleErr(action, f, success, `{"refund":"re_A2"}`); !errors.Is(err, reconcile.ErrAlreadySettled) {
			e.t.Errorf("second settle (success %v) with the same token: error %v, want ErrAlreadySettled", success, err)
		}
	}
	if _, err := e.store.Renew(e.ctx, &ledgerdb.RenewParams{Key: action, Fence: f, TTL: Lease}); !errors.Is(err, reconcile.ErrAlreadySettled) {
		e.t.Errorf("renew after settle: error %v, want ErrAlreadySettled", err)
	}
	c := e.claimOf(action)
	if c.State != reconcile.ClaimDone {
		e.t.Errorf("state = %s, want done", c.State)
	}
	jsonEqual(e.t, c.Result, `{"refund":"re_A"}`)
}

func testUnknownToken(e *env) {
	f := e.claimed(action, "A")
	for _, bad := range []int64{f + 1, f + 100, 0, -1} {
		if _, err := e.settleErr(action, bad, true, `{"refund":"re_X"}`); !errors.Is(err, reconcile.ErrUnknownFence) {
			e.t.Errorf("settle with token %d: error %v, want ErrUnknownFence", bad, err)
		}
		if _, err := e.store.Renew(e.ctx, &ledgerdb.RenewParams{Key: action, Fence: bad, TTL: Lease}); !errors.Is(err, reconcile.ErrUnknownFence) {
			e.t.Errorf("renew with token %d: error %v, want ErrUnknownFence", bad, err)
		}
	}
	if c := e.claimOf(action); c.State != reconcile.ClaimHeld || c.Fence != f || c.Result != nil {
		e.t.Errorf("claim after unknown tokens = %s fence %d result %s; want held fence %d no result", c.State, c.Fence, c.Result, f)
	}
	orphans, err := e.store.Orphans(e.ctx)
	if err != nil || len(orphans) != 0 {
		e.t.Errorf("Orphans = %v, %v; an unknown token must not be recorded as an orphan", orphans, err)
	}
}

// A provider call that hangs past the lease: the slow owner can neither
// renew nor fail the action another attempt completed.
func testOutlivesLease(e *env) {
	slow := e.claimed(action, "A")
	e.clock.Advance(Lease / 2)
	if r, err := e.store.Renew(e.ctx, &ledgerdb.RenewParams{Key: action, Fence: slow, TTL: Lease}); err != nil || r.Outcome != reconcile.Written {
		e.t.Fatalf("renew within the lease = %v, %v; want written", r, err)
	}
	e.clock.Advance(Lease) // the call hangs; the renewed lease runs out
	fresh := e.claimed(action, "B")
	e.settle(action, fresh, true, `{"refund":"re_B"}`)
	e.clock.Advance(40 * time.Second)

	if r, err := e.store.Renew(e.ctx, &ledgerdb.RenewParams{Key: action, Fence: slow, TTL: Lease}); err != nil || r.Outcome != reconcile.Superseded {
		e.t.Errorf("late renew = %v, %v; want superseded", r, err)
	}
	if r := e.settle(action, slow, false, "context deadline exceeded"); r.Outcome != reconcile.Superseded {
		e.t.Errorf("late failure = %s, want superseded", r.Outcome)
	}
	c := e.claimOf(action)
	if c.State != reconcile.ClaimDone || c.Fence != fresh {
		e.t.Errorf("claim = %s fence %d, want done fence %d", c.State, c.Fence, fresh)
	}
	if r := e.claim(action, "C"); r.Outcome != reconcile.Done || r.Claim.Fence != fresh {
		e.t.Errorf("claim after = %s fence %d, want done fence %d", r.Outcome, r.Claim.Fence, fresh)
	}
}

// A refund made by a superseded attempt is reported as an orphan with both
// ids, not written over the live one and not dropped.
func testOrphan(e *env) {
	slow := e.claimed(action, "A")
	e.clock.Advance(Lease)
	fresh := e.claimed(action, "B")
	e.settle(action, fresh, true, `{"refund":"re_B"}`)

	r := e.settle(action, slow, true, `{"refund":"re_A"}`)
	if r.Outcome != reconcile.Superseded || r.Orphan == nil {
		e.t.Fatalf("superseded success = %s orphan %v, want superseded with an orphan", r.Outcome, r.Orphan)
	}
	orphans, err := e.store.Orphans(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(orphans) != 1 {
		e.t.Fatalf("Orphans = %d rows, want 1", len(orphans))
	}
	o := orphans[0]
	if o.Key != action || o.StaleFence != slow || o.CurrentFence != fresh || o.CurrentState != reconcile.ClaimDone || o.CurrentOwner != "B" {
		e.t.Errorf("orphan = %+v; want key %s stale fence %d current fence %d done by B", o, action, slow, fresh)
	}
	jsonEqual(e.t, o.StaleResult, `{"refund":"re_A"}`)
	jsonEqual(e.t, o.CurrentResult, `{"refund":"re_B"}`)
	if o.ID != r.Orphan.ID || o.ID == 0 {
		e.t.Errorf("listed orphan id %d, returned %d", o.ID, r.Orphan.ID)
	}
	jsonEqual(e.t, e.claimOf(action).Result, `{"refund":"re_B"}`)
}

// Twenty-five claims at once on one key, across two independent handles:
// exactly one owner, everyone else in flight, and the token is 1.
func testConcurrentClaims(e *env) {
	stores := []ledgerdb.Store{e.store, e.another()}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results []*reconcile.ClaimResult
	)
	start := make(chan struct{})
	for i := range 25 {
		wg.Go(func() {
			<-start
			r, err := stores[i%2].Claim(e.ctx, &ledgerdb.ClaimParams{Key: action, Owner: fmt.Sprintf("w%d", i), TTL: Lease})
			if err != nil {
				e.t.Errorf("claim %d: %v", i, err)
				return
			}
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	owners := 0
	for _, r := range results {
		switch r.Outcome {
		case reconcile.Claimed:
			owners++
		case reconcile.InFlight:
		default:
			e.t.Errorf("claim outcome %s, want claimed or in_flight", r.Outcome)
		}
	}
	if owners != 1 || len(results) != 25 {
		e.t.Errorf("%d of %d concurrent claims got ownership, want exactly 1 of 25", owners, len(results))
	}
	if c := e.claimOf(action); c.Fence != 1 {
		e.t.Errorf("fence after concurrent claims = %d, want 1", c.Fence)
	}
}

func testSettleUnknownKey(e *env) {
	if _, err := e.settleErr("never:claimed", 1, true, `{"refund":"re_X"}`); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("settle of an unknown key: error %v, want ErrNotFound", err)
	}
	if _, err := e.settleErr("never:claimed", 1, false, "x"); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("failing an unknown key: error %v, want ErrNotFound", err)
	}
	if _, err := e.store.Renew(e.ctx, &ledgerdb.RenewParams{Key: "never:claimed", Fence: 1}); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("renew of an unknown key: error %v, want ErrNotFound", err)
	}
	if _, err := e.store.ClaimOf(e.ctx, "never:claimed"); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("ClaimOf after settling an unknown key: error %v, want ErrNotFound (nothing inserted)", err)
	}
}

func testNoDeadline(e *env) {
	r := e.claimTTL(action, "A", 0)
	if r.Outcome != reconcile.Claimed || !r.Claim.LeaseUntil.IsZero() {
		e.t.Fatalf("claim with no deadline = %s until %v, want claimed with no deadline", r.Outcome, r.Claim.LeaseUntil)
	}
	e.clock.Advance(24 * 365 * time.Hour)
	if r := e.claim(action, "B"); r.Outcome != reconcile.InFlight || r.Claim.Owner != "A" {
		e.t.Errorf("claim a year later = %s by %s, want in_flight held by A", r.Outcome, r.Claim.Owner)
	}
}

func testInFlightNoBump(e *env) {
	f := e.claimed(action, "A")
	e.clock.Advance(Lease - time.Second)
	for range 3 {
		if r := e.claim(action, "B"); r.Outcome != reconcile.InFlight || r.Claim.Fence != f {
			e.t.Errorf("claim of a live lease = %s fence %d, want in_flight fence %d", r.Outcome, r.Claim.Fence, f)
		}
	}
	e.clock.Advance(time.Second) // the lease ends exactly now
	if got := e.claimed(action, "B"); got != f+1 {
		e.t.Errorf("claim after expiry: fence %d, want %d", got, f+1)
	}
}

func testRenew(e *env) {
	f := e.claimed(action, "A")
	e.clock.Advance(Lease - 10*time.Second)
	r, err := e.store.Renew(e.ctx, &ledgerdb.RenewParams{Key: action, Fence: f, TTL: Lease})
	if err != nil || r.Outcome != reconcile.Written || !r.Claim.LeaseUntil.Equal(e.clock.Now().Add(Lease)) {
		e.t.Fatalf("Renew = %+v, %v; want written until %v", r, err, e.clock.Now().Add(Lease))
	}
	e.clock.Advance(Lease - time.Second)
	if r := e.claim(action, "B"); r.Outcome != reconcile.InFlight {
		e.t.Errorf("claim within the renewed lease = %s, want in_flight", r.Outcome)
	}
	e.clock.Advance(time.Second)
	if got := e.claimed(action, "B"); got != f+1 {
		e.t.Errorf("claim after the renewed lease: fence %d, want %d", got, f+1)
	}
}

func testFailedReclaim(e *env) {
	f := e.claimed(action, "A")
	e.settle(action, f, false, "timeout")
	r := e.claim(action, "B")
	if r.Outcome != reconcile.Claimed || r.Claim.Fence != f+1 || r.Claim.Owner != "B" || r.Claim.Error != "" {
		e.t.Errorf("claim after a failure = %s fence %d owner %s error %q; want claimed fence %d by B, error cleared", r.Outcome, r.Claim.Fence, r.Claim.Owner, r.Claim.Error, f+1)
	}
}

func testFencesIncrease(e *env) {
	var last int64
	for i := range 6 {
		f := e.claimed(action, fmt.Sprintf("w%d", i))
		if f <= last {
			e.t.Fatalf("takeover %d: fence %d, not greater than %d", i, f, last)
		}
		last = f
		if i%2 == 0 {
			e.clock.Advance(Lease) // expire
		} else {
			e.settle(action, f, false, "retry")
		}
	}
}

func testRuns(e *env) {
	if _, err := e.store.StartRun(e.ctx, &ledgerdb.StartRunParams{ID: "run_1", Args: json.RawMessage(`{"inputs":["a.csv"]}`)}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.StartRun(e.ctx, &ledgerdb.StartRunParams{ID: "run_1"}); err == nil {
		e.t.Errorf("starting run_1 twice succeeded, want an error")
	}
	e.clock.Advance(time.Minute)
	r, err := e.store.FinishRun(e.ctx, &ledgerdb.FinishRunParams{ID: "run_1", Status: reconcile.RunSucceeded, Result: json.RawMessage(`{"counts":{}}`)})
	if err != nil {
		e.t.Fatal(err)
	}
	if r.Status != reconcile.RunSucceeded || !r.FinishedAt.Equal(e.clock.Now()) || !r.StartedAt.Equal(e.clock.Now().Add(-time.Minute)) {
		e.t.Errorf("FinishRun = %+v", r)
	}
	if _, err := e.store.FinishRun(e.ctx, &ledgerdb.FinishRunParams{ID: "run_1", Status: reconcile.RunFailed}); !errors.Is(err, reconcile.ErrInvalidTransition) {
		e.t.Errorf("finishing run_1 twice: error %v, want ErrInvalidTransition", err)
	}
	got, err := e.store.Run(e.ctx, "run_1")
	if err != nil || got.Status != reconcile.RunSucceeded {
		e.t.Errorf("Run(run_1) = %+v, %v", got, err)
	}
	jsonEqual(e.t, got.Args, `{"inputs":["a.csv"]}`)
	if _, err := e.store.Run(e.ctx, "run_2"); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("Run(unknown) error = %v, want ErrNotFound", err)
	}
	if _, err := e.store.FinishRun(e.ctx, &ledgerdb.FinishRunParams{ID: "run_2", Status: reconcile.RunFailed}); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("FinishRun(unknown) error = %v, want ErrNotFound", err)
	}
}

// Runs lists the runs newest first, as many as asked, of the status asked,
// without their results.
func testRunsListed(e *env) {
	if runs, err := e.store.Runs(e.ctx, &ledgerdb.RunsParams{}); err != nil || len(runs) != 0 {
		e.t.Fatalf("Runs of an empty ledger = %v, %v; want none", runs, err)
	}
	for _, r := range []struct {
		id     string
		status reconcile.RunStatus
	}{{"run_a", reconcile.RunSucceeded}, {"run_b", reconcile.RunFailed}, {"run_c", reconcile.RunSucceeded}, {"run_d", reconcile.RunRunning}} {
		if _, err := e.store.StartRun(e.ctx, &ledgerdb.StartRunParams{ID: r.id, Args: json.RawMessage(`{"apply":true}`)}); err != nil {
			e.t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		if r.status != reconcile.RunRunning {
			if _, err := e.store.FinishRun(e.ctx, &ledgerdb.FinishRunParams{ID: r.id, Status: r.status, Result: json.RawMessage(`{"run_id":"` + r.id + `"}`)}); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	ids := func(p *ledgerdb.RunsParams) []string {
		runs, err := e.store.Runs(e.ctx, p)
		if err != nil {
			e.t.Fatalf("Runs(%+v): %v", p, err)
		}
		var out []string
		for _, r := range runs {
			if len(r.Result) != 0 {
				e.t.Errorf("Runs gives %s with its result %s, want it left out", r.ID, r.Result)
			}
			out = append(out, r.ID+" "+string(r.Status))
		}
		return out
	}
	for _, tc := range []struct {
		p    ledgerdb.RunsParams
		want []string
	}{
		{ledgerdb.RunsParams{}, []string{"run_d running", "run_c succeeded", "run_b failed", "run_a succeeded"}},
		{ledgerdb.RunsParams{Limit: 2}, []string{"run_d running", "run_c succeeded"}},
		{ledgerdb.RunsParams{Status: reconcile.RunSucceeded, Limit: 1}, []string{"run_c succeeded"}},
		{ledgerdb.RunsParams{Status: reconcile.RunFailed}, []string{"run_b failed"}},
	} {
		if diff := cmp.Diff(tc.want, ids(&tc.p)); diff != "" {
			e.t.Errorf("Runs(%+v) (-want +got):\n%s", tc.p, diff)
		}
	}
	runs, _ := e.store.Runs(e.ctx, &ledgerdb.RunsParams{Limit: 1})
	if len(runs) != 1 || !runs[0].StartedAt.Equal(e.clock.Now().Add(-time.Minute)) || !runs[0].FinishedAt.IsZero() {
		e.t.Errorf("Runs(limit 1) = %+v; want run_d, started a minute ago, not finished", runs)
	}
	jsonEqual(e.t, runs[0].Args, `{"apply":true}`)
}

// A stale owner settles while the new owner still holds the claim: nothing
// changes, and the new owner settles as usual afterwards.
func testStaleWriteWhileNewOwnerHolds(e *env) {
	slow := e.claimed(action, "A")
	e.clock.Advance(Lease)
	fresh := e.claimed(action, "B")
	for _, success := range []bool{false, true} {
		if r := e.settle(action, slow, success, `{"refund":"re_A"}`); r.Outcome != reconcile.Superseded {
			e.t.Errorf("stale settle (success %v) while B holds: outcome %s, want superseded", success, r.Outcome)
		}
	}
	c := e.claimOf(action)
	if c.State != reconcile.ClaimHeld || c.Owner != "B" || c.Fence != fresh || c.Result != nil {
		e.t.Errorf("claim after stale settles = %s by %s fence %d result %s; want held by B fence %d, no result", c.State, c.Owner, c.Fence, c.Result, fresh)
	}
	if r := e.settle(action, fresh, true, `{"refund":"re_B"}`); r.Outcome != reconcile.Written {
		e.t.Errorf("B's settle = %s, want written", r.Outcome)
	}
}

func testLoadEffects(e *env) {
	confirmedAt := e.clock.Now().Add(time.Minute)
	in := []reconcile.Effect{
		{Key: "w:charge:0", RunID: "w", Step: "charge", Provider: "stripe", Status: reconcile.StatusConfirmed, ExternalID: "pi_0",
			Request: json.RawMessage(`{"amount":100,"currency":"eur"}`), Response: json.RawMessage(`{"id":"pi_0"}`), CreatedAt: e.clock.Now(), ConfirmedAt: confirmedAt},
		{Key: "w:charge:1", RunID: "w", Step: "charge", Provider: "stripe", Status: reconcile.StatusAttempted,
			Request: json.RawMessage(`{"amount":200,"currency":"eur"}`), CreatedAt: e.clock.Now()},
	}
	if err := e.store.LoadEffects(e.ctx, in); err != nil {
		e.t.Fatal(err)
	}
	for _, want := range in {
		got := e.effect(want.Key)
		jsonEqual(e.t, got.Request, string(want.Request))
		if want.Response != nil {
			jsonEqual(e.t, got.Response, string(want.Response))
		}
		got.Request, got.Response, want.Request, want.Response = nil, nil, nil, nil
		if diff := cmp.Diff(want, *got); diff != "" {
			e.t.Errorf("loaded effect (-want +got):\n%s", diff)
		}
	}
	if err := e.store.LoadEffects(e.ctx, in[1:]); err == nil {
		e.t.Errorf("loading an existing key succeeded")
	}
}

// NewClock returns a fake clock stopped at a fixed instant, so that the
// lease tests move it instead of sleeping.
func NewClock() *clock.Fake { return clock.NewFake(time.Date(2026, 11, 2, 3, 0, 0, 0, time.UTC)) }
