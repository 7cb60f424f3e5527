package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

// SourceFind implements ledgerdb.Store.
func (s *Store) SourceFind(ctx context.Context, hash, etag string) (*ledgerdb.SourceRecord, error) {
	r, err := scanSource(s.db.QueryRowContext(ctx, `SELECT `+sourceCols+` FROM source
		WHERE (hash = ?1 AND ?1 <> '') OR (etag = ?2 AND ?2 <> '') ORDER BY id LIMIT 1`, hash, etag))
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// SourceIngest implements ledgerdb.Store: batched inserts through prepared
// statements inside one write transaction; the manifest's hash is set last.
func (s *Store) SourceIngest(ctx context.Context, p *ledgerdb.IngestParams, fill func(ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error)) (*ledgerdb.IngestResult, error) {
	res := &ledgerdb.IngestResult{}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `INSERT INTO source (uri, etag, run_id, ingested_at) VALUES (?, nullif(?, ''), nullif(?, ''), ?) RETURNING id`,
			p.URI, p.ETag, p.RunID, ts(s.now())).Scan(&res.SourceID); err != nil {
			return err
		}
		// Evidence goes in rowsPerInsert rows a statement: a statement's
		// round trip through database/sql costs more than its rows.
		insEv, err := tx.PrepareContext(ctx, evidenceInsert(1))
		if err != nil {
			return err
		}
		defer insEv.Close()
		insEvs, err := tx.PrepareContext(ctx, evidenceInsert(rowsPerInsert))
		if err != nil {
			return err
		}
		defer insEvs.Close()
		args := make([]any, 0, rowsPerInsert*evidenceCols)
		insRej, err := tx.PrepareContext(ctx, `INSERT INTO rejected_row (source_id, seq, line, reason, raw) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer insRej.Close()
		id := res.SourceID
		b := driver.NewBatcher(
			func(rows []driver.SeqEvidence) error {
				for len(rows) > 0 {
					n, stmt := rowsPerInsert, insEvs
					if len(rows) < n {
						n, stmt = 1, insEv
					}
					args = args[:0]
					for _, r := range rows[:n] {
						e := r.Evidence
						args = append(args, id, r.Seq, e.Line, e.Provider, e.TxID, string(e.Kind), e.RawKind, e.Amount.Minor,
							e.Amount.Currency, e.Fee, nullTS(e.Time), e.Pending, e.Failed, e.EffectKey, e.ParentEffectKey, e.PaymentIntent,
							e.ParentTxID, e.Description, nullJSON(r.Metadata), e.Raw)
					}
					if _, err := stmt.ExecContext(ctx, args...); err != nil {
						return err
					}
					rows = rows[n:]
				}
				return nil
			},
			func(rows []driver.SeqRejected) error {
				for _, r := range rows {
					if _, err := insRej.ExecContext(ctx, id, r.Seq, r.Rejected.Line, r.Rejected.Reason, r.Rejected.Raw); err != nil {
						return err
					}
				}
				return nil
			})
		cw := driver.Cover(b, time.Millisecond) // timeFormat's precision
		rec, err := fill(cw)
		res.Coverage = cw.Ends()
		if err != nil {
			return err
		}
		if err := b.Flush(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE source SET hash = ?, format = ?, bytes = ?, row_count = ?, evidence_count = ?,
			rejected_count = ?, ignored_count = ? WHERE id = ?`,
			rec.Hash, rec.Format, rec.Bytes, rec.Rows, rec.Evidence, rec.Rejected, rec.Ignored, id)
		var se *sqlite.Error
		if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
			return errDuplicate
		}
		return err
	})
	if errors.Is(err, errDuplicate) {
		return &ledgerdb.IngestResult{Duplicate: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ingest %s: %w", p.URI, err)
	}
	return res, nil
}

// rowsPerInsert is how many evidence rows one INSERT writes.
const rowsPerInsert = 100

// evidenceCols is how many columns an evidence row has.
const evidenceCols = 20

// evidenceInsert is the INSERT of n evidence rows.
func evidenceInsert(n int) string {
	row := "(" + strings.Repeat("?, ", evidenceCols-1) + "?)"
	return `INSERT INTO evidence (source_id, seq, line, provider, tx_id, kind, raw_kind, amount_minor, currency, fee_minor, occurred_at,
		pending, failed, effect_key, parent_effect_key, payment_intent, parent_tx_id, description, metadata, raw) VALUES ` +
		strings.Repeat(row+", ", n-1) + row
}

