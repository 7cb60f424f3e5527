package ledgerdbtest

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
)

const action = "run_8f3c1a:charge:0:compensate:ch_extra"

// The bug from seed 004, verbatim: attempt A overruns its lease, B takes over
// and completes, then A's late failure arrives.
func testStaleFailureCannotUndoCompleted(e *env) {
	slow := e.claimed(action, "A")
	e.clock.Advance(Lease)
	fresh := e.claimed(action, "B")
	e.settle(action, fresh, true, `{"refund":"re_B"}`)

	stale := e.settle(action, slow, false, "provider outage")
	if stale.Outcome != reconcile.WriteOutcomeSuperseded {
		e.t.Fatalf("stale failure: outcome %s, want superseded", stale.Outcome)
	}
	if c := e.claimOf(action); c.State != reconcile.ClaimStateDone {
		e.t.Errorf("state after the stale failure = %s, want done: the refund B made must survive", c.State)
	}
	// ...and the action must not be re-opened for a second refund.
	if r := e.claim(action, "C"); r.Outcome != reconcile.ClaimOutcomeDone {
		e.t.Errorf("claim after the stale failure = %s, want done", r.Outcome)
	}
}

func testStaleCompletionCannotOverwrite(e *env) {
	slow := e.claimed(action, "A")
	e.clock.Advance(Lease + time.Second)
	fresh := e.claimed(action, "B")
	e.settle(action, fresh, true, `{"refund":"re_B"}`)

	stale := e.settle(action, slow, true, `{"refund":"re_A"}`)
	if stale.Outcome != reconcile.WriteOutcomeSuperseded {
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
		if r.Outcome != reconcile.WriteOutcomeSuperseded {
			e.t.Errorf("stale settle (success %v) after the newer attempt failed: outcome %s, want superseded", success, r.Outcome)
		}
	}
	c := e.claimOf(action)
	if c.State != reconcile.ClaimStateFailed || c.Fence != fresh || c.Error != "card declined" {
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
	if _, err := e.store.ClaimRenew(e.ctx, &ledgerdb.RenewParams{Key: action, Fence: f, TTL: Lease}); !errors.Is(err, reconcile.ErrAlreadySettled) {
		e.t.Errorf("renew after settle: error %v, want ErrAlreadySettled", err)
	}
	c := e.claimOf(action)
	if c.State != reconcile.ClaimStateDone {
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
		if _, err := e.store.ClaimRenew(e.ctx, &ledgerdb.RenewParams{Key: action, Fence: bad, TTL: Lease}); !errors.Is(err, reconcile.ErrUnknownFence) {
			e.t.Errorf("renew with token %d: error %v, want ErrUnknownFence", bad, err)
		}
	}
	if c := e.claimOf(action); c.State != reconcile.ClaimStateHeld || c.Fence != f || c.Result != nil {
		e.t.Errorf("claim after unknown tokens = %s fence %d result %s; want held fence %d no result", c.State, c.Fence, c.Result, f)
	}
	orphans, err := e.store.OrphanList(e.ctx)
	if err != nil || len(orphans) != 0 {
		e.t.Errorf("Orphans = %v, %v; an unknown token must not be recorded as an orphan", orphans, err)
	}
}

// A provider call that hangs past the lease: the slow owner can neither
// renew nor fail the action another attempt completed.
func testOutlivesLease(e *env) {
	slow := e.claimed(action, "A")
	e.clock.Advance(Lease / 2)
	if r, err := e.store.ClaimRenew(e.ctx, &ledgerdb.RenewParams{Key: action, Fence: slow, TTL: Lease}); err != nil || r.Outcome != reconcile.WriteOutcomeWritten {
		e.t.Fatalf("renew within the lease = %v, %v; want written", r, err)
	}
	e.clock.Advance(Lease) // the call hangs; the renewed lease runs out
	fresh := e.claimed(action, "B")
	e.settle(action, fresh, true, `{"refund":"re_B"}`)
	e.clock.Advance(40 * time.Second)

	if r, err := e.store.ClaimRenew(e.ctx, &ledgerdb.RenewParams{Key: action, Fence: slow, TTL: Lease}); err != nil || r.Outcome != reconcile.WriteOutcomeSuperseded {
		e.t.Errorf("late renew = %v, %v; want superseded", r, err)
	}
	if r := e.settle(action, slow, false, "context deadline exceeded"); r.Outcome != reconcile.WriteOutcomeSuperseded {
		e.t.Errorf("late failure = %s, want superseded", r.Outcome)
	}
	c := e.claimOf(action)
	if c.State != reconcile.ClaimStateDone || c.Fence != fresh {
		e.t.Errorf("claim = %s fence %d, want done fence %d", c.State, c.Fence, fresh)
	}
	if r := e.claim(action, "C"); r.Outcome != reconcile.ClaimOutcomeDone || r.Claim.Fence != fresh {
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
	if r.Outcome != reconcile.WriteOutcomeSuperseded || r.Orphan == nil {
		e.t.Fatalf("superseded success = %s orphan %v, want superseded with an orphan", r.Outcome, r.Orphan)
	}
	orphans, err := e.store.OrphanList(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(orphans) != 1 {
		e.t.Fatalf("Orphans = %d rows, want 1", len(orphans))
	}
	o := orphans[0]
	if o.Key != action || o.StaleFence != slow || o.CurrentFence != fresh || o.CurrentState != reconcile.ClaimStateDone || o.CurrentOwner != "B" {
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
			r, err := stores[i%2].ClaimAcquire(e.ctx, &ledgerdb.ClaimParams{Key: action, Owner: fmt.Sprintf("w%d", i), TTL: Lease})
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
		case reconcile.ClaimOutcomeClaimed:
			owners++
		case reconcile.ClaimOutcomeInFlight:
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
	if _, err := e.store.ClaimRenew(e.ctx, &ledgerdb.RenewParams{Key: "never:claimed", Fence: 1}); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("renew of an unknown key: error %v, want ErrNotFound", err)
	}
	if _, err := e.store.ClaimGet(e.ctx, "never:claimed"); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("ClaimOf after settling an unknown key: error %v, want ErrNotFound (nothing inserted)", err)
	}
}

func testNoDeadline(e *env) {
	r := e.claimTTL(action, "A", 0)
	if r.Outcome != reconcile.ClaimOutcomeClaimed || !r.Claim.LeaseUntil.IsZero() {
		e.t.Fatalf("claim with no deadline = %s until %v, want claimed with no deadline", r.Outcome, r.Claim.LeaseUntil)
	}
	e.clock.Advance(24 * 365 * time.Hour)
	if r := e.claim(action, "B"); r.Outcome != reconcile.ClaimOutcomeInFlight || r.Claim.Owner != "A" {
		e.t.Errorf("claim a year later = %s by %s, want in_flight held by A", r.Outcome, r.Claim.Owner)
	}
}

func testInFlightNoBump(e *env) {
	f := e.claimed(action, "A")
	e.clock.Advance(Lease - time.Second)
	for range 3 {
		if r := e.claim(action, "B"); r.Outcome != reconcile.ClaimOutcomeInFlight || r.Claim.Fence != f {
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
	r, err := e.store.ClaimRenew(e.ctx, &ledgerdb.RenewParams{Key: action, Fence: f, TTL: Lease})
	if err != nil || r.Outcome != reconcile.WriteOutcomeWritten || !r.Claim.LeaseUntil.Equal(e.clock.Now().Add(Lease)) {
		e.t.Fatalf("Renew = %+v, %v; want written until %v", r, err, e.clock.Now().Add(Lease))
	}
	e.clock.Advance(Lease - time.Second)
	if r := e.claim(action, "B"); r.Outcome != reconcile.ClaimOutcomeInFlight {
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
	if r.Outcome != reconcile.ClaimOutcomeClaimed || r.Claim.Fence != f+1 || r.Claim.Owner != "B" || r.Claim.Error != "" {
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

// A stale owner settles while the new owner still holds the claim: nothing
// changes, and the new owner settles as usual afterwards.
func testStaleWriteWhileNewOwnerHolds(e *env) {
	slow := e.claimed(action, "A")
	e.clock.Advance(Lease)
	fresh := e.claimed(action, "B")
	for _, success := range []bool{false, true} {
		if r := e.settle(action, slow, success, `{"refund":"re_A"}`); r.Outcome != reconcile.WriteOutcomeSuperseded {
			e.t.Errorf("stale settle (success %v) while B holds: outcome %s, want superseded", success, r.Outcome)
		}
	}
	c := e.claimOf(action)
	if c.State != reconcile.ClaimStateHeld || c.Owner != "B" || c.Fence != fresh || c.Result != nil {
		e.t.Errorf("claim after stale settles = %s by %s fence %d result %s; want held by B fence %d, no result", c.State, c.Owner, c.Fence, c.Result, fresh)
	}
	if r := e.settle(action, fresh, true, `{"refund":"re_B"}`); r.Outcome != reconcile.WriteOutcomeWritten {
		e.t.Errorf("B's settle = %s, want written", r.Outcome)
	}
}
