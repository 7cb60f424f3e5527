// Package sqlite is the embedded SQLite driver of the ledger, on
// modernc.org/sqlite (pure Go, no cgo): one file, WAL, foreign keys on, a
// busy timeout, and every write transaction BEGIN IMMEDIATE, tried again
// for up to WriteWait, so that writers in several processes take turns
// instead of failing (see turns.go).
package sqlite

//go:generate go tool -modfile=../../tools/sqlc/go.mod sqlc generate

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
	"reconcile/ledgerdb/sqlite/internal/dbsqlc"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

func migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}

// timeFormat is fixed-width, so that comparing the text compares the times,
// and the same as SQLite's own strftime('%Y-%m-%dT%H:%M:%fZ').
const timeFormat = "2006-01-02T15:04:05.000Z"

// Store is the ledger in a SQLite file.
type Store struct {
	db *sql.DB
	q  *dbsqlc.Queries // the generated queries (query/*.sql), on db
	// renewals is a connection of its own for the leases' renewals: the
	// matching holds db's one connection for the whole of a run's
	// matching, and a run longer than its lease must not lose it to its
	// own work.
	renewals *sql.DB
	// builds is a connection of its own for the evidence indexes that a
	// large ingest deferred, built while the run reads and matches on db;
	// building is held while one is (buildTx).
	builds    *sql.DB
	building  sync.Mutex
	now       func() time.Time
	where     string
	path      string
	writeWait time.Duration // see WriteWait
	kept      driver.Kept
}

var _ ledgerdb.SerialBuilder = (*Store)(nil)

// SerialBuilds implements ledgerdb.SerialBuilder.
func (s *Store) SerialBuilds() {}

// cacheKiB is each connection's page cache, and checkpointPages how many
// pages the WAL takes before a commit copies them into the ledger file.
// SQLite's defaults (2 MiB, 1,000 pages) made a 1M first night spill its
// large transactions' pages to the WAL before they committed, read the
// pages of its indexes again and again, and checkpoint every 4 MB: 5.65 s
// of its processor time in system calls inside SQLite. Alternating 1M
// runs: 24.1 and 24.2 s against 26.0 and 27.8 s, the run's peak 0.90 GB
// against 0.73 and 0.79 GB (docs/PERFORMANCE.md).
const cacheKiB, checkpointPages = 16 << 10, 10_000

// Open opens (creating it and its directory if needed) the ledger file at
// path. It checks nothing about the schema: call SchemaCheck or Migrate.
func Open(ctx context.Context, path string, cfg ledgerdb.Config) (*Store, error) {
	where := "sqlite:" + path
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("ledger %s: %w", where, err)
		}
	}
	// The driver runs these pragmas on every connection it opens, the
	// pool's later ones too.
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", waits.busy.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", fmt.Sprintf("cache_size(%d)", -cacheKiB))
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", checkpointPages))
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger %s: %w", where, err)
	}
	// One connection for the store's work (the leases' renewals and the
	// index builds have one each): one writer, and no reader that could
	// hold an old snapshot while it writes.
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: cannot open: %w", where, err)
	}
	// Without WAL a reader blocks a writer's commit, and a writer waiting
	// for its turn blocks the one that has it: refuse rather than fail later.
	var mode string
	// Hand-written: sqlc's SQLite engine takes no PRAGMA as a query.
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: cannot open: %w", where, err)
	}
	if !strings.EqualFold(mode, "wal") {
		db.Close()
		return nil, fmt.Errorf("ledger %s: journal mode is %s, not WAL: writers in two processes could not take turns (keep the file on a local file system)", where, mode)
	}
	renewals, err := sql.Open("sqlite", dsn)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger %s: %w", where, err)
	}
	renewals.SetMaxOpenConns(1)
	builds, err := sql.Open("sqlite", dsn)
	if err != nil {
		db.Close()
		renewals.Close()
		return nil, fmt.Errorf("ledger %s: %w", where, err)
	}
	builds.SetMaxOpenConns(1)
	return &Store{db: db, q: dbsqlc.New(db), renewals: renewals, builds: builds, now: cfg.Clock(), where: where, path: path,
		writeWait: waits.write}, nil
}

// Close closes the file. The details of records that a run ingested and
// kept for its findings, when it ended before it recorded them, are
// written first, every one: a later run may find what this one did not.
func (s *Store) Close() error {
	var err error
	if held := s.kept.Held(); len(held) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), driver.HeldWrite)
		err = s.inTx(ctx, func(tx *sql.Tx) error { return insertDetails(ctx, tx, held, nil) })
		cancel()
	}
	s.kept.Close()
	return errors.Join(err, s.db.Close(), s.renewals.Close(), s.builds.Close())
}

