package postgres

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb/internal/driver"
)

// copyChunk is about how many bytes of rows the parser hands to the COPY
// at a time.
const copyChunk = 256 << 10

// copyStream is the input of one COPY in the binary format that runs
// while the source is still being parsed: the parser encodes the next
// chunk of rows while PostgreSQL writes the last, so that reading and
// writing overlap instead of taking turns. At most a few chunks are held.
// Hand-written: sqlc's :copyfrom takes its rows as one slice, given whole
// before the COPY, and pgx's CopyFrom takes each row as a slice of
// interfaces, encoded through its type map: 1.8 s of the 7 s of CPU a 1M
// night's ingest took in the run's process.
type copyStream struct {
	chunks chan []byte
	mu     sync.Mutex
	abort  error         // set before chunks is closed to make the COPY fail
	ended  chan struct{} // closed when the COPY has ended, err set
	err    error
	cur    []byte
}

// copyInto starts the COPY of a stream on tx and returns the stream, and
// a function that waits for the COPY to end and returns its error.
func copyInto(ctx context.Context, tx pgx.Tx, table string, cols []string) (*copyStream, func() error) {
	c := &copyStream{chunks: make(chan []byte, 4), ended: make(chan struct{})}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		_, c.err = tx.Conn().PgConn().CopyFrom(ctx, c, copySQL(table, strings.Join(cols, ", ")))
		close(c.ended)
		for range c.chunks { // what the parser sent before it learnt the COPY had ended
		}
	}()
	return c, func() error {
		<-exited
		return c.err
	}
}

// Read implements io.Reader for the COPY.
func (c *copyStream) Read(p []byte) (int, error) {
	for len(c.cur) == 0 {
		b, ok := <-c.chunks
		if !ok {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.abort != nil {
				return 0, c.abort
			}
			return 0, io.EOF
		}
		c.cur = b
	}
	n := copy(p, c.cur)
	c.cur = c.cur[n:]
	return n, nil
}

// end stops the stream, making the COPY fail with err when it is not nil.
func (c *copyStream) end(err error) {
	c.mu.Lock()
	c.abort = err
	c.mu.Unlock()
	close(c.chunks)
}

// send hands a chunk to the COPY, or returns why the COPY ended early.
func (c *copyStream) send(b []byte) error {
	select {
	case c.chunks <- b:
		return nil
	case <-c.ended:
		if c.err == nil {
			return errors.New("copy ended before its rows")
		}
		return c.err
	}
}

// The binary COPY format's framing: its header (signature, flags,
// extension length) and its trailer (a row of -1 fields).
var (
	copyHeader  = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	copyTrailer = []byte{0xff, 0xff}
)

// copyValue is the input of a COPY in the binary format of one row of one
// value, b, read where it lies rather than copied into a row.
func copyValue(b []byte) io.Reader {
	head := binary.BigEndian.AppendUint32(append(copyRow(nil), copyHeader...).fields(1), uint32(len(b)))
	return io.MultiReader(bytes.NewReader(head), bytes.NewReader(b), bytes.NewReader(copyTrailer))
}

// copyRow appends the values of one row of COPY's binary format, typed as
// the columns they go into.
type copyRow []byte

func (b copyRow) fields(n int) copyRow { return binary.BigEndian.AppendUint16(b, uint16(n)) }

func (b copyRow) int8(v int64) copyRow {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(b, 8), uint64(v))
}

func (b copyRow) int4(v int) copyRow {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(b, 4), uint32(int32(v)))
}

func (b copyRow) text(s string) copyRow {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
}

func (b copyRow) bytes(s []byte) copyRow {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
}

func (b copyRow) null() copyRow { return binary.BigEndian.AppendUint32(b, math.MaxUint32) }

