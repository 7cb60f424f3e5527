package driver

import (
	"errors"
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

// ClaimTx is a driver's statements of the claim flows, all in one
// transaction. A write that changes no row returns reconcile.ErrNotFound.
// Acquire and Settle run them in the same order for both drivers.
type ClaimTx interface {
	EffectTx // to record an action's own effect row with its claim
	// Take inserts the first claim on p.Key, or takes over a failed claim
	// or an expired lease with the next fence.
	Take(p *ledgerdb.ClaimParams, now time.Time) (*reconcile.Claim, error)
	// Write settles the claim held under p.Fence (SettleValues).
	Write(p *ledgerdb.SettleParams, now time.Time) (*reconcile.Claim, error)
	// Confirm confirms an effect that is still attempted.
	Confirm(p *ledgerdb.ConfirmParams, now time.Time) error
	// Current reads the claim on key as it stands, locked for the rest of
	// the transaction where the database locks rows.
	Current(key string) (*reconcile.Claim, error)
	// AddOrphan records o and returns its id.
	AddOrphan(o *reconcile.Orphan) (int64, error)
}

// Acquire takes the claim p asks for, recording p.Effect with it when
// it is taken, or says why it is not taken (Unclaimable). It returns nil,
// nil when the claim became claimable between the write and the read: the
// caller runs it again in a new transaction.
func Acquire(tx ClaimTx, p *ledgerdb.ClaimParams, now time.Time) (*reconcile.ClaimResult, error) {
	c, err := tx.Take(p, now)
	if err == nil {
		if p.Effect != nil {
			if _, err := Record(tx, p.Effect, now); err != nil {
				return nil, err
			}
		}
		return &reconcile.ClaimResult{Outcome: reconcile.ClaimOutcomeClaimed, Claim: *c}, nil
	}
	if !errors.Is(err, reconcile.ErrNotFound) {
		return nil, err
	}
	if c, err = tx.Current(p.Key); err != nil {
		return nil, err
	}
	return Unclaimable(c, now), nil
}

// Settle completes or fails the claim held under p.Fence, confirming
// p.Confirm with a success that is written. When nothing is written it
// says why (Unwritten) and records a superseded success as an orphan.
func Settle(tx ClaimTx, p *ledgerdb.SettleParams, now time.Time) (*reconcile.WriteResult, error) {
	c, err := tx.Write(p, now)
	if err == nil {
		if p.Success && p.Confirm != nil {
			if err := tx.Confirm(p.Confirm, now); err != nil {
				return nil, err
			}
		}
		return &reconcile.WriteResult{Outcome: reconcile.WriteOutcomeWritten, Claim: *c}, nil
	}
	if !errors.Is(err, reconcile.ErrNotFound) {
		return nil, err
	}
	if c, err = tx.Current(p.Key); err != nil {
		return nil, err
	}
	res, err := Unwritten(c, p.Fence)
	if err != nil || !p.Success {
		return res, err
	}
	o := NewOrphan(c, p, now)
	if o.ID, err = tx.AddOrphan(o); err != nil {
		return nil, err
	}
	res.Orphan = o
	return res, nil
}
