package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"path/filepath"
	"testing"

	"reconcile/ledgerdb"
)

// Every connection the pool opens, not only the first, waits for locks,
// is in WAL mode with foreign keys on, and begins its write transactions
// by taking the write lock.
func TestEveryConnectionTakesTurns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path, ledgerdb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// other sees whether a transaction of s holds the write lock: it does
	// not wait for it.
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	for i := range 3 {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A temporary table marks a connection: a new one has none.
		var marked int
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_temp_master WHERE name = 'marker'`).Scan(&marked); err != nil {
			t.Fatal(err)
		}
		if marked != 0 {
			t.Fatalf("connection %d is not new", i)
		}
		if _, err := c.ExecContext(ctx, `CREATE TEMP TABLE marker (x)`); err != nil {
			t.Fatal(err)
		}
		var (
			busy, fk, cache, checkpoint int
			mode                        string
		)
		for q, v := range map[string]any{`PRAGMA busy_timeout`: &busy, `PRAGMA foreign_keys`: &fk, `PRAGMA journal_mode`: &mode,
			`PRAGMA cache_size`: &cache, `PRAGMA wal_autocheckpoint`: &checkpoint} {
			if err := c.QueryRowContext(ctx, q).Scan(v); err != nil {
				t.Fatal(err)
			}
		}
		if busy != int(BusyTimeout.Milliseconds()) || fk != 1 || mode != "wal" {
			t.Errorf("connection %d: busy_timeout %d, foreign_keys %d, journal_mode %s; want %d, 1, wal", i, busy, fk, mode, BusyTimeout.Milliseconds())
		}
		if cache != -cacheKiB || checkpoint != checkpointPages {
			t.Errorf("connection %d: cache_size %d, wal_autocheckpoint %d; want %d and %d", i, cache, checkpoint, -cacheKiB, checkpointPages)
		}
		tx, err := s.begin(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.ExecContext(ctx, `BEGIN IMMEDIATE`); !isBusy(err) {
			t.Errorf("connection %d: BEGIN IMMEDIATE of another connection during a write transaction = %v, want SQLITE_BUSY", i, err)
			other.ExecContext(ctx, `ROLLBACK`)
		}
		tx.Rollback()
		// Drop the connection, so that the pool opens a new one.
		c.Raw(func(any) error { return driver.ErrBadConn })
		c.Close()
	}
}
