package reconcile

import "time"

// EscalationStatus is where a page to a person stands.
type EscalationStatus string

// The statuses of an escalation.
const (
	EscalationStatusOpen         EscalationStatus = "open"
	EscalationStatusAcknowledged EscalationStatus = "acknowledged" // someone is on it
	EscalationStatusResolved     EscalationStatus = "resolved"
)

// Escalation is something handed to a person: a compensation in doubt, a
// mismatched effect, a refused action, unexpected money above a threshold,
// a run held back by its blast-radius limits. Its key is the pager's dedup
// key, so re-runs and replicas page once.
type Escalation struct {
	Key     string // <subject>:escalate:<class>, or the action key
	Subject string // the effect key, or provider:transaction for unexpected money
	Class   Class
	Reason  string
	RunID   string // the run that opened it
	Status  EscalationStatus
	// Generation counts openings: a resolved escalation that comes back is
	// opened again under the next generation, and paged again once.
	Generation int
	OpenedAt   time.Time
	PagedAt    time.Time // zero until the pager took it
	// AcknowledgedAt and AcknowledgedBy say who took it in hand, and when.
	AcknowledgedAt time.Time
	AcknowledgedBy string
	ResolvedAt     time.Time
	ResolvedBy     string
	Note           string
}

// Resolution is how a person closed an effect: what they decided and why.
type Resolution string

// The resolutions `reconcile resolve --as` takes.
const (
	ResolutionConfirmed   Resolution = "confirmed"   // it happened once, as it should: nothing to do
	ResolutionAbandoned   Resolution = "abandoned"   // it will not happen, and that is right
	ResolutionCompensated Resolution = "compensated" // a person made it right by hand
)

// EffectState is where an effect stands after the latest run that
// classified it, or after a person resolved it.
type EffectState struct {
	Key          string
	Class        Class // or "resolved"
	Final        bool  // not read again unless new evidence links to it
	RunID        string
	ClassifiedAt time.Time
	Since        time.Time // when it entered this class: how long it has been deferred, say
}

// ClassResolved is the state class of an effect a person resolved.
const ClassResolved Class = "resolved"
