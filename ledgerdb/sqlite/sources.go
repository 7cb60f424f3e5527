package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
	"reconcile/ledgerdb/sqlite/internal/dbsqlc"
)

// SourceFind implements ledgerdb.Store.
func (s *Store) SourceFind(ctx context.Context, hash, etag string) (*ledgerdb.SourceRecord, error) {
	r, err := readSource(s.q.SourceFind(ctx, dbsqlc.SourceFindParams{Hash: &hash, ETag: &etag}))
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// SourceIngest implements ledgerdb.Store: batched inserts through prepared
// statements inside one write transaction; the manifest's hash is set last.
// Hand-written: the hot bulk insert path, its evidence INSERT built for n rows at run time and prepared once per source.
func (s *Store) SourceIngest(ctx context.Context, p *ledgerdb.IngestParams, fill func(ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error)) (*ledgerdb.IngestResult, error) {
	res := &ledgerdb.IngestResult{}
	keep, err := s.kept.Keep(p, time.Millisecond) // timeFormat's precision
	if err != nil {
		return nil, err
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `INSERT INTO source (uri, etag, ingested_at) VALUES (?, nullif(?, ''), ?) RETURNING id`,
			p.URI, p.ETag, ts(s.now())).Scan(&res.SourceID); err != nil {
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
		b := driver.NewBatcher(keep.Details(),
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
							e.ParentTxID)
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
		defer b.Close()
		cw := driver.Cover(keep.Over(b), time.Millisecond)
		rec, err := fill(cw)
		res.Coverage = cw.Ends()
		if err != nil {
			return err
		}
		if err := b.Flush(); err != nil {
			return err
		}
		if !p.Keep {
			if err := insertDetails(ctx, tx, map[int64]*driver.Details{id: keep.Details()}, nil); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE source SET hash = ?, format = ?, bytes = ?, row_count = ?, evidence_count = ?,
			rejected_count = ?, ignored_count = ? WHERE id = ?`,
			rec.Hash, rec.Format, rec.Bytes, rec.Rows, rec.Evidence, rec.Rejected, rec.Ignored, id)
		var se *sqlite.Error
		if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
			return driver.ErrDuplicate
		}
		return err
	})
	res, err = driver.Ingested(p, res, err)
	s.kept.Done(keep, res, err)
	return res, err
}

// rowsPerInsert is how many evidence rows one INSERT writes.
const rowsPerInsert = 100

// evidenceCols is how many columns an evidence row has.
const evidenceCols = 17

// evidenceInsert is the INSERT of n evidence rows.
func evidenceInsert(n int) string {
	return `INSERT INTO evidence (source_id, seq, line, provider, tx_id, kind, raw_kind, amount_minor, currency, fee_minor, occurred_at,
		pending, failed, effect_key, parent_effect_key, payment_intent, parent_tx_id) VALUES ` + values(evidenceCols, n)
}

// values is the VALUES list of n rows of cols parameters each.
func values(cols, n int) string {
	row := "(" + strings.Repeat("?, ", cols-1) + "?)"
	return strings.Repeat(row+", ", n-1) + row
}

// insertDetails inserts into evidence_detail, on tx, the details of each
// source in held that pick takes (every one when pick is nil), rowsPerInsert
// rows a statement.
func insertDetails(ctx context.Context, tx *sql.Tx, held map[int64]*driver.Details, pick func(txID, effectKey uint64) bool) error {
	const cols, insert = 5, `INSERT INTO evidence_detail (source_id, seq, description, metadata, raw) VALUES `
	args := make([]any, 0, rowsPerInsert*cols)
	var many *sql.Stmt
	defer func() {
		if many != nil {
			many.Close()
		}
	}()
	for id, d := range held {
		err := d.Each(pick, func(x *driver.Detail) error {
			args = append(args, id, x.Seq, string(x.Description), nullJSON(x.Metadata), string(x.Raw))
			if len(args) < cap(args) {
				return nil
			}
			if many == nil {
				var err error
				if many, err = tx.PrepareContext(ctx, insert+values(cols, rowsPerInsert)); err != nil {
					return err
				}
			}
			_, err := many.ExecContext(ctx, args...)
			args = args[:0]
			return err
		})
		if err != nil {
			return err
		}
	}
	if len(args) == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, insert+values(cols, len(args)/cols), args...)
	return err
}

// sourceFromRow converts a manifest row.
func sourceFromRow(r dbsqlc.Source) ledgerdb.SourceRecord {
	return ledgerdb.SourceRecord{ID: r.ID, RunID: text(r.RunID), SourceAccount: reconcile.SourceAccount{
		URI:      r.URI,
		ETag:     text(r.ETag),
		Format:   r.Format,
		Hash:     text(r.Hash),
		Bytes:    r.Bytes,
		Rows:     int(r.RowCount),
		Evidence: int(r.EvidenceCount),
		Rejected: int(r.RejectedCount),
		Ignored:  int(r.IgnoredCount),
	}}
}

// readSource is the manifest entry that a :one query read, or its error
// through interpretError.
func readSource(r dbsqlc.Source, err error) (ledgerdb.SourceRecord, error) {
	if err != nil {
		return ledgerdb.SourceRecord{}, interpretError(err)
	}
	return sourceFromRow(r), nil
}

// SourceList implements ledgerdb.Store.
func (s *Store) SourceList(ctx context.Context) ([]ledgerdb.SourceRecord, error) {
	rows, err := s.q.SourceList(ctx)
	if err != nil {
		return nil, err
	}
	var out []ledgerdb.SourceRecord
	for _, r := range rows {
		out = append(out, sourceFromRow(r))
	}
	return out, nil
}

// SourceGetRows implements ledgerdb.Store.
func (s *Store) SourceGetRows(ctx context.Context, id int64) (*ledgerdb.SourceRecord, []reconcile.Evidence, []reconcile.Rejected, error) {
	rec, err := readSource(s.q.SourceGet(ctx, id))
	if err != nil {
		return nil, nil, nil, err
	}
	rows, err := s.q.EvidenceListBySource(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	var evidence []reconcile.Evidence
	for _, r := range rows {
		e, err := evidenceFromRow(r)
		if err != nil {
			return nil, nil, nil, err
		}
		evidence = append(evidence, e)
	}
	rejected, err := s.rejectedRows(ctx, &rec, 0)
	return &rec, evidence, rejected, err
}

// RejectedListBySource implements ledgerdb.Store.
func (s *Store) RejectedListBySource(ctx context.Context, id int64, limit int) ([]reconcile.Rejected, error) {
	rec, err := readSource(s.q.SourceGet(ctx, id))
	if err != nil {
		return nil, err
	}
	return s.rejectedRows(ctx, &rec, limit)
}

// rejectedRows returns the first limit rejected rows of rec (all when limit
// is 0), in order.
func (s *Store) rejectedRows(ctx context.Context, rec *ledgerdb.SourceRecord, limit int) ([]reconcile.Rejected, error) {
	rows, err := s.q.RejectedListBySource(ctx, dbsqlc.RejectedListBySourceParams{SourceID: rec.ID, Limit: limit})
	if err != nil {
		return nil, err
	}
	var rejected []reconcile.Rejected
	for _, r := range rows {
		rejected = append(rejected, reconcile.Rejected{URI: rec.URI, Line: int(r.Line), Reason: r.Reason, Raw: r.Raw})
	}
	return rejected, nil
}

// evidenceFromRow converts an evidence row, with the URI and hash of its
// source and its details (empty when the ledger keeps none).
func evidenceFromRow(row dbsqlc.EvidenceListBySourceRow) (reconcile.Evidence, error) {
	r, uri, hash := &row.Evidence, row.URI, row.Hash
	e := reconcile.Evidence{
		Provider:        r.Provider,
		TxID:            r.TxID,
		Kind:            reconcile.Kind(r.Kind),
		RawKind:         r.RawKind,
		Amount:          reconcile.Money{Minor: r.AmountMinor, Currency: r.Currency},
		Fee:             r.FeeMinor,
		Pending:         r.Pending,
		Failed:          r.Failed,
		EffectKey:       r.EffectKey,
		ParentEffectKey: r.ParentEffectKey,
		PaymentIntent:   r.PaymentIntent,
		ParentTxID:      r.ParentTxID,
		Description:     row.Description,
		URI:             uri,
		SourceHash:      text(hash),
		Line:            int(r.Line),
		Raw:             row.Raw,
	}
	var err error
	if e.Time, err = parseNullTS(r.OccurredAt); err != nil {
		return e, err
	}
	if row.Metadata != nil {
		if err := json.Unmarshal([]byte(*row.Metadata), &e.Metadata); err != nil {
			return e, err
		}
	}
	return e, nil
}
