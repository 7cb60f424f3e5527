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
// that no two rows of a source share a key, however alike they are.
type Batcher struct {
	details  *Details
	evidence []SeqEvidence
	rejected []SeqRejected
	seq      int
	flushEv  func([]SeqEvidence) error
	flushRej func([]SeqRejected) error
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
	return &Batcher{details: details, flushEv: flushEv, flushRej: flushRej}
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

// Flush writes what is buffered.
func (b *Batcher) Flush() error {
	if err := b.flushEvidence(); err != nil {
		return err
	}
	return b.flushRejected()
}

func (b *Batcher) flushEvidence() error {
	if len(b.evidence) == 0 {
		return nil
	}
	err := b.flushEv(b.evidence)
	b.evidence = b.evidence[:0]
	return err
}

func (b *Batcher) flushRejected() error {
	if len(b.rejected) == 0 {
		return nil
	}
	err := b.flushRej(b.rejected)
	b.rejected = b.rejected[:0]
	return err
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
