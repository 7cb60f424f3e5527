package driver

import (
	"errors"
	"fmt"
	"reconcile/ledgerdb"

	"reconcile"
)

// batchSize is how many rows a driver writes at once.
const batchSize = 5000

// Batcher buffers one source's rows and hands them to a driver's flush
// functions in batches, numbering them in the order they came (seq), so
// that no two rows of a source share a key, however alike they are. The
// flush functions run on a goroutine of the Batcher's, one batch at a
// time and in order, while the caller (the parser) fills the next: the
// parsing and the writing take a processor each. Close must follow.
type Batcher struct {
	details  *Details
	evidence []SeqEvidence
	rejected []SeqRejected
	seq      int
	flushEv  func([]SeqEvidence) error
	flushRej func([]SeqRejected) error
	// work takes the batches to the writer, which sends its first error
	// to failed (at once) and to done (when work is closed).
	work   chan func() error
	failed chan error
	done   chan error
	err    error // the writer's first error, once seen
	closed bool
}

// SeqEvidence is an evidence record with its position in its source.
type SeqEvidence struct {
	Seq      int
	Evidence *reconcile.Evidence
}

// SeqRejected is a rejected row with its position in its source.
type SeqRejected struct {
	Seq      int
	Rejected *reconcile.Rejected
}

// NewBatcher returns a Batcher that flushes through the given functions
// and adds each record's details to details as it numbers them.
func NewBatcher(details *Details, flushEv func([]SeqEvidence) error, flushRej func([]SeqRejected) error) *Batcher {
	b := &Batcher{details: details, flushEv: flushEv, flushRej: flushRej,
		work: make(chan func() error, 1), failed: make(chan error, 1), done: make(chan error, 1)}
	go func() {
		var err error
		for f := range b.work {
			if err == nil {
				if err = f(); err != nil {
					b.failed <- err
				}
			}
		}
		b.done <- err
	}()
	return b
}

// Evidence implements SourceWriter.
func (b *Batcher) Evidence(e *reconcile.Evidence) error {
	b.seq++
	if err := b.details.Add(b.seq, e); err != nil {
		return err
	}
	cp := *e
	b.evidence = append(b.evidence, SeqEvidence{Seq: b.seq, Evidence: &cp})
	if len(b.evidence) >= batchSize {
		return b.flushEvidence()
	}
	return nil
}

// Reject implements SourceWriter.
func (b *Batcher) Reject(r *reconcile.Rejected) error {
	b.seq++
	cp := *r
	b.rejected = append(b.rejected, SeqRejected{Seq: b.seq, Rejected: &cp})
	if len(b.rejected) >= batchSize {
		return b.flushRejected()
	}
	return nil
}

// Flush writes what is buffered and waits for every batch to be written.
func (b *Batcher) Flush() error {
	if err := b.flushEvidence(); err != nil {
		return err
	}
	if err := b.flushRejected(); err != nil {
		return err
	}
	return b.Close()
}

// Close stops the writer once it has written what it was handed, and
// returns its first error. The caller's transaction must outlive it.
func (b *Batcher) Close() error {
	if !b.closed {
		b.closed = true
		close(b.work)
		if err := <-b.done; b.err == nil {
			b.err = err
		}
	}
	return b.err
}

func (b *Batcher) flushEvidence() error {
	if len(b.evidence) == 0 {
		return nil
	}
	rows := b.evidence
	b.evidence = make([]SeqEvidence, 0, batchSize)
	return b.hand(func() error { return b.flushEv(rows) })
}

func (b *Batcher) flushRejected() error {
	if len(b.rejected) == 0 {
		return nil
	}
	rows := b.rejected
	b.rejected = nil
	return b.hand(func() error { return b.flushRej(rows) })
}

// hand gives the writer a batch, unless it has failed.
func (b *Batcher) hand(f func() error) error {
	select {
	case err := <-b.failed:
		b.err = err
	default:
	}
	if b.err != nil {
		return b.err
	}
	b.work <- f
	return nil
}

// ErrDuplicate rolls back the ingest of content the manifest holds already.
var ErrDuplicate = errors.New("duplicate source")

// Ingested is SourceIngest's answer once its transaction ended with err:
// res, or a duplicate when the content was in already (ErrDuplicate).
func Ingested(p *ledgerdb.IngestParams, res *ledgerdb.IngestResult, err error) (*ledgerdb.IngestResult, error) {
	if errors.Is(err, ErrDuplicate) {
		return &ledgerdb.IngestResult{Duplicate: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ingest %s: %w", p.URI, err)
	}
	return res, nil
}
