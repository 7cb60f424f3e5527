// Package postgres is the PostgreSQL driver of the ledger, on pgx/v5.
package postgres

//go:generate go tool -modfile=../../tools/sqlc/go.mod sqlc generate

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Grants is the SQL an administrator runs after Migrate to give the job's
// role, reconcile, what it needs and no more (README, "Deployment").
//
//go:embed grants.sql
var Grants string

func migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}

// Store is the ledger on PostgreSQL.
type Store struct {
	pool  *pgxpool.Pool
	now   func() time.Time
	where string       // the URL without its password, for messages
	kept  *driver.Kept // shared with the store forWorkers makes
}

// A Store writes sources in parallel and distributes partitions: the run
// asks for both by type assertion, so a method renamed here would turn
// them off without a compile error but for these.
var (
	_ ledgerdb.ParallelWriter = (*Store)(nil)
	_ ledgerdb.Distributor    = (*Store)(nil)
)

// Open connects to the ledger at url (postgres:// or postgresql://). A
// search_path query parameter selects a schema. It checks nothing about the
// schema: call SchemaCheck or Migrate.
func Open(ctx context.Context, url string, cfg ledgerdb.Config) (*Store, error) {
	where := ledgerdb.Redact(url)
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's error quotes the connection string, redacted as best it
		// can: only the cause is kept.
		return nil, fmt.Errorf("ledger %s: bad PostgreSQL URL: %v", where, cmp.Or(errors.Unwrap(err), err))
	}
	// The job's queries are lookups planned for their indexes: compiled,
	// a plan whose estimate counts a part that never runs (the unsorted
	// sources' of EvidenceListLinked) took 0.19 s of JIT to read nothing
	// in 0.01 s. A URL that names jit keeps its own.
	if _, ok := pc.ConnConfig.RuntimeParams["jit"]; !ok {
		pc.ConnConfig.RuntimeParams["jit"] = "off"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		// pgx lists every address it tried on lines of their own; keep one line.
		return nil, fmt.Errorf("ledger %s: cannot connect: %s", where, strings.Join(strings.Fields(err.Error()), " "))
	}
	return &Store{pool: pool, now: cfg.Clock(), where: where, kept: &driver.Kept{}}, nil
}

// ParallelWrites implements ledgerdb.ParallelWriter: each source is written
// on a connection and in a transaction of its own.
func (s *Store) ParallelWrites() {}

// Close releases the pool. The details of records that a run ingested
// and kept for its findings, when it ended before it recorded them, are
// written first, every one: a later run may find what this one did not.
func (s *Store) Close() error {
	held := s.kept.Held()
	var err error
	if len(held) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), driver.HeldWrite)
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return copyDetails(ctx, tx, held, nil) })
		cancel()
	}
	s.pool.Close()
	s.kept.Close()
	return err
}

// SchemaCheck implements ledgerdb.Store.
func (s *Store) SchemaCheck(ctx context.Context) error {
	applied, err := applied(ctx, s.pool)
	if err != nil {
		return fmt.Errorf("ledger %s: %w", s.where, err)
	}
	if applied == nil {
		// PostgreSQL passes over a schema of the search path that the role
		// may not use: say so, rather than that every migration is due.
		// Hand-written, as the rest of the schema's bookkeeping here: it
		// reads the catalog, of a ledger that may have no schema yet.
		var schema string
		var usable bool
		err := s.pool.QueryRow(ctx, `SELECT n.nspname, has_schema_privilege(n.oid, 'USAGE') FROM pg_namespace n
			WHERE n.nspname = trim(both '"' from trim(split_part(current_setting('search_path'), ',', 1)))`).Scan(&schema, &usable)
		if err == nil && !usable {
			return fmt.Errorf("%w: ledger %s: this role may not use schema %s (no USAGE privilege): apply the grants (README, Roles and grants)",
				reconcile.ErrSchema, s.where, schema)
		}
	}
	return driver.Check(s.where, migrations(), applied)
}

// SchemaMigrate implements ledgerdb.Store. An advisory lock per schema makes two
// processes that migrate at once take turns. Its statements are
// hand-written: they make the schema that sqlc generates against.
func (s *Store) SchemaMigrate(ctx context.Context) ([]ledgerdb.Migration, error) {
	done, err := s.apply(ctx, migrations())
	if err == nil {
		err = s.migrateRiver(ctx)
	}
	if err == nil { // deferred by a process that died before it built them
		_, err = s.IndexesBuild(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger %s: migrate: %w", s.where, err)
	}
	return done, nil
}

// apply applies the migrations of fsys that the ledger lacks.
func (s *Store) apply(ctx context.Context, fsys fs.FS) ([]ledgerdb.Migration, error) {
	var done []ledgerdb.Migration
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.reconcile.migrate'))`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migration (
			version    int PRIMARY KEY,
			name       text NOT NULL,
			checksum   text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		have, err := applied(ctx, tx)
		if err != nil {
			return err
		}
		done, err = driver.Apply(fsys, have, `INSERT INTO schema_migration (version, name, checksum) VALUES ($1, $2, $3)`,
			func(sql string, args ...any) error {
				_, err := tx.Exec(ctx, sql, args...)
				return err
			})
		return err
	})
	return done, err
}

// migrateRiver brings River's tables up to date, beside the ledger's, for
// the runs whose partitions are distributed (distribute.go). Its migrations
// add to an enum and use the value added, which one transaction cannot do:
// they run a transaction each, under a lock of the session.
func (s *Store) migrateRiver(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	const key = `hashtext(current_schema() || '.reconcile.migrate.river')`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+key+`)`); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+key+`)`)
	migrator, err := rivermigrate.New(riverpgxv5.New(s.pool), nil)
	if err != nil {
		return err
	}
	if _, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river: %w", err)
	}
	return nil
}

// interpretError maps what pgx reports to the ledger's errors: no row is
// reconcile.ErrNotFound. Any other error is returned as it is.
func interpretError(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return reconcile.ErrNotFound
	}
	return err
}

// textOf is the value of a nullable text column, "" for NULL.
func textOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// utcOf is the value of a nullable timestamptz column in UTC, the zero
// time for NULL.
func utcOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// querier is what a pool and a transaction have in common.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// applied lists the migrations the ledger has applied, nil when it has
// none. Hand-written: schema_migration is created here, not by a
// migration, so sqlc's schema does not hold it.
func applied(ctx context.Context, q querier) ([]driver.Applied, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('schema_migration') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, nil
	}
	rows, err := q.Query(ctx, `SELECT version, checksum FROM schema_migration ORDER BY version`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Applied, error) {
		var a driver.Applied
		err := r.Scan(&a.Version, &a.Checksum)
		return a, err
	})
}
