package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/internal/driver"
)

// SourceFind implements ledgerdb.Store.
func (s *Store) SourceFind(ctx context.Context, hash, etag string) (*ledgerdb.SourceRecord, error) {
	r, err := scanSource(s.pool.QueryRow(ctx, `SELECT `+sourceCols+` FROM source
		WHERE (hash = $1 AND $1 <> '') OR (etag = $2 AND $2 <> '') ORDER BY id LIMIT 1`, hash, etag))
	if err != nil {
		return nil, err
	}
	return &r, nil
}

var evidenceCopyCols = []string{"source_id", "seq", "line", "provider", "tx_id", "kind", "raw_kind", "amount_minor", "currency",
	"fee_minor", "occurred_at", "pending", "failed", "effect_key", "parent_effect_key", "payment_intent", "parent_tx_id",
	"description", "metadata", "raw"}

// SourceIngest implements ledgerdb.Store: the evidence goes in with one
// COPY that runs while fill parses (see copyStream), the rejected rows with
// another after it, inside one transaction; the manifest's hash is set
// last, so a concurrent ingest of the same content fails on the unique hash
// and rolls back whole.
func (s *Store) SourceIngest(ctx context.Context, p *ledgerdb.IngestParams, fill func(ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error)) (*ledgerdb.IngestResult, error) {
	res := &ledgerdb.IngestResult{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO source (uri, etag, run_id, ingested_at) VALUES ($1, nullif($2, ''), nullif($3, ''), $4) RETURNING id`,
			p.URI, p.ETag, p.RunID, s.now()).Scan(&res.SourceID); err != nil {
			return err
		}
		id := res.SourceID
		stream, wait := copyInto(ctx, tx, "evidence", evidenceCopyCols)
		w := &evidenceWriter{stream: stream, source: id, batch: make([][]any, 0, copyBatch)}
		cw := driver.Cover(w, time.Microsecond)
		rec, err := fill(cw)
		res.Coverage = cw.Ends()
		if err == nil {
			err = w.flush()
		}
		stream.end(err)
		if cerr := wait(); err == nil {
			err = cerr
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

// errDuplicate rolls back the ingest of content that is in already.
var errDuplicate = errors.New("duplicate source")

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

const sourceCols = `id, uri, coalesce(etag, ''), format, coalesce(hash, ''), bytes, row_count, evidence_count, rejected_count, ignored_count, coalesce(run_id, '')`

func scanSource(row pgx.Row) (ledgerdb.SourceRecord, error) {
	var r ledgerdb.SourceRecord
	err := row.Scan(&r.ID, &r.URI, &r.ETag, &r.Format, &r.Hash, &r.Bytes, &r.Rows, &r.Evidence, &r.Rejected, &r.Ignored, &r.RunID)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, reconcile.ErrNotFound
	}
	return r, err
}

// SourceList implements ledgerdb.Store.
func (s *Store) SourceList(ctx context.Context) ([]ledgerdb.SourceRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+sourceCols+` FROM source ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledgerdb.SourceRecord, error) { return scanSource(r) })
}

// SourceGetRows implements ledgerdb.Store.
func (s *Store) SourceGetRows(ctx context.Context, id int64) (*ledgerdb.SourceRecord, []reconcile.Evidence, []reconcile.Rejected, error) {
	rec, err := scanSource(s.pool.QueryRow(ctx, `SELECT `+sourceCols+` FROM source WHERE id = $1`, id))
	if err != nil {
		return nil, nil, nil, err
	}
	evidence, err := s.queryEvidence(ctx, `WHERE ev.source_id = $1`, id)
	if err != nil {
		return nil, nil, nil, err
	}
	rejected, err := s.rejectedRows(ctx, &rec, 0)
	return &rec, evidence, rejected, err
}

// RejectedListBySource implements ledgerdb.Store.
func (s *Store) RejectedListBySource(ctx context.Context, id int64, limit int) ([]reconcile.Rejected, error) {
	rec, err := scanSource(s.pool.QueryRow(ctx, `SELECT `+sourceCols+` FROM source WHERE id = $1`, id))
	if err != nil {
		return nil, err
	}
	return s.rejectedRows(ctx, &rec, limit)
}

func (s *Store) rejectedRows(ctx context.Context, rec *ledgerdb.SourceRecord, limit int) ([]reconcile.Rejected, error) {
	rows, err := s.pool.Query(ctx, `SELECT line, reason, raw FROM rejected_row WHERE source_id = $1 ORDER BY seq LIMIT nullif($2::bigint, 0)`, rec.ID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (reconcile.Rejected, error) {
		x := reconcile.Rejected{URI: rec.URI}
		err := r.Scan(&x.Line, &x.Reason, &x.Raw)
		return x, err
	})
}

// queryEvidence returns the evidence rows that where selects (ev is the
// evidence table), in source and row order, with their provenance.
func (s *Store) queryEvidence(ctx context.Context, where string, args ...any) ([]reconcile.Evidence, error) {
	rows, err := s.pool.Query(ctx, `SELECT ev.line, ev.provider, ev.tx_id, ev.kind, ev.raw_kind, ev.amount_minor, ev.currency,
		ev.fee_minor, ev.occurred_at, ev.pending, ev.failed, ev.effect_key, ev.parent_effect_key, ev.payment_intent,
		ev.parent_tx_id, ev.description, ev.metadata, ev.raw, src.uri, coalesce(src.hash, '')
		FROM evidence ev JOIN source src ON src.id = ev.source_id `+where+` ORDER BY ev.source_id, ev.seq`, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (reconcile.Evidence, error) {
		var (
			e    reconcile.Evidence
			kind string
			at   *time.Time
			md   []byte
		)
		err := r.Scan(&e.Line, &e.Provider, &e.TxID, &kind, &e.RawKind, &e.Amount.Minor, &e.Amount.Currency, &e.Fee, &at,
			&e.Pending, &e.Failed, &e.EffectKey, &e.ParentEffectKey, &e.PaymentIntent, &e.ParentTxID, &e.Description, &md, &e.Raw,
			&e.URI, &e.SourceHash)
		if err != nil {
			return e, err
		}
		e.Kind = reconcile.Kind(kind)
		if at != nil {
			e.Time = at.UTC()
		}
		if md != nil {
			err = json.Unmarshal(md, &e.Metadata)
		}
		return e, err
	})
}
