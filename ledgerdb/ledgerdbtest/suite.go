// Package ledgerdbtest is the one behavioural suite that every ledger driver
// runs, so that PostgreSQL and SQLite cannot drift apart, and the fresh
// ledgers on each driver that the tests of other packages use (Each, New).
package ledgerdbtest

import (
	"context"
	"encoding/json"
	"fmt"
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
		{"TheFirstRunToMatchASourceIsNoted", testTheFirstRunToMatchASourceIsNoted},
		{"IngestKeepsEveryValue", testIngestKeepsEveryValue},
		{"IngestSameContentTwiceAddsNothing", testIngestSameContentTwiceAddsNothing},
		{"IngestFailureRollsBackEverything", testIngestFailureRollsBackEverything},
		{"ConcurrentIngestOfOneSourceWritesItOnce", testConcurrentIngestOnce},
		{"IndexesDeferredForALargeInput", testIndexesDeferredForALargeInput},
		{"ScopeFollowsOpenEffectsAndNewEvidence", testScopeFollowsOpenEffectsAndNewEvidence},
		{"AnEffectLeftWithoutAStateStaysInScope", testAnEffectLeftWithoutAStateStaysInScope},
		{"FindingsConfirmAttemptedEffectsWithoutOverwritingTheApplication", testFindingsConfirmAttemptedEffects},
		{"FindingsRoundTrip", testFindingsRoundTrip},
		{"LinkedEvidenceFindsEarlierEvidence", testLinkedEvidence},
		{"AKeptSourceKeepsTheRawRowsOfItsFindings", testAKeptSourceKeepsTheRawRowsOfItsFindings},
		{"ClaimWritesCompensationRowInTheSameTransaction", testClaimWritesCompensationRow},
		{"ClaimWithConflictingRowTakesNothing", testClaimWithConflictingRowTakesNothing},
		{"SettleConfirmsOnlyWhenWritten", testSettleConfirmsOnlyWhenWritten},
		{"EscalationOpensOnceAndAgainAfterResolve", testEscalationOpensOnce},
		{"ResolveAbandonsAndClosesScope", testResolveAbandonsAndClosesScope},
		{"StateSinceFollowsClassChanges", testStateSinceFollowsClassChanges},
		{"ClaimsOfAnEffect", testClaimsOfAnEffect},
		{"ClaimGetMany", testClaimsByKey},
		{"CompensatedDuplicateIsFinal", testCompensatedDuplicateIsFinal},
		{"AcknowledgeEscalation", testAcknowledgeEscalation},
		{"RunResultIsKeptAsGiven", testRunResult},
		{"CoverageOfTheRunsSources", testCoverage},
		{"RejectedRowsOfASource", testRejectedRows},
		{"MatchPartitionsKeepWhatRelatesTogether", testMatchPartitionsKeepWhatRelatesTogether},
		{"MatchNamedBackComesWithItsEarlierRecordsOnce", testMatchNamedBackComesWithItsEarlierRecordsOnce},
		{"MatchPartitionsGiveEffectsAsTheMatcherReadsThem", testMatchPartitionsGiveEffectsAsTheMatcherReadsThem},
		{"MatchPartitionsAreBounded", testMatchPartitionsAreBounded},
		{"MatchPartitionsRecordConfirmations", testMatchPartitionsRecordConfirmations},
		{"MatchTakesTheRunsRecordsAsIngested", testMatchTakesTheRunsRecordsAsIngested},
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
	r, err := e.store.EffectRecord(e.ctx, &ledgerdb.RecordParams{Key: key, RunID: "run_8f3c1a", Step: "charge", Provider: "stripe", Request: json.RawMessage(req)})
	if err != nil {
		e.t.Fatalf("EffectRecord(%s) error: %v", key, err)
	}
	return r
}

func (e *env) effect(key string) *reconcile.Effect {
	e.t.Helper()
	got, err := e.store.EffectGet(e.ctx, key)
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
	r, err := e.store.ClaimAcquire(e.ctx, &ledgerdb.ClaimParams{Key: key, Owner: owner, TTL: ttl})
	if err != nil {
		e.t.Fatalf("Claim(%s, %s) error: %v", key, owner, err)
	}
	return r
}

// claimed claims key and fails the test unless the caller became the owner.
func (e *env) claimed(key, owner string) int64 {
	e.t.Helper()
	r := e.claim(key, owner)
	if r.Outcome != reconcile.ClaimOutcomeClaimed {
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
	return e.store.ClaimSettle(e.ctx, p)
}

func (e *env) claimOf(key string) *reconcile.Claim {
	e.t.Helper()
	c, err := e.store.ClaimGet(e.ctx, key)
	if err != nil {
		e.t.Fatalf("ClaimGet(%s) error: %v", key, err)
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

// NewClock returns a fake clock stopped at a fixed instant, so that the
// lease tests move it instead of sleeping.
func NewClock() *clock.Fake { return clock.NewFake(time.Date(2026, 11, 2, 3, 0, 0, 0, time.UTC)) }
