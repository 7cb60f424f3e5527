package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
	"reconcile/ledgerdb/postgres/internal/dbsqlc"
)

// SourceFind implements ledgerdb.Store.
func (s *Store) SourceFind(ctx context.Context, hash, etag string) (*ledgerdb.SourceRecord, error) {
	r, err := dbsqlc.New(s.pool).SourceFind(ctx, dbsqlc.SourceFindParams{Hash: hash, Etag: etag})
	if err != nil {
		return nil, interpretError(err)
	}
	rec := sourceOf(r)
	return &rec, nil
}

// SourceIngest implements ledgerdb.Store: the evidence goes in with one
// COPY that runs while fill parses (see copyStream), the rejected rows with
// another after it, inside one transaction; the manifest's hash is set
// last, so a concurrent ingest of the same content fails on the unique hash
// and rolls back whole. Hand-written, whole: the hot path of a night, its
// COPYs beyond sqlc.
func (s *Store) SourceIngest(ctx context.Context, p *ledgerdb.IngestParams, fill func(ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error)) (*ledgerdb.IngestResult, error) {
	res := &ledgerdb.IngestResult{}
	keep, err := s.kept.Keep(p, time.Microsecond)
	if err != nil {
		return nil, err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO source (uri, etag, ingested_at) VALUES ($1, nullif($2, ''), $3) RETURNING id`,
			p.URI, p.ETag, s.now()).Scan(&res.SourceID); err != nil {
			return err
		}
		id := res.SourceID
		stream, wait := copyInto(ctx, tx, "evidence", evidenceCopyCols)
		w := &evidenceWriter{stream: stream, source: id, details: keep.Details()}
		cw := driver.Cover(keep.Over(w), time.Microsecond)
		rec, err := fill(cw)
		res.Coverage = cw.Ends()
		if err == nil {
			err = w.close()
		}
		stream.end(err)
		if cerr := wait(); err == nil {
			err = cerr
		}
		if err == nil && !p.Keep {
			err = copyDetails(ctx, tx, map[int64]*driver.Details{id: keep.Details()}, nil)
		}
		if err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"rejected_row"}, []string{"source_id", "seq", "line", "reason", "raw"},
			pgx.CopyFromSlice(len(w.rejected), func(i int) ([]any, error) {
				r := w.rejected[i].Rejected
				return []any{id, w.rejected[i].Seq, r.Line, r.Reason, r.Raw}, nil
			})); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE source SET hash = $2, format = $3, bytes = $4, row_count = $5, evidence_count = $6,
			rejected_count = $7, ignored_count = $8 WHERE id = $1`,
			id, rec.Hash, rec.Format, rec.Bytes, rec.Rows, rec.Evidence, rec.Rejected, rec.Ignored)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation: this content is in already
			res.Duplicate = true
			return driver.ErrDuplicate
		}
		return err
	})
	res, err = driver.Ingested(p, res, err)
	s.kept.Done(keep, res, err)
	return res, err
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// sourceOf converts a manifest row.
func sourceOf(r dbsqlc.Source) ledgerdb.SourceRecord {
	return ledgerdb.SourceRecord{ID: r.ID, RunID: textOf(r.RunID), SourceAccount: reconcile.SourceAccount{URI: r.Uri, ETag: textOf(r.Etag),
		Format: r.Format, Hash: textOf(r.Hash), Bytes: r.Bytes, Rows: r.RowCount, Evidence: r.EvidenceCount, Rejected: r.RejectedCount,
		Ignored: r.IgnoredCount}}
}

// SourceList implements ledgerdb.Store.
func (s *Store) SourceList(ctx context.Context) ([]ledgerdb.SourceRecord, error) {
	rows, err := dbsqlc.New(s.pool).SourceList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ledgerdb.SourceRecord, len(rows))
	for i, r := range rows {
		out[i] = sourceOf(r)
	}
	return out, nil
}

// SourceGetRows implements ledgerdb.Store.
func (s *Store) SourceGetRows(ctx context.Context, id int64) (*ledgerdb.SourceRecord, []reconcile.Evidence, []reconcile.Rejected, error) {
	q := dbsqlc.New(s.pool)
	r, err := q.SourceGet(ctx, id)
	if err != nil {
		return nil, nil, nil, interpretError(err)
	}
	rec := sourceOf(r)
	rows, err := q.EvidenceListBySource(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	evidence := make([]reconcile.Evidence, len(rows))
	for i, r := range rows {
		if evidence[i], err = evidenceOf(r); err != nil {
			return nil, nil, nil, err
		}
	}
	rejected, err := rejectedRows(ctx, q, &rec, 0)
	return &rec, evidence, rejected, err
}

// RejectedListBySource implements ledgerdb.Store.
func (s *Store) RejectedListBySource(ctx context.Context, id int64, limit int) ([]reconcile.Rejected, error) {
	q := dbsqlc.New(s.pool)
	r, err := q.SourceGet(ctx, id)
	if err != nil {
		return nil, interpretError(err)
	}
	rec := sourceOf(r)
	return rejectedRows(ctx, q, &rec, limit)
}

// rejectedRows returns the first limit rejected rows of rec (all when limit
// is 0), in order.
func rejectedRows(ctx context.Context, q *dbsqlc.Queries, rec *ledgerdb.SourceRecord, limit int) ([]reconcile.Rejected, error) {
	rows, err := q.RejectedListBySource(ctx, dbsqlc.RejectedListBySourceParams{SourceID: rec.ID, MaxRows: int64(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]reconcile.Rejected, len(rows))
	for i, r := range rows {
		out[i] = reconcile.Rejected{URI: rec.URI, Line: r.Line, Reason: r.Reason, Raw: r.Raw}
	}
	return out, nil
}

// evidenceOf converts an evidence row with its source's URI and hash and
// its details (empty when the ledger keeps none), its time in UTC and its
// metadata decoded.
func evidenceOf(row dbsqlc.EvidenceListBySourceRow) (reconcile.Evidence, error) {
	r := &row.Evidence
	e := reconcile.Evidence{Line: r.Line, Provider: r.Provider, TxID: r.TxID, Kind: reconcile.Kind(r.Kind), RawKind: r.RawKind,
		Amount: reconcile.Money{Minor: r.AmountMinor, Currency: r.Currency}, Fee: r.FeeMinor, Time: utcOf(r.OccurredAt),
		Pending: r.Pending, Failed: r.Failed, EffectKey: r.EffectKey, ParentEffectKey: r.ParentEffectKey, PaymentIntent: r.PaymentIntent,
		ParentTxID: r.ParentTxID, Description: row.Description, Raw: row.Raw, URI: row.Uri, SourceHash: row.SourceHash}
	if row.Metadata == nil {
		return e, nil
	}
	err := json.Unmarshal(row.Metadata, &e.Metadata)
	return e, err
}
