package report

import "time"

// Escalation is a finding handed to a person, as the ledger records it:
// when it was opened and paged, and how it was closed.
type Escalation struct {
	Key        string    `json:"key"` // the escalate action's key, the pager's dedup key
	Subject    string    `json:"subject"`
	Class      string    `json:"class"`
	Reason     string    `json:"reason"`
	Status     string    `json:"status"`
	OpenedAt   time.Time `json:"opened_at"`
	PagedAt    time.Time `json:"paged_at,omitzero"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	ResolvedBy string    `json:"resolved_by,omitempty"`
	Note       string    `json:"note,omitempty"`
}
