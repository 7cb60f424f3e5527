package report

import (
	"time"

	"reconcile"
)

// Escalation is a finding handed to a person, in the one shape every
// output shows it in: `show` and `escalations --json`, the spreadsheet's
// Escalations sheet and the webhook pager's body. A time not reached yet
// is null.
type Escalation struct {
	Key        string     `json:"key"` // the escalate action's key, the pager's dedup key
	Subject    string     `json:"subject"`
	Class      string     `json:"class"`
	Reason     string     `json:"reason"`
	RunID      string     `json:"run_id"` // the run that opened it
	Status     string     `json:"status"`
	Generation int        `json:"generation"`
	OpenedAt   *time.Time `json:"opened_at"`
	PagedAt    *time.Time `json:"paged_at"`
	// AcknowledgedAt and AcknowledgedBy say who took it in hand, and when.
	AcknowledgedAt *time.Time `json:"acknowledged_at"`
	AcknowledgedBy string     `json:"acknowledged_by"`
	ResolvedAt     *time.Time `json:"resolved_at"`
	ResolvedBy     string     `json:"resolved_by"`
	Note           string     `json:"note"`
	// PageFailed is set when the pager did not take its page (PagedAt is
	// then null; the next run that applies sends it again), and PageError
	// says what the pager answered, without secrets.
	PageFailed bool   `json:"page_failed"`
	PageError  string `json:"page_error"`
}

// EscalationOf is e as the outputs show it.
func EscalationOf(e *reconcile.Escalation) Escalation {
	return Escalation{Key: e.Key, Subject: e.Subject, Class: string(e.Class), Reason: e.Reason, RunID: e.RunID, Status: string(e.Status),
		Generation: e.Generation, OpenedAt: NullTime(e.OpenedAt), PagedAt: NullTime(e.PagedAt), AcknowledgedAt: NullTime(e.AcknowledgedAt),
		AcknowledgedBy: e.AcknowledgedBy, ResolvedAt: NullTime(e.ResolvedAt), ResolvedBy: e.ResolvedBy, Note: e.Note}
}

// NullTime is t in UTC, or nil (null in JSON) when it is zero: a time not
// reached yet.
func NullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// timeOf is *t, or the zero time when t is nil.
func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
