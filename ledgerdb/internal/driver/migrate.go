package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"testing/fstest"

	"reconcile"
	"reconcile/ledgerdb"
)

// Applied is a migration as recorded in a ledger's schema_migration table.
type Applied struct {
	Version  int
	Checksum string
}

// LoadMigrations reads NNN_name.sql files from fsys, in order. Versions must
// run 1, 2, 3... with no gap, so two branches that both add "002" collide at
// build time instead of in production.
func LoadMigrations(fsys fs.FS) ([]ledgerdb.Migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var ms []ledgerdb.Migration
	for _, n := range names {
		num, name, ok := strings.Cut(strings.TrimSuffix(path.Base(n), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration file %s: want NNN_name.sql", n)
		}
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		ms = append(ms, ledgerdb.Migration{Version: v, Name: name, SQL: string(b), Checksum: hex.EncodeToString(sum[:])})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %03d_%s: versions must run 1, 2, 3... without gaps or repeats", m.Version, m.Name)
		}
	}
	return ms, nil
}

// Pending checks what a ledger has applied against what this binary knows
// and returns the migrations still to apply. A ledger that is ahead of the
// binary, or whose applied migration differs from the embedded one, is an
// error wrapping reconcile.ErrSchema: nothing should run against it.
func Pending(known []ledgerdb.Migration, applied []Applied) ([]ledgerdb.Migration, error) {
	for i, a := range applied {
		if a.Version > len(known) {
			return nil, fmt.Errorf("%w: the ledger is at version %d, newer than this binary (it knows %d): upgrade reconcile", reconcile.ErrSchema, applied[len(applied)-1].Version, len(known))
		}
		if a.Version != i+1 {
			return nil, fmt.Errorf("%w: the ledger's applied migrations have a gap before version %d", reconcile.ErrSchema, a.Version)
		}
		if k := known[a.Version-1]; k.Checksum != a.Checksum {
			return nil, fmt.Errorf("%w: migration %03d_%s differs from the one applied to this ledger", reconcile.ErrSchema, k.Version, k.Name)
		}
	}
	return known[len(applied):], nil
}

// Check is SchemaCheck for a driver: it loads the known migrations from
// fsys and compares them with what the ledger at where has applied.
func Check(where string, fsys fs.FS, applied []Applied) error {
	known, err := LoadMigrations(fsys)
	if err != nil {
		return err
	}
	pending, err := Pending(known, applied)
	if err != nil {
		return fmt.Errorf("ledger %s: %w", where, err)
	}
	if len(pending) > 0 {
		return behind(where, pending)
	}
	return nil
}

func behind(where string, pending []ledgerdb.Migration) error {
	return fmt.Errorf("%w: ledger %s needs %d migration(s) (next: %03d_%s): run `reconcile migrate --ledger %s`",
		reconcile.ErrSchema, where, len(pending), pending[0].Version, pending[0].Name, where)
}

// Apply runs the migrations in fsys that have not been applied (have), in
// order, recording each in schema_migration with record, the driver's
// INSERT of version, name and checksum; exec runs one statement in the
// migration's transaction. It returns the migrations applied.
func Apply(fsys fs.FS, have []Applied, record string, exec func(sql string, args ...any) error) ([]ledgerdb.Migration, error) {
	known, err := LoadMigrations(fsys)
	if err != nil {
		return nil, err
	}
	pending, err := Pending(known, have)
	if err != nil {
		return nil, err
	}
	for _, m := range pending {
		if err := exec(m.SQL); err != nil {
			return nil, fmt.Errorf("migration %03d_%s: %w", m.Version, m.Name, err)
		}
		if err := exec(record, m.Version, m.Name, m.Checksum); err != nil {
			return nil, err
		}
	}
	return pending, nil
}

// Before is fsys with only the migrations older than version: the schema
// of an earlier release, for the tests of an upgrade.
func Before(fsys fs.FS, version int) fs.FS {
	before := fstest.MapFS{}
	ms, _ := fs.Glob(fsys, "*.sql")
	for _, n := range ms {
		if v, err := strconv.Atoi(strings.SplitN(path.Base(n), "_", 2)[0]); err == nil && v < version {
			b, _ := fs.ReadFile(fsys, n)
			before[n] = &fstest.MapFile{Data: b}
		}
	}
	return before
}
