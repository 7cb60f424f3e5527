package driver

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
)

// The functions below decide, the same way for every driver, what an
// effect write that changed nothing means: a repeat of what is already
// recorded (fine, return the row) or a conflicting change (refused).

// SameAttempt is EffectRecord's answer when the key exists: the existing
// row when it records the same attempt (canonical request req), else a
// *reconcile.KeyReusedError.
func SameAttempt(e *reconcile.Effect, p *ledgerdb.RecordParams, req []byte) (*ledgerdb.RecordResult, error) {
	have, err := CanonicalJSON(e.Request)
	if err != nil {
		return nil, fmt.Errorf("effect %s: recorded request: %w", e.Key, err)
	}
	if !bytes.Equal(have, req) || e.RunID != p.RunID || e.Step != p.Step || e.Provider != p.Provider {
		return nil, &reconcile.KeyReusedError{Key: e.Key, Existing: have, Given: req}
	}
	return &ledgerdb.RecordResult{Effect: *e}, nil
}

// AlreadyConfirmed is Confirm's answer when the effect was not attempted.
func AlreadyConfirmed(e *reconcile.Effect, externalID string) (*reconcile.Effect, error) {
	if e.Status == reconcile.StatusConfirmed && e.ExternalID == externalID {
		return e, nil
	}
	if e.Status == reconcile.StatusConfirmed {
		return nil, fmt.Errorf("effect %s: %w: already confirmed as %s, not %s", e.Key, reconcile.ErrInvalidTransition, e.ExternalID, externalID)
	}
	return nil, fmt.Errorf("effect %s: %w: it is %s", e.Key, reconcile.ErrInvalidTransition, e.Status)
}

// AlreadyAbandoned is Abandon's answer when the effect was not attempted.
func AlreadyAbandoned(e *reconcile.Effect) (*reconcile.Effect, error) {
	if e.Status == reconcile.StatusAbandoned {
		return e, nil
	}
	return nil, fmt.Errorf("effect %s: %w: it is %s, and only an attempted effect can be abandoned", e.Key, reconcile.ErrInvalidTransition, e.Status)
}

// ResolvedStatus is what a resolution does to the effect row: an attempted
// effect resolved as abandoned is abandoned; one resolved as confirmed with
// an external id is confirmed with it. Anything else leaves the row as it
// is (an empty status).
func ResolvedStatus(e *reconcile.Effect, p *ledgerdb.ResolveParams) (reconcile.Status, string) {
	if e.Status != reconcile.StatusAttempted {
		return "", ""
	}
	switch {
	case p.As == reconcile.ResolutionAbandoned:
		return reconcile.StatusAbandoned, ""
	case p.As == reconcile.ResolutionConfirmed && p.ExternalID != "":
		return reconcile.StatusConfirmed, p.ExternalID
	}
	return "", ""
}

// Acknowledged is Acknowledge's answer when the escalation was not open.
func Acknowledged(e *reconcile.Escalation) (*reconcile.Escalation, error) {
	if e.Status == reconcile.EscalationStatusAcknowledged {
		return e, nil
	}
	return nil, fmt.Errorf("escalation %s: %w: it is %s", e.Key, reconcile.ErrInvalidTransition, e.Status)
}

// EffectTx is a driver's statements of recording an attempt, in one
// transaction. Insert returns reconcile.ErrNotFound when the key exists.
type EffectTx interface {
	// Insert writes p as attempted, with its canonical request req.
	Insert(p *ledgerdb.RecordParams, req []byte, now time.Time) (*reconcile.Effect, error)
	// Get reads the effect with key.
	Get(key string) (*reconcile.Effect, error)
}

// Record writes p as an attempted effect, or returns the row when it
// records the same attempt (SameAttempt).
func Record(tx EffectTx, p *ledgerdb.RecordParams, now time.Time) (*ledgerdb.RecordResult, error) {
	req, err := CanonicalJSON(p.Request)
	if err != nil {
		return nil, err
	}
	e, err := tx.Insert(p, req, now)
	if err == nil {
		return &ledgerdb.RecordResult{Effect: *e, Created: true}, nil
	}
	if !errors.Is(err, reconcile.ErrNotFound) {
		return nil, err
	}
	if e, err = tx.Get(p.Key); err != nil {
		return nil, err
	}
	return SameAttempt(e, p, req)
}
