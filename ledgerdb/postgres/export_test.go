package postgres

import (
	"context"

	"reconcile/ledgerdb/internal/driver"
)

// MigrateBefore applies the migrations older than version: the ledger of
// an earlier release.
func (s *Store) MigrateBefore(ctx context.Context, version int) error {
	_, err := s.apply(ctx, driver.Before(migrations(), version))
	return err
}
