package driver

import (
	"fmt"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
)

// The functions below decide, the same way for every driver, what a claim
// write that changed nothing means. They only read the row as it stands.

// Unclaimable returns the answer to a claim that did not take the row: Done
// or InFlight. It returns nil when the row is claimable after all (it
// changed between the write and the read), and the claim should be tried
// again.
func Unclaimable(c *reconcile.Claim, now time.Time) *reconcile.ClaimResult {
	switch {
	case c.State == reconcile.ClaimStateDone:
		return &reconcile.ClaimResult{Outcome: reconcile.ClaimOutcomeDone, Claim: *c}
	case c.State == reconcile.ClaimStateHeld && (c.LeaseUntil.IsZero() || c.LeaseUntil.After(now)):
		return &reconcile.ClaimResult{Outcome: reconcile.ClaimOutcomeInFlight, Claim: *c}
	}
	return nil
}

// Unwritten returns the answer to a fenced write (renew or settle) that
// changed nothing: Superseded when a newer claim exists, else an error.
func Unwritten(c *reconcile.Claim, fence int64) (*reconcile.WriteResult, error) {
	switch {
	case fence < 1 || fence > c.Fence:
		return nil, fmt.Errorf("%w: %d was never issued for %s (latest is %d)", reconcile.ErrUnknownFence, fence, c.Key, c.Fence)
	case fence < c.Fence:
		return &reconcile.WriteResult{Outcome: reconcile.WriteOutcomeSuperseded, Claim: *c}, nil
	}
	return nil, fmt.Errorf("%w: %s is %s under fence %d", reconcile.ErrAlreadySettled, c.Key, c.State, fence)
}

// SettleValues returns the state, result and error columns a settle writes
// (nil is NULL).
func SettleValues(p *ledgerdb.SettleParams) (state string, result, errText *string) {
	if p.Success {
		if len(p.Result) > 0 {
			s := string(p.Result)
			result = &s
		}
		return string(reconcile.ClaimStateDone), result, nil
	}
	return string(reconcile.ClaimStateFailed), nil, &p.Error
}

// NewOrphan describes the success of a superseded owner against the claim
// as it stands now.
func NewOrphan(cur *reconcile.Claim, p *ledgerdb.SettleParams, now time.Time) *reconcile.Orphan {
	owner := p.Owner
	if owner == "" {
		owner = fmt.Sprintf("holder of fence %d", p.Fence)
	}
	return &reconcile.Orphan{
		Key:           p.Key,
		StaleFence:    p.Fence,
		StaleOwner:    owner,
		StaleResult:   p.Result,
		CurrentFence:  cur.Fence,
		CurrentOwner:  cur.Owner,
		CurrentState:  cur.State,
		CurrentResult: cur.Result,
		RecordedAt:    now,
	}
}
