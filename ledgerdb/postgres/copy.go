package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb/internal/driver"
)

// copyBatch is how many rows the parser hands to the COPY at a time.
const copyBatch = 1000

// copyStream is the pgx.CopyFromSource of one COPY that runs while the
// source is still being parsed: the parser fills the next batch while
// PostgreSQL writes the last, so that reading and writing overlap instead
// of taking turns. At most a few batches are held. Hand-written: sqlc's
// :copyfrom takes its rows as one slice, given whole before the COPY.
type copyStream struct {
	batches chan [][]any
	mu      sync.Mutex
	abort   error         // set before batches is closed to make the COPY fail; read by pgx at any time
	ended   chan struct{} // closed when the COPY has ended, err set
	err     error
	cur     [][]any
	i       int
}

// copyInto starts the COPY of a stream on tx and returns the stream, and
// a function that waits for the COPY to end and returns its error.
func copyInto(ctx context.Context, tx pgx.Tx, table string, cols []string) (*copyStream, func() error) {
	c := &copyStream{batches: make(chan [][]any, 4), ended: make(chan struct{}), i: -1}
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		_, c.err = tx.CopyFrom(ctx, pgx.Identifier{table}, cols, c)
		close(c.ended)
		for range c.batches { // what the parser sent before it learnt the COPY had ended
		}
	}()
	return c, func() error {
		<-exited
		return c.err
	}
}

// Next implements pgx.CopyFromSource.
func (c *copyStream) Next() bool {
	c.i++
	for c.i >= len(c.cur) {
		b, ok := <-c.batches
		if !ok {
			return false
		}
		c.cur, c.i = b, 0
	}
	return true
}

// Values implements pgx.CopyFromSource.
func (c *copyStream) Values() ([]any, error) { return c.cur[c.i], nil }

// Err implements pgx.CopyFromSource.
func (c *copyStream) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.abort
}

// end stops the stream, making the COPY fail with err when it is not nil.
func (c *copyStream) end(err error) {
	c.mu.Lock()
	c.abort = err
	c.mu.Unlock()
	close(c.batches)
}

// send hands a batch to the COPY, or returns why the COPY ended early.
func (c *copyStream) send(b [][]any) error {
	select {
	case c.batches <- b:
		return nil
	case <-c.ended:
		if c.err == nil {
			return errors.New("copy ended before its rows")
		}
		return c.err
	}
}

// evidenceWriter is the SourceWriter of SourceIngest: evidence rows go to
// the COPY as they come, numbered in their order (seq); rejected rows,
// which a connection cannot write while its COPY runs, are kept and
// written after it.
type evidenceWriter struct {
	stream   *copyStream
	source   int64
	seq      int
	batch    [][]any
	rejected []driver.SeqRejected
}

// Evidence implements ledgerdb.SourceWriter.
func (w *evidenceWriter) Evidence(e *reconcile.Evidence) error {
	w.seq++
	var md any
	if len(e.Metadata) > 0 {
		b, err := json.Marshal(e.Metadata)
		if err != nil {
			return err
		}
		md = string(b)
	}
	w.batch = append(w.batch, []any{w.source, w.seq, e.Line, e.Provider, e.TxID, string(e.Kind), e.RawKind, e.Amount.Minor, e.Amount.Currency,
		e.Fee, nullTime(e.Time), e.Pending, e.Failed, e.EffectKey, e.ParentEffectKey, e.PaymentIntent, e.ParentTxID, e.Description, md, e.Raw})
	if len(w.batch) < copyBatch {
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

func (w *evidenceWriter) flush() error {
	if len(w.batch) == 0 {
		return nil
	}
	err := w.stream.send(w.batch)
	w.batch = make([][]any, 0, copyBatch)
	return err
}
