package driver

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"slices"

	"github.com/golang/snappy"

	"reconcile"
)

// Details holds, for one source's ingest, what people read of each record
// and no matching does: its description, metadata and raw row, in
// temporary files, each with its position in the source (seq) and what
// names it (its transaction and effect key). The ledger writes them to
// evidence_detail: every record's when a source is ingested on its own,
// and for a source its run ingests and matches at once (IngestParams.Keep)
// only those of the records that the run's findings name (Named), when
// the run records them: three records in a hundred on a usual night,
// where these columns were two thirds of what a night wrote. The blobs
// are compressed (snappy) in blocks of about 4 KB: a night's report rows
// take a third to a seventh of their size, which at 10M effects keeps
// gigabytes of temporary files out of the page cache the ledger needs, and
// a block none of whose records is picked is skipped, not decoded (about
// two in three, computed for a dozen records a block and three in a
// hundred picked).
type Details struct {
	index, blobs *os.File // per record: its seq, what names it (nameHash) and the length of its blob; the blocks of blobs
	iw, bw       *bufio.Writer
	block        []byte  // the blobs of the block being filled
	counts       []int32 // how many records each block written holds
	n            int     // how many records the block being filled holds
	buf, md, z   []byte
	err          error // the first write that failed
}

// blockSize is about how many bytes of blobs a block holds.
const blockSize = 4 << 10

// newDetails starts an empty Details in two temporary files.
func newDetails() (*Details, error) {
	index, err := tempFile("details")
	if err != nil {
		return nil, err
	}
	blobs, err := tempFile("details")
	if err != nil {
		index.Close()
		return nil, err
	}
	return &Details{index: index, blobs: blobs, iw: bufio.NewWriterSize(index, 64<<10), bw: bufio.NewWriterSize(blobs, 64<<10)}, nil
}

// Add writes the details of the record at seq.
func (d *Details) Add(seq int, e *reconcile.Evidence) error {
	if d.err != nil {
		return d.err
	}
	d.md = d.md[:0]
	if len(e.Metadata) > 0 { // as pairs, in the map's order: JSON only for the records picked
		d.md = binary.AppendUvarint(d.md, uint64(len(e.Metadata)))
		for k, v := range e.Metadata {
			d.md = appendBlob(appendBlob(d.md, k), v)
		}
	}
	at := len(d.block)
	d.block = appendBlob(appendBlob(d.block, e.Description), e.Raw)
	d.block = appendBlob(d.block, d.md)
	d.n++
	b := binary.AppendUvarint(d.buf[:0], uint64(seq))
	b = binary.LittleEndian.AppendUint64(b, nameHash(e.TxID))
	b = binary.LittleEndian.AppendUint64(b, nameHash(e.EffectKey))
	d.buf = binary.AppendUvarint(b, uint64(len(d.block)-at))
	if _, d.err = d.iw.Write(d.buf); d.err == nil && len(d.block) >= blockSize {
		d.err = d.flushBlock()
	}
	if d.err != nil {
		d.err = fmt.Errorf("details of the records: %w", d.err)
	}
	return d.err
}

// flushBlock writes the block being filled, compressed.
func (d *Details) flushBlock() error {
	if d.n == 0 {
		return nil
	}
	d.z = snappy.Encode(d.z[:cap(d.z)], d.block)
	var n [binary.MaxVarintLen64]byte
	if _, err := d.bw.Write(n[:binary.PutUvarint(n[:], uint64(len(d.z)))]); err != nil {
		return err
	}
	if _, err := d.bw.Write(d.z); err != nil {
		return err
	}
	d.counts = append(d.counts, int32(d.n))
	d.block, d.n = d.block[:0], 0
	return nil
}

// Detail is one record's details, as Each reads them: views of buffers
// that the next record reuses.
type Detail struct {
	Seq         int
	Description []byte
	Metadata    []byte // JSON; nil when the record has none
	Raw         []byte
}

