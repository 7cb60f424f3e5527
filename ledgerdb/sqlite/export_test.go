package sqlite

import (
	"context"
	"database/sql"
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

// HoldBuild holds the write lock as an index build does, until release.
func (s *Store) HoldBuild(ctx context.Context) (release func() error) {
	held, rel, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.buildTx(ctx, func(*sql.Tx) error {
			close(held)
			<-rel
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-done:
		return func() error { return err }
	}
	return func() error {
		close(rel)
		return <-done
	}
}
