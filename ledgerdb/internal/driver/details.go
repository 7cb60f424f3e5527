package driver

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"reconcile"
)

// Details holds, for one source's ingest, what people read of each record
// and no matching does: its description, metadata and raw row, in a
// temporary file, each with its position in the source (seq) and what
// names it (its transaction and effect key). The ledger writes them to
// evidence_detail: every record's when a source is ingested on its own,
// and for a source its run ingests and matches at once (IngestParams.Keep)
// only those of the records that the run's findings name (Named), when
// the run records them: three records in a hundred on a usual night,
// where these columns were two thirds of what a night wrote.
type Details struct {
	f       *os.File
	w       *bufio.Writer
	buf, md []byte
	err     error // the first write that failed
}

// newDetails starts an empty Details in a temporary file.
func newDetails() (*Details, error) {
	f, err := tempFile()
	if err != nil {
		return nil, err
	}
	return &Details{f: f, w: bufio.NewWriterSize(f, 1<<18)}, nil
}

// Add writes the details of the record at seq.
func (d *Details) Add(seq int, e *reconcile.Evidence) error {
	if d.err != nil {
		return d.err
	}
	d.md = d.md[:0]
	if len(e.Metadata) > 0 {
		d.md = AppendMetadata(d.md, e.Metadata)
	}
	b := binary.AppendUvarint(d.buf[:0], uint64(seq))
	for _, s := range [...]string{e.TxID, e.EffectKey, e.Description, e.Raw} {
		b = append(binary.AppendUvarint(b, uint64(len(s))), s...)
	}
	b = append(binary.AppendUvarint(b, uint64(len(d.md))), d.md...)
	d.buf = b
	var n [binary.MaxVarintLen64]byte
	if _, d.err = d.w.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))]); d.err == nil {
		_, d.err = d.w.Write(b)
	}
	if d.err != nil {
		d.err = fmt.Errorf("details of the records: %w", d.err)
	}
	return d.err
}

// Detail is one record's details, as Each reads them: views of a buffer
// that the next record reuses.
type Detail struct {
	Seq         int
	Description []byte
	Metadata    []byte // JSON; nil when the record has none
	Raw         []byte
}

// Each calls fn with the details of every record, in order, that pick
// (nil: every record) takes by its transaction and effect key.
func (d *Details) Each(pick func(txID, effectKey []byte) bool, fn func(*Detail) error) error {
	if d.err == nil {
		d.err = d.w.Flush()
	}
	if d.err != nil {
		return d.err
	}
	end, err := d.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(io.NewSectionReader(d.f, 0, end), 1<<18)
	var row []byte
	for {
		l, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		row = slices.Grow(row[:0], int(l))[:l]
		if _, err := io.ReadFull(r, row); err != nil {
			return err
		}
		seq, n := binary.Uvarint(row)
		b := row[n:]
		var parts [5][]byte // transaction, effect key, description, raw row, metadata
		for i := range parts {
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return errors.New("details of the records: a row cut short")
			}
			parts[i], b = b[n:n+int(l)], b[n+int(l):]
		}
		if pick != nil && !pick(parts[0], parts[1]) {
			continue
		}
		x := Detail{Seq: int(seq), Description: parts[2], Raw: parts[3], Metadata: parts[4]}
		if len(x.Metadata) == 0 {
			x.Metadata = nil
		}
		if err := fn(&x); err != nil {
			return err
		}
	}
}

// Close drops the file.
func (d *Details) Close() { d.f.Close() }

// Named takes the records that the findings other than confirmed name: by
// their transaction, among a finding's transactions or its related ones,
// or by the finding's effect. Their details are what the on-call view
// shows; a confirmed effect's records keep their fields and provenance.
func Named(ds []reconcile.Discrepancy) func(txID, effectKey []byte) bool {
	ids, keys := map[string]bool{}, map[string]bool{}
	for i := range ds {
		d := &ds[i]
		if d.Class == reconcile.ClassConfirmed {
			continue
		}
		if d.EffectKey != "" {
			keys[d.EffectKey] = true
		}
		for _, ts := range [][]reconcile.Transaction{d.Transactions, d.Related} {
			for _, t := range ts {
				if t.ID != "" {
					ids[t.ID] = true
				}
			}
		}
	}
	return func(txID, effectKey []byte) bool {
		return len(txID) > 0 && ids[string(txID)] || len(effectKey) > 0 && keys[string(effectKey)]
	}
}
