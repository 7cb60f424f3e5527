package reconcile

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Status is the application's view of an external write, as stored in the
// effect table's status column.
type Status string

// The statuses an effect row may have.
const (
	// StatusAttempted means the row was written before the external call and
	// nothing is known yet about whether the call landed: the effect is in doubt.
	StatusAttempted Status = "attempted"
	// StatusConfirmed means the external write is known to have happened and its
	// external id is recorded.
	StatusConfirmed Status = "confirmed"
	// StatusAbandoned means someone decided the effect will never be confirmed.
	StatusAbandoned Status = "abandoned"
)

// Effect is one intended external write, a row of the effect table.
type Effect struct {
	Key         string          // run_8f3c1a:charge:0
	RunID       string          // run_8f3c1a
	Step        string          // charge | refund | payout | compensate | ...
	Provider    string          // stripe | adyen | paypal | bank | ...
	Status      Status          // attempted | confirmed | abandoned
	ExternalID  string          // the provider's id once known, else ""
	Request     json.RawMessage // what was sent
	Response    json.RawMessage // what came back, nil until known
	CreatedAt   time.Time       // UTC
	ConfirmedAt time.Time       // UTC; zero until confirmed
	// ParentKey and Depth place a compensation: depth 1, parent the key of
	// the effect it compensates. An application's own effects are depth 0
	// with no parent. Nothing is ever made at depth 2.
	ParentKey string
	Depth     int
}

// EffectKey is the one function that builds an effect's idempotency key. Its
// parts are facts that survive a restart, so a resumed run derives the same
// key: never a timestamp, a random value or an attempt counter.
func EffectKey(runID, step string, seq int) string {
	return runID + ":" + step + ":" + strconv.Itoa(seq)
}

// CompensationKey is the key of the compensation that undoes transaction
// txID of the effect keyed effectKey. It is derived only from recorded
// facts, so every run, crash or replica derives the same key.
func CompensationKey(effectKey, txID string) string {
	return effectKey + ":compensate:" + txID
}

// IsCompensationKey reports whether key is a compensation's, as
// CompensationKey makes them.
func IsCompensationKey(key string) bool {
	return strings.Contains(key, ":compensate:")
}

// EscalationKey is the pager's dedup key for a finding about subject (an
// effect key, or provider:transaction for unexpected money): re-runs and
// replicas derive the same key and page once.
func EscalationKey(subject string, c Class) string {
	return subject + ":escalate:" + string(c)
}