func (b copyRow) bool(v bool) copyRow {
	b = binary.BigEndian.AppendUint32(b, 1)
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// postgresEpoch is where timestamptz counts its microseconds from.
var postgresEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

// timestamptz appends t, or NULL when t is zero.
func (b copyRow) timestamptz(t time.Time) copyRow {
	if t.IsZero() {
		return b.null()
	}
	return b.int8(t.UnixMicro() - postgresEpoch)
}

// evidenceWriter is the SourceWriter of SourceIngest: evidence rows go to
// the COPY as they come, numbered in their order (seq); rejected rows,
// which a connection cannot write while its COPY runs, are kept and
// written after it.
type evidenceWriter struct {
	stream   *copyStream
	details  *driver.Details
	source   int64
	seq      int
	buf      copyRow
	rejected []driver.SeqRejected
}

// evidenceCopyCols are the columns evidenceWriter writes, in its order.
var evidenceCopyCols = []string{"source_id", "seq", "line", "provider", "tx_id", "kind", "raw_kind", "amount_minor", "currency",
	"fee_minor", "occurred_at", "pending", "failed", "effect_key", "parent_effect_key", "payment_intent", "parent_tx_id"}

// evidence appends the row of e, the record seq of source, in the
// columns evidenceCopyCols names.
func (b copyRow) evidence(source int64, seq int, e *reconcile.Evidence) copyRow {
	return b.fields(len(evidenceCopyCols)).int8(source).int4(seq).int4(e.Line).
		text(e.Provider).text(e.TxID).text(string(e.Kind)).text(e.RawKind).int8(e.Amount.Minor).text(e.Amount.Currency).
		int8(e.Fee).timestamptz(e.Time).bool(e.Pending).bool(e.Failed).
		text(e.EffectKey).text(e.ParentEffectKey).text(e.PaymentIntent).text(e.ParentTxID)
}

// Evidence implements ledgerdb.SourceWriter.
func (w *evidenceWriter) Evidence(e *reconcile.Evidence) error {
	w.seq++
	if e.Line < 0 || e.Line > math.MaxInt32 || w.seq > math.MaxInt32 {
		return fmt.Errorf("line %d: beyond what the ledger numbers", e.Line)
	}
	if w.buf == nil {
		w.buf = append(newChunk(), copyHeader...)
	}
	w.buf = w.buf.evidence(w.source, w.seq, e)
	if err := w.details.Add(w.seq, e); err != nil {
		return err
	}
	if len(w.buf) < copyChunk {
		return nil
	}
	return w.flush()
}

// Reject implements ledgerdb.SourceWriter.
func (w *evidenceWriter) Reject(r *reconcile.Rejected) error {
	w.seq++
	cp := *r
	w.rejected = append(w.rejected, driver.SeqRejected{Seq: w.seq, Rejected: &cp})
	return nil
}

// flush sends the rows encoded so far.
func (w *evidenceWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	err := w.stream.send(w.buf)
	w.buf = newChunk()
	return err
}

// newChunk is an empty chunk, with room for a row beyond copyChunk.
func newChunk() copyRow { return make(copyRow, 0, copyChunk+64<<10) }

// close sends the last rows and the end of the COPY's data.
func (w *evidenceWriter) close() error {
	if w.buf == nil {
		w.buf = append(make(copyRow, 0, len(copyHeader)+2), copyHeader...)
	}
	w.buf = append(w.buf, copyTrailer...)
	return w.flush()
}

// copyDetails copies into evidence_detail, on tx, the details of each
// source in held that pick takes (every one when pick is nil).
func copyDetails(ctx context.Context, tx pgx.Tx, held map[int64]*driver.Details, pick func(txID, effectKey uint64) bool) error {
	for id, d := range held {
		pr, pw := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			w := bufio.NewWriterSize(pw, copyChunk)
			_, err := w.Write(copyHeader)
			var b copyRow
			if err == nil {
				err = d.Each(pick, func(x *driver.Detail) error {
					b = b[:0].fields(5).int8(id).int4(x.Seq).bytes(x.Description)
					if x.Metadata == nil {
						b = b.null()
					} else {
						b = b.bytes(x.Metadata)
					}
					_, err := w.Write(b.bytes(x.Raw))
					return err
				})
			}
			if err == nil {
				if _, err = w.Write(copyTrailer); err == nil {
					err = w.Flush()
				}
			}
			pw.CloseWithError(err)
		}()
		_, err := tx.Conn().PgConn().CopyFrom(ctx, pr, copySQL("evidence_detail", "source_id, seq, description, metadata, raw"))
		pr.CloseWithError(errors.New("copy ended"))
		<-done
		if err != nil {
			return fmt.Errorf("details of source %d: %w", id, err)
		}
	}
	return nil
}

// copyRows copies n rows into table's columns cols (named as in SQL) in
// COPY's binary format, each appended by row (or none, when row appends
// nothing).
func copyRows(ctx context.Context, tx pgx.Tx, table, cols string, n int, row func(b copyRow, i int) copyRow) error {
	b := append(make(copyRow, 0, 64*n+len(copyHeader)+2), copyHeader...)
	for i := range n {
		b = row(b, i)
	}
	b = append(b, copyTrailer...)
	_, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(b), copySQL(table, cols))
	return err
}

// copySQL is the COPY of table's columns cols (named as in SQL) in the
// binary format.
func copySQL(table, cols string) string {
	return "COPY " + pgx.Identifier{table}.Sanitize() + " (" + cols + ") FROM STDIN (FORMAT binary)"
}
