package postgres

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
	"reconcile/ledgerdb/postgres/internal/dbsqlc"
)

// runOf converts a run row, its times in UTC.
func runOf(r dbsqlc.Run) *reconcile.Run {
	return &reconcile.Run{ID: r.ID, Status: reconcile.RunStatus(r.Status), Args: r.Args, Result: r.Result, StartedAt: r.StartedAt.UTC(),
		FinishedAt: utcOf(r.FinishedAt)}
}

// RunStart implements ledgerdb.Store.
func (s *Store) RunStart(ctx context.Context, p *ledgerdb.StartRunParams) (*reconcile.Run, error) {
	r, err := dbsqlc.New(s.pool).RunStartInsert(ctx, dbsqlc.RunStartInsertParams{ID: p.ID, Args: jsonText(p.Args), StartedAt: s.now()})
	if err != nil {
		return nil, fmt.Errorf("run %s: start: %w", p.ID, interpretError(err))
	}
	return runOf(r), nil
}

// RunFinish implements ledgerdb.Store. The result of a large run is
// hundreds of megabytes of JSON: it goes in through COPY, a piece at a time,
// rather than as one parameter that would be copied whole, and is not read
// back (the run returned carries the result as given). Hand-written: COPY,
// and an update that reads the temporary table it fills.
func (s *Store) RunFinish(ctx context.Context, p *ledgerdb.FinishRunParams) (*reconcile.Run, error) {
	var r *reconcile.Run
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE run_result (result text) ON COMMIT DROP`); err != nil {
			return err
		}
		if len(p.Result) > 0 {
			if _, err := tx.Conn().PgConn().CopyFrom(ctx, &copyText{b: p.Result}, `COPY run_result FROM STDIN`); err != nil {
				return err
			}
		}
		var row dbsqlc.Run
		if err := tx.QueryRow(ctx, `
			UPDATE run SET status = $2, result = (SELECT result::json FROM run_result), finished_at = $3 WHERE id = $1 AND status = 'running'
			RETURNING id, status, args, NULL::json, started_at, finished_at`, p.ID, string(p.Status), s.now()).Scan(
			&row.ID, &row.Status, &row.Args, &row.Result, &row.StartedAt, &row.FinishedAt); err != nil {
			return interpretError(err)
		}
		r = runOf(row)
		return nil
	})
	return driver.Finished(ctx, p, r, err, s.RunGet)
}

// copyText reads b as one value of COPY's text format, ending its row:
// backslashes, and the characters that would end a field or a row,
// escaped.
type copyText struct {
	b       []byte
	pending byte // the second half of an escape that did not fit
	done    bool
}

func (c *copyText) Read(out []byte) (int, error) {
	n := 0
	if c.pending != 0 && n < len(out) {
		out[n], c.pending = c.pending, 0
		n++
	}
	for len(c.b) > 0 && n < len(out) {
		// Only as far as fits: looking further for the next escape at
		// every read would scan a long result over and over.
		room := min(len(c.b), len(out)-n)
		i := bytes.IndexAny(c.b[:room], "\\\n\r\t")
		if i != 0 {
			if i < 0 {
				i = room
			}
			k := copy(out[n:], c.b[:i])
			n, c.b = n+k, c.b[k:]
			continue
		}
		out[n], c.pending = '\\', copyEscape(c.b[0])
		n, c.b = n+1, c.b[1:]
		if n < len(out) {
			out[n], c.pending = c.pending, 0
			n++
		}
	}
	if len(c.b) == 0 && c.pending == 0 && !c.done && n < len(out) {
		out[n] = '\n'
		n++
		c.done = true
	}
	if n == 0 && c.done {
		return 0, io.EOF
	}
	return n, nil
}

// copyEscape is the letter that follows a backslash for ch in COPY's text
// format.
func copyEscape(ch byte) byte {
	switch ch {
	case '\n':
		return 'n'
	case '\r':
		return 'r'
	case '\t':
		return 't'
	}
	return ch
}

// RunGet implements ledgerdb.Store.
func (s *Store) RunGet(ctx context.Context, id string) (*reconcile.Run, error) {
	r, err := dbsqlc.New(s.pool).RunGet(ctx, id)
	if err != nil {
		return nil, interpretError(err)
	}
	return runOf(r), nil
}

// RunList implements ledgerdb.Store.
func (s *Store) RunList(ctx context.Context, p *ledgerdb.RunsParams) ([]reconcile.Run, error) {
	var limit *int64
	if p.Limit > 0 {
		n := int64(p.Limit)
		limit = &n
	}
	rows, err := dbsqlc.New(s.pool).RunList(ctx, dbsqlc.RunListParams{Status: string(p.Status), MaxRuns: limit})
	if err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	var out []reconcile.Run
	for _, r := range rows {
		out = append(out, *runOf(dbsqlc.Run{ID: r.ID, Status: r.Status, Args: r.Args, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}))
	}
	return out, nil
}