// errDuplicate rolls back the ingest of content that is in already.
var errDuplicate = errors.New("duplicate source")

const sourceCols = `id, uri, coalesce(etag, ''), format, coalesce(hash, ''), bytes, row_count, evidence_count, rejected_count, ignored_count, coalesce(run_id, '')`

type scanner interface{ Scan(dest ...any) error }

func scanSource(row scanner) (ledgerdb.SourceRecord, error) {
	var r ledgerdb.SourceRecord
	err := row.Scan(&r.ID, &r.URI, &r.ETag, &r.Format, &r.Hash, &r.Bytes, &r.Rows, &r.Evidence, &r.Rejected, &r.Ignored, &r.RunID)
	if errors.Is(err, sql.ErrNoRows) {
		return r, reconcile.ErrNotFound
	}
	return r, err
}

// SourceList implements ledgerdb.Store.
func (s *Store) SourceList(ctx context.Context) ([]ledgerdb.SourceRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+sourceCols+` FROM source ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ledgerdb.SourceRecord
	for rows.Next() {
		r, err := scanSource(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// SourceGetRows implements ledgerdb.Store.
func (s *Store) SourceGetRows(ctx context.Context, id int64) (*ledgerdb.SourceRecord, []reconcile.Evidence, []reconcile.Rejected, error) {
	rec, err := scanSource(s.db.QueryRowContext(ctx, `SELECT `+sourceCols+` FROM source WHERE id = ?`, id))
	if err != nil {
		return nil, nil, nil, err
	}
	evidence, err := s.queryEvidence(ctx, `WHERE ev.source_id = ?`, id)
	if err != nil {
		return nil, nil, nil, err
	}
	rejected, err := s.rejectedRows(ctx, &rec, 0)
	return &rec, evidence, rejected, err
}

// RejectedListBySource implements ledgerdb.Store.
func (s *Store) RejectedListBySource(ctx context.Context, id int64, limit int) ([]reconcile.Rejected, error) {
	rec, err := scanSource(s.db.QueryRowContext(ctx, `SELECT `+sourceCols+` FROM source WHERE id = ?`, id))
	if err != nil {
		return nil, err
	}
	return s.rejectedRows(ctx, &rec, limit)
}

func (s *Store) rejectedRows(ctx context.Context, rec *ledgerdb.SourceRecord, limit int) ([]reconcile.Rejected, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT line, reason, raw FROM rejected_row WHERE source_id = ?1 ORDER BY seq
		LIMIT CASE WHEN ?2 > 0 THEN ?2 ELSE -1 END`, rec.ID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var rejected []reconcile.Rejected
	for rows.Next() {
		x := reconcile.Rejected{URI: rec.URI}
		if err := rows.Scan(&x.Line, &x.Reason, &x.Raw); err != nil {
			return nil, err
		}
		rejected = append(rejected, x)
	}
	return rejected, rows.Err()
}

// queryEvidence returns the evidence rows that where selects (ev is the
// evidence table), in source and row order, with their provenance.
func (s *Store) queryEvidence(ctx context.Context, where string, args ...any) ([]reconcile.Evidence, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT ev.line, ev.provider, ev.tx_id, ev.kind, ev.raw_kind, ev.amount_minor, ev.currency,
		ev.fee_minor, ev.occurred_at, ev.pending, ev.failed, ev.effect_key, ev.parent_effect_key, ev.payment_intent,
		ev.parent_tx_id, ev.description, ev.metadata, ev.raw, src.uri, coalesce(src.hash, '')
		FROM evidence ev JOIN source src ON src.id = ev.source_id `+where+` ORDER BY ev.source_id, ev.seq`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []reconcile.Evidence
	for rows.Next() {
		var (
			e      reconcile.Evidence
			kind   string
			at, md sql.NullString
		)
		if err := rows.Scan(&e.Line, &e.Provider, &e.TxID, &kind, &e.RawKind, &e.Amount.Minor, &e.Amount.Currency, &e.Fee, &at,
			&e.Pending, &e.Failed, &e.EffectKey, &e.ParentEffectKey, &e.PaymentIntent, &e.ParentTxID, &e.Description, &md, &e.Raw,
			&e.URI, &e.SourceHash); err != nil {
			return nil, err
		}
		e.Kind = reconcile.Kind(kind)
		if e.Time, err = parseTS(at); err != nil {
			return nil, err
		}
		if md.Valid {
			if err := json.Unmarshal([]byte(md.String), &e.Metadata); err != nil {
				return nil, err
			}
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
