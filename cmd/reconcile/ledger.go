package main

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/postgres"
	"reconcile/ledgerdb/sqlite"
	"reconcile/report"
)

// openLedger opens the app's ledger (--ledger) on the app's clock.
func (a *app) openLedger(ctx context.Context) (ledgerdb.Store, ledgerdb.Location, error) {
	return openLedger(ctx, a.ledgerURL, ledgerdb.Config{Now: a.clock.Now})
}

// openLedger opens the ledger at url (empty: the embedded default). A
// SQLite ledger belongs to the job, so it is migrated on open; only the
// embedded default is created on first use: an explicit path that does not
// exist is a mistyped one far more often than a new ledger, and a new,
// empty ledger would call every transaction unexpected. A PostgreSQL ledger
// is only checked, since the job's role should not need to change the
// schema: `reconcile migrate` does that.
func openLedger(ctx context.Context, url string, cfg ledgerdb.Config) (ledgerdb.Store, ledgerdb.Location, error) {
	loc, err := ledgerdb.ParseURL(url)
	if err != nil {
		return nil, loc, usageError("%v", err)
	}
	if loc.Driver == ledgerdb.SQLite && url != "" {
		if _, err := os.Stat(loc.DSN); errors.Is(err, fs.ErrNotExist) {
			return nil, loc, usageError("no SQLite ledger at %s: to create one there, run `reconcile migrate --ledger %s`",
				report.Printable(loc.DSN), report.Printable("sqlite:"+loc.DSN))
		}
	}
	var store ledgerdb.Store
	switch loc.Driver {
	case ledgerdb.Postgres:
		s, err := postgres.Open(ctx, loc.DSN, cfg)
		if err != nil {
			return nil, loc, scrub(err, loc)
		}
		store = s
		err = store.SchemaCheck(ctx)
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
		if _, err := store.SchemaMigrate(ctx); err != nil {
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
		if err != nil {
			return nil, loc, scrub(err, loc)
		}
		return s, loc, nil
	}
	s, err := sqlite.Open(ctx, loc.DSN, ledgerdb.Config{})
	return s, loc, err
}

// where names a ledger for people, without its password.
func where(loc ledgerdb.Location) string {
	if loc.Driver == ledgerdb.Postgres {
		return report.Printable(ledgerdb.Redact(loc.DSN))
	}
	return report.Printable("sqlite:" + loc.DSN)
}

// scrubbedError is an error whose text has the ledger's passwords hidden.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrub hides the ledger's passwords in a driver's error: pgx quotes the
// connection string it could not parse, and its own redaction of a
// keyword string is best effort (a quoted password with a \' in it).
func scrub(err error, loc ledgerdb.Location) error {
	return &scrubbedError{msg: reconcile.Scrub(err.Error(), ledgerdb.Secrets(loc.DSN)...), err: err}
}

// closeLedger closes store, and says when it could not write what it
// held: the details of a run's records that the run did not record.
func (a *app) closeLedger(store ledgerdb.Store) {
	if err := store.Close(); err != nil {
		a.log.Warn("the ledger closed with an error; the raw rows of the last run's records may be missing from it", "err", err)
	}
}
