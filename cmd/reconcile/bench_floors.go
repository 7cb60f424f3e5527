package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the driver the SQLite ledger uses, for the SQLite floor

	"reconcile/fixtures"
)

// narrowCols are the columns of the narrow rows the database floors write:
// what the evidence holds of a record without its raw text, description,
// metadata and lookups.
var narrowCols = []string{"provider", "kind", "tx_id", "payment_intent", "effect_key", "amount_minor", "currency", "occurred_at", "source_id", "line"}

// narrowRows makes n narrow rows shaped like the bench's charges, one at a
// time into the same slice, cheaply: the floor is the database's work, not
// the making of rows. It is a pgx.CopyFromSource.
type narrowRows struct {
	n, i int
	row  []any
	buf  []byte
}

func newNarrowRows(n int) *narrowRows { return &narrowRows{n: n, row: make([]any, len(narrowCols))} }

func (r *narrowRows) Next() bool {
	if r.i >= r.n {
		return false
	}
	i := r.i
	r.i++
	r.row[0], r.row[1], r.row[6] = "stripe", "charge", "eur"
	r.row[2] = r.id("ch_", i, 8, "")
	r.row[3] = r.id("pi_", i, 8, "")
	r.row[4] = r.id("run_", i/4, 7, ":charge:"+strconv.Itoa(i%4))
	r.row[5] = int64(100 + i%200000)
	r.row[7] = fixtures.Start.Add(time.Duration(i) * 72 * time.Millisecond)
	r.row[8] = int64(1)
	r.row[9] = int32(i + 2)
	return true
}

// id is prefix, then i zero-padded to width digits, then suffix.
func (r *narrowRows) id(prefix string, i, width int, suffix string) string {
	r.buf = append(r.buf[:0], prefix...)
	d := strconv.Itoa(i)
	for range width - len(d) {
		r.buf = append(r.buf, '0')
	}
	r.buf = append(append(r.buf, d...), suffix...)
	return string(r.buf)
}

func (r *narrowRows) Values() ([]any, error) { return r.row, nil }
func (r *narrowRows) Err() error             { return nil }

// anchorPostgres measures PostgreSQL's floors on the ledger's server: a
// binary COPY of n narrow rows into an UNLOGGED table with no index, then
// into a LOGGED one, in a schema of its own that it drops; and a read of
// the effects table, streamed and counted.
func anchorPostgres(ctx context.Context, dsn string, n int) (unlogged, logged, read time.Duration, effects int, err error) {
	conn, err := connectPostgres(ctx, dsn)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer conn.Close(context.Background())
	schema := fmt.Sprintf("reconcile_anchor_%d", os.Getpid())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return 0, 0, 0, 0, err
	}
	// Dropped even when the bench is interrupted: the schema is ours.
	defer conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	cols := `(provider text NOT NULL, kind text NOT NULL, tx_id text NOT NULL, payment_intent text NOT NULL, effect_key text NOT NULL,
		amount_minor bigint NOT NULL, currency text NOT NULL, occurred_at timestamptz, source_id bigint NOT NULL, line integer NOT NULL)`
	for _, table := range []struct {
		name, create string
		took         *time.Duration
	}{
		{"narrow_unlogged", "CREATE UNLOGGED TABLE " + schema + ".narrow_unlogged " + cols, &unlogged},
		{"narrow_logged", "CREATE TABLE " + schema + ".narrow_logged " + cols, &logged},
	} {
		if _, err := conn.Exec(ctx, table.create); err != nil {
			return 0, 0, 0, 0, err
		}
		t := time.Now()
		copied, err := conn.CopyFrom(ctx, pgx.Identifier{schema, table.name}, narrowCols, newNarrowRows(n))
		if err != nil {
			return 0, 0, 0, 0, err
		}
		*table.took = time.Since(t)
		if copied != int64(n) {
			return 0, 0, 0, 0, fmt.Errorf("COPY wrote %d rows of %d", copied, n)
		}
	}
	// The effects as the partitions read them: every column the matcher
	// needs, the request reduced to its amount.
	t := time.Now()
	rows, err := conn.Query(ctx, `SELECT key, step, provider, status, coalesce(external_id, ''), coalesce(request->>'amount', ''), created_at FROM effect`)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	var key, step, provider, status, external, amount string
	var created time.Time
	for rows.Next() {
		if err := rows.Scan(&key, &step, &provider, &status, &external, &amount, &created); err != nil {
			rows.Close()
			return 0, 0, 0, 0, err
		}
		effects++
	}
	if err := rows.Err(); err != nil {
		return 0, 0, 0, 0, err
	}
	return unlogged, logged, time.Since(t), effects, nil
}

// connectPostgres opens a connection of the bench's own to the ledger's
// server.
func connectPostgres(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, errors.New("bad PostgreSQL URL") // pgx's error may quote the password
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// anchorSQLite measures SQLite's floor: n narrow rows inserted in one
// transaction through a prepared INSERT of 100 rows (as the ledger writes
// evidence) into a table with no index, in a new file at path with the
// ledger's pragmas (WAL, synchronous FULL).
func anchorSQLite(ctx context.Context, path string, n int) (time.Duration, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE narrow (provider TEXT NOT NULL, kind TEXT NOT NULL, tx_id TEXT NOT NULL, payment_intent TEXT NOT NULL,
		effect_key TEXT NOT NULL, amount_minor INTEGER NOT NULL, currency TEXT NOT NULL, occurred_at TEXT, source_id INTEGER NOT NULL, line INTEGER NOT NULL)`); err != nil {
		return 0, err
	}
	const per = 100
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(narrowCols)), ", ") + ")"
	insert := func(k int) string {
		return "INSERT INTO narrow (" + strings.Join(narrowCols, ", ") + ") VALUES " + strings.TrimSuffix(strings.Repeat(row+", ", k), ", ")
	}
	t := time.Now()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	many, err := tx.PrepareContext(ctx, insert(per))
	if err != nil {
		return 0, err
	}
	one, err := tx.PrepareContext(ctx, insert(1))
	if err != nil {
		return 0, err
	}
	src := newNarrowRows(n)
	args := make([]any, 0, per*len(narrowCols))
	for left := n; left > 0; {
		k, stmt := per, many
		if left < per {
			k, stmt = 1, one
		}
		args = args[:0]
		for range k {
			src.Next()
			for _, v := range src.row {
				if at, ok := v.(time.Time); ok {
					v = at.Format(time.RFC3339Nano) // the ledger keeps times as text
				}
				args = append(args, v)
			}
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return 0, err
		}
		left -= k
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	took := time.Since(t)
	var count int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM narrow`).Scan(&count); err != nil {
		return 0, err
	}
	if count != n {
		return 0, fmt.Errorf("the table holds %d rows of %d", count, n)
	}
	return took, nil
}
