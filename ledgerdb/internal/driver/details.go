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
	index, blobs *os.File // per record: its seq, transaction, effect key and the length of its blob; the blobs
	iw, bw       *bufio.Writer
	buf, md      []byte
	err          error // the first write that failed
}

// newDetails starts an empty Details in two temporary files.
func newDetails() (*Details, error) {
	index, err := tempFile()
	if err != nil {
		return nil, err
	}
	blobs, err := tempFile()
	if err != nil {
		index.Close()
		return nil, err
	}
	return &Details{index: index, blobs: blobs, iw: bufio.NewWriterSize(index, 64<<10), bw: bufio.NewWriterSize(blobs, 1<<18)}, nil
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
	b := d.buf[:0]
	for _, s := range [...]string{e.Description, e.Raw} {
		b = append(binary.AppendUvarint(b, uint64(len(s))), s...)
	}
	b = append(binary.AppendUvarint(b, uint64(len(d.md))), d.md...)
	at := len(b)
	b = binary.AppendUvarint(b, uint64(seq))
	for _, s := range [...]string{e.TxID, e.EffectKey} {
		b = append(binary.AppendUvarint(b, uint64(len(s))), s...)
	}
	b = binary.AppendUvarint(b, uint64(at))
	d.buf = b
	if _, d.err = d.bw.Write(b[:at]); d.err == nil {
		_, d.err = d.iw.Write(b[at:])
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
// (nil: every record) takes by its transaction and effect key. It reads
// the index whole and, of the blobs, only those it takes.
func (d *Details) Each(pick func(txID, effectKey []byte) bool, fn func(*Detail) error) error {
	if d.err == nil {
		if d.err = d.iw.Flush(); d.err == nil {
			d.err = d.bw.Flush()
		}
	}
	if d.err != nil {
		return d.err
	}
	end, err := d.index.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(io.NewSectionReader(d.index, 0, end), 1<<16)
	var (
		names [2][]byte // transaction, effect key
		blob  []byte
		off   int64
	)
	cut := errors.New("details of the records: a row cut short")
	for {
		seq, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return nil
		}
		for i := range names {
			var l uint64
			if l, err = binary.ReadUvarint(r); err == nil {
				names[i] = slices.Grow(names[i][:0], int(l))[:l]
				_, err = io.ReadFull(r, names[i])
			}
		}
		var size uint64
		if err == nil {
			size, err = binary.ReadUvarint(r)
		}
		if err != nil {
			return errors.Join(cut, err)
		}
		at := off
		off += int64(size)
		if pick != nil && !pick(names[0], names[1]) {
			continue
		}
		blob = slices.Grow(blob[:0], int(size))[:size]
		if _, err := d.blobs.ReadAt(blob, at); err != nil {
			return errors.Join(cut, err)
		}
		var parts [3][]byte // description, raw row, metadata
		for i, b := 0, blob; i < len(parts); i++ {
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return cut
			}
			parts[i], b = b[n:n+int(l)], b[n+int(l):]
		}
		x := Detail{Seq: int(seq), Description: parts[0], Raw: parts[1], Metadata: parts[2]}
		if len(x.Metadata) == 0 {
			x.Metadata = nil
		}
		if err := fn(&x); err != nil {
			return err
		}
	}
}

// Close drops the files.
func (d *Details) Close() {
	d.index.Close()
	d.blobs.Close()
}

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