// SchemaCheck implements ledgerdb.Store.
func (s *Store) SchemaCheck(ctx context.Context) error {
	applied, err := applied(ctx, s.db)
	if err != nil {
		return fmt.Errorf("ledger %s: %w", s.where, err)
	}
	return driver.Check(s.where, migrations(), applied)
}

// SchemaMigrate implements ledgerdb.Store. BEGIN IMMEDIATE makes two processes
// that migrate at once take turns.
// Hand-written: the migrations are multi-statement scripts, and no migration creates schema_migration, so sqlc does not know it.
func (s *Store) SchemaMigrate(ctx context.Context) ([]ledgerdb.Migration, error) {
	done, err := s.apply(ctx, migrations())
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
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migration (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			checksum   TEXT NOT NULL,
			applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))`); err != nil {
			return err
		}
		have, err := applied(ctx, tx)
		if err != nil {
			return err
		}
		done, err = driver.Apply(fsys, have, `INSERT INTO schema_migration (version, name, checksum) VALUES (?, ?, ?)`,
			func(sql string, args ...any) error {
				_, err := tx.ExecContext(ctx, sql, args...)
				return err
			})
		return err
	})
	return done, err
}

// querier is what a *sql.DB and a *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// applied reads the migrations applied, none when schema_migration does not
// exist yet.
// Hand-written: sqlc knows neither sqlite_master nor schema_migration.
func applied(ctx context.Context, q querier) ([]driver.Applied, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migration'`).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT version, checksum FROM schema_migration ORDER BY version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.Applied
	for rows.Next() {
		var a driver.Applied
		if err := rows.Scan(&a.Version, &a.Checksum); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// inTx runs fn in a write transaction (see begin).
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.inTxOn(ctx, s.db, fn)
}

// inTxOn is inTx on the given handle.
func (s *Store) inTxOn(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := s.begin(ctx, db)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

// interpretError maps the database/sql errors of the generated queries to
// the ledger's: no row is reconcile.ErrNotFound. Any other error is
// returned as it is.
func interpretError(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return reconcile.ErrNotFound
	}
	return err
}

// ts writes a time in the fixed-width UTC format.
func ts(t time.Time) string { return t.UTC().Format(timeFormat) }

// nullTS writes a time, or NULL for the zero time. nullTS, nullJSON and
// nullText give the arguments of the hand-written statements (the ingest's
// among them) as plain values; the generated queries take *string for a
// nullable column instead (optText, optJSON).
func nullTS(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return ts(t)
}

// appTimeLayouts are the forms in which applications write times into an
// SQLite ledger, besides ts's own: SQLite's CURRENT_TIMESTAMP and date
// functions, and common drivers. A space or a T, a fraction or none (Go
// reads a fraction after the seconds whatever the layout says), a zone or
// none; no zone means UTC, as CURRENT_TIMESTAMP writes it.
var appTimeLayouts = []string{
	"2006-01-02 15:04:05Z07:00", "2006-01-02T15:04:05Z07:00",
	"2006-01-02 15:04:05Z0700", "2006-01-02T15:04:05Z0700",
	"2006-01-02 15:04:05", "2006-01-02T15:04:05",
}

// parseTS reads a time written by ts or by an application, or the zero
// time for NULL.
func parseTS(s sql.NullString) (time.Time, error) {
	if !s.Valid {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s.String)
	for _, layout := range appTimeLayouts {
		if err == nil {
			break
		}
		t, err = time.Parse(layout, strings.TrimSpace(s.String))
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("bad timestamp %q in ledger: want YYYY-MM-DD HH:MM:SS, with a T or a space, an optional fraction, and Z, ±HH:MM or no zone (UTC)", s.String)
	}
	return t.UTC(), nil
}

// parseTime is parseTS for a time that is never NULL.
func parseTime(s string) (time.Time, error) { return parseTS(sql.NullString{String: s, Valid: true}) }

// parseNullTS is parseTS for a nullable column read by a generated query.
func parseNullTS(p *string) (time.Time, error) {
	if p == nil {
		return parseTS(sql.NullString{})
	}
	return parseTime(*p)
}

// nullJSON passes a JSON document as text, and an empty one as NULL.
func nullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// optJSON is nullJSON for a generated query's parameter.
func optJSON(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}

// nullText passes an empty string as NULL.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// optText is nullText for a generated query's parameter.
func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// rawJSON reads a nullable JSON column.
func rawJSON(p *string) []byte {
	if p == nil {
		return nil
	}
	return []byte(*p)
}

// text reads a nullable text column, NULL as "".
func text(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
