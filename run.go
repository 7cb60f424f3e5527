package reconcile

import (
	"encoding/json"
	"time"
)

// RunStatus is where a run of the job stands.
type RunStatus string

// The statuses of a run.
const (
	RunStatusRunning   RunStatus = "running"
	RunStatusSucceeded RunStatus = "succeeded"
	RunStatusFailed    RunStatus = "failed"
)

// Run is one execution of the job, as recorded in the ledger database.
type Run struct {
	ID         string
	Status     RunStatus
	Args       json.RawMessage // the command line and options it ran with
	Result     json.RawMessage // the JSON result, once finished
	StartedAt  time.Time
	FinishedAt time.Time // zero while running
}
