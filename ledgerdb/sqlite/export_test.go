package sqlite

import (
	"context"
	"time"

	"reconcile/ledgerdb/internal/driver"
)

// SetWaits sets the busy timeout and the write wait of the stores opened
// from now on, and returns what restores them.
func SetWaits(busy, write time.Duration) (restore func()) {
	old := waits
	waits.busy, waits.write = busy, write
	return func() { waits = old }
}

// MigrateBefore applies the migrations older than version: the ledger of
// an earlier release.
func (s *Store) MigrateBefore(ctx context.Context, version int) error {
	_, err := s.apply(ctx, driver.Before(migrations(), version))
	return err
}
