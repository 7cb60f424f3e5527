package reconcile

import (
	"encoding/json"
	"time"
)

// ClaimState is where a claim stands.
type ClaimState string

// The states of a claim.
const (
	ClaimStateHeld   ClaimState = "held"   // an owner holds it, under a lease or with no deadline
	ClaimStateDone   ClaimState = "done"   // completed: it will never be claimed again
	ClaimStateFailed ClaimState = "failed" // failed: the next claim takes it with a new fence
)

// Claim is the ownership record of one action (or of a run): who holds it,
// under which fence token, until when, and how it ended.
type Claim struct {
	Key   string
	Owner string
	// Fence is the token of the latest claim. It only ever grows, and every
	// write that settles the claim must present it.
	Fence      int64
	State      ClaimState
	LeaseUntil time.Time // zero when the lease has no deadline: live until settled
	Result     json.RawMessage
	Error      string
	ClaimedAt  time.Time
	SettledAt  time.Time // zero until settled
}

// ClaimOutcome says what a claim attempt got.
type ClaimOutcome string

// The outcomes of a claim attempt.
const (
	// ClaimOutcomeClaimed: the caller owns the action now and must settle it with the
	// returned fence token.
	ClaimOutcomeClaimed ClaimOutcome = "claimed"
	// ClaimOutcomeInFlight: someone else holds a live lease; come back later. The fence
	// token is not bumped.
	ClaimOutcomeInFlight ClaimOutcome = "in_flight"
	// ClaimOutcomeDone: the action was completed; there is nothing to do.
	ClaimOutcomeDone ClaimOutcome = "done"
)

// ClaimResult is what a claim attempt returns: the outcome and the claim as
// it stands after the attempt.
type ClaimResult struct {
	Outcome ClaimOutcome
	Claim   Claim
}

// WriteOutcome says whether a fenced write landed.
type WriteOutcome string

// The outcomes of a fenced write (renew, complete, fail).
const (
	WriteOutcomeWritten WriteOutcome = "written"
	// WriteOutcomeSuperseded: a newer claim holds the key; the write changed nothing.
	WriteOutcomeSuperseded WriteOutcome = "superseded"
)

// WriteResult is what a fenced write returns. When a completion is
// superseded, Orphan records the effect that the superseded owner made, so
// it is reported and never dropped.
type WriteResult struct {
	Outcome WriteOutcome
	Claim   Claim   // the claim as it stands after the write
	Orphan  *Orphan // set when a superseded owner reported a success
}

// Orphan is an effect made by an owner that had lost its claim: real money,
// or a real email, that nobody will be shown unless it is reported. It keeps
// both sides: what the stale owner made and what the current claim holds.
type Orphan struct {
	ID            int64
	Key           string
	StaleFence    int64
	StaleOwner    string
	StaleResult   json.RawMessage
	CurrentFence  int64
	CurrentOwner  string
	CurrentState  ClaimState
	CurrentResult json.RawMessage
	RecordedAt    time.Time
}
