package sqlite

import "time"

// SetWaits sets the busy timeout and the write wait of the stores opened
// from now on, and returns what restores them.
func SetWaits(busy, write time.Duration) (restore func()) {
	old := waits
	waits.busy, waits.write = busy, write
	return func() { waits = old }
}
