package main

import (
	"context"

	"reconcile/ledgerdb"
	"reconcile/ledgerdb/postgres"
	"reconcile/ledgerdb/sqlite"
)

// openLedger opens the ledger at url (empty: the embedded default). An
// embedded SQLite ledger belongs to the job, so it is created and migrated
// on open; a PostgreSQL ledger is only checked, since the job's role should
// not need to change the schema: `reconcile migrate` does that.
func openLedger(ctx context.Context, url string, cfg ledgerdb.Config) (ledgerdb.Store, ledgerdb.Location, error) {
	loc, err := ledgerdb.ParseURL(url)
	if err != nil {
		return nil, loc, usageError("%v", err)
	}
	var store ledgerdb.Store
	switch loc.Driver {
	case ledgerdb.Postgres:
		s, err := postgres.Open(ctx, loc.DSN, cfg)
		if err != nil {
			return nil, loc, err
		}
		store = s
		err = store.CheckSchema(ctx)
		if err != nil {
			store.Close()
			return nil, loc, err
		}
	default:
		s, err := sqlite.Open(ctx, loc.DSN, cfg)
		if err != nil {
			return nil, loc, err
		}
		store = s
		if _, err := store.Migrate(ctx); err != nil {
			store.Close()
			return nil, loc, err
		}
	}
	return store, loc, nil
}

// openForMigrate opens the ledger at url without checking its schema.
func openForMigrate(ctx context.Context, url string) (ledgerdb.Store, ledgerdb.Location, error) {
	loc, err := ledgerdb.ParseURL(url)
	if err != nil {
		return nil, loc, usageError("%v", err)
	}
	if loc.Driver == ledgerdb.Postgres {
		s, err := postgres.Open(ctx, loc.DSN, ledgerdb.Config{})
		return s, loc, err
	}
	s, err := sqlite.Open(ctx, loc.DSN, ledgerdb.Config{})
	return s, loc, err
}

// where names a ledger for people, without its password.
func where(loc ledgerdb.Location) string {
	if loc.Driver == ledgerdb.Postgres {
		return ledgerdb.Redact(loc.DSN)
	}
	return "sqlite:" + loc.DSN
}