// Each calls fn with the details of every record, in order, that pick
// (nil: every record) takes by the nameHash of its transaction and of its
// effect key.
func (d *Details) Each(pick func(txID, effectKey uint64) bool, fn func(*Detail) error) error {
	if d.err == nil {
		if d.err = d.flushBlock(); d.err == nil {
			if d.err = d.iw.Flush(); d.err == nil {
				d.err = d.bw.Flush()
			}
		}
	}
	if d.err != nil {
		return d.err
	}
	cut := errors.New("details of the records: a row cut short")
	reader := func(f *os.File) (*bufio.Reader, error) {
		end, err := f.Seek(0, io.SeekCurrent)
		return bufio.NewReaderSize(io.NewSectionReader(f, 0, end), 1<<16), err
	}
	ir, err := reader(d.index)
	if err != nil {
		return err
	}
	br, err := reader(d.blobs)
	if err != nil {
		return err
	}
	type entry struct {
		seq, size uint64
		picked    bool
	}
	var (
		names          [16]byte // the hashes of the transaction and the effect key
		entries        []entry
		z, block, rest []byte
		md             []byte
	)
	for _, count := range d.counts {
		entries = entries[:0]
		take := false // any record of the block
		for range count {
			var x entry
			var err error
			if x.seq, err = binary.ReadUvarint(ir); err == nil {
				if _, err = io.ReadFull(ir, names[:]); err == nil {
					x.size, err = binary.ReadUvarint(ir)
				}
			}
			if err != nil {
				return errors.Join(cut, err)
			}
			x.picked = pick == nil || pick(binary.LittleEndian.Uint64(names[:8]), binary.LittleEndian.Uint64(names[8:]))
			take = take || x.picked
			entries = append(entries, x)
		}
		size, err := binary.ReadUvarint(br)
		if err == nil && !take {
			_, err = br.Discard(int(size))
		} else if err == nil {
			z = slices.Grow(z[:0], int(size))[:size]
			if _, err = io.ReadFull(br, z); err == nil {
				block, err = snappy.Decode(block[:cap(block)], z)
				rest = block
			}
		}
		if err != nil {
			return errors.Join(cut, err)
		}
		if !take {
			continue
		}
		for _, x := range entries {
			if uint64(len(rest)) < x.size {
				return cut
			}
			blob := rest[:x.size]
			rest = rest[x.size:]
			if !x.picked {
				continue
			}
			var parts [3][]byte // description, raw row, metadata
			for i := range parts {
				l, n := binary.Uvarint(blob)
				if n <= 0 || uint64(len(blob)-n) < l {
					return cut
				}
				parts[i], blob = blob[n:n+int(l)], blob[n+int(l):]
			}
			det := Detail{Seq: int(x.seq), Description: parts[0], Raw: parts[1]}
			if len(parts[2]) > 0 {
				if md, err = metadataJSON(md[:0], parts[2]); err != nil {
					return errors.Join(cut, err)
				}
				det.Metadata = md
			}
			if err := fn(&det); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendBlob appends s with its length before it.
func appendBlob[S string | []byte](b []byte, s S) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// metadataJSON appends to b, as AppendMetadata does, the metadata that Add
// kept as pairs.
func metadataJSON(b, pairs []byte) ([]byte, error) {
	n, k := binary.Uvarint(pairs)
	if k <= 0 || n > uint64(len(pairs)) {
		return b, errors.New("metadata cut short")
	}
	pairs = pairs[k:]
	m := make(map[string]string, n)
	for range n {
		var kv [2]string
		for i := range kv {
			l, k := binary.Uvarint(pairs)
			if k <= 0 || uint64(len(pairs)-k) < l {
				return b, errors.New("metadata cut short")
			}
			kv[i], pairs = string(pairs[k:k+int(l)]), pairs[k+int(l):]
		}
		m[kv[0]] = kv[1]
	}
	return AppendMetadata(b, m), nil
}

// Close drops the files.
func (d *Details) Close() {
	d.index.Close()
	d.blobs.Close()
}

// nameSeed seeds nameHash: Details live and are read in one process.
var nameSeed = maphash.MakeSeed()

// nameHash is what Details keep of a transaction's id or an effect key to
// pick a record by: 0 for none. Two names with one hash only keep the
// details of a record more.
func nameHash(s string) uint64 {
	if s == "" {
		return 0
	}
	return maphash.String(nameSeed, s) | 1
}

// Named takes the records that the findings other than confirmed name: by
// their transaction, among a finding's transactions or its related ones,
// or by the finding's effect. Their details are what the on-call view
// shows; a confirmed effect's records keep their fields and provenance.
func Named(ds []reconcile.Discrepancy) func(txID, effectKey uint64) bool {
	ids, keys := map[uint64]bool{}, map[uint64]bool{}
	for i := range ds {
		d := &ds[i]
		if d.Class == reconcile.ClassConfirmed {
			continue
		}
		keys[nameHash(d.EffectKey)] = true
		for _, ts := range [][]reconcile.Transaction{d.Transactions, d.Related} {
			for _, t := range ts {
				ids[nameHash(t.ID)] = true
			}
		}
	}
	delete(ids, 0)
	delete(keys, 0)
	return func(txID, effectKey uint64) bool { return ids[txID] || keys[effectKey] }
}
