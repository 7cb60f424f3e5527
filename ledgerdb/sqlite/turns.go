package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Writers in several processes (two `reconcile ingest`s, an ingest and a
// run, the application) take turns on the file. SQLite lets one connection
// write at a time: every write transaction begins with BEGIN IMMEDIATE,
// which takes the write lock before reading anything, so that no reader
// turns writer halfway (SQLite fails such an upgrade at once, without
// waiting). A BEGIN IMMEDIATE that finds the lock taken waits up to the busy
// timeout inside SQLite, and is then tried again, with a growing pause,
// until WriteWait has passed in all. In WAL mode readers never block a
// writer and a writer never blocks a reader, so a process waiting for its
// turn holds nothing the writer needs to commit.

// BusyTimeout is how long one statement waits for a lock that another
// connection holds (PRAGMA busy_timeout, set on every connection).
const BusyTimeout = 10 * time.Second

// WriteWait is how long, in all, a write transaction waits for the write
// lock, across its tries of BEGIN IMMEDIATE, before it fails saying that
// another process holds the ledger (a try under way when it runs out may
// add up to one BusyTimeout). An ingest holds the lock while it writes a
// whole input, so this is minutes.
const WriteWait = 5 * time.Minute

// waits are the busy timeout and the write wait of the stores opened from
// now on; tests shorten them.
var waits = struct{ busy, write time.Duration }{BusyTimeout, WriteWait}

// beginner is what a *sql.DB and a *sql.Conn have in common.
type beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// begin starts a write transaction (BEGIN IMMEDIATE, from the DSN's
// _txlock) on b, waiting up to s.writeWait for the write lock.
func (s *Store) begin(ctx context.Context, b beginner) (*sql.Tx, error) {
	start := time.Now()
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		tx, err := b.BeginTx(ctx, nil)
		if err == nil || !isBusy(err) || ctx.Err() != nil {
			return tx, err
		}
		if !s.building.TryLock() { // this process's own index build has the lock: wait for it
			s.building.Lock()
			s.building.Unlock()
			start = time.Now()
			continue
		}
		s.building.Unlock()
		left := s.writeWait - time.Since(start)
		if left <= 0 {
			return nil, fmt.Errorf("the SQLite ledger %s is busy: another reconcile (or the application) has held its write lock for more than %s: %w",
				s.path, s.writeWait, err)
		}
		t := time.NewTimer(min(pause/2+rand.N(pause/2+1), left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, errors.Join(ctx.Err(), err)
		case <-t.C:
		}
	}
}

// isBusy reports whether err is SQLITE_BUSY, of any kind: the lock was
// taken for all of the busy timeout.
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}
