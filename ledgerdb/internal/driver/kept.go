package driver

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/matcher"
)

// Kept holds, for each source a store ingested with IngestParams.Keep,
// what a run's matching reads of its records, as the ledger stored them,
// in a temporary file: the run that ingested them takes them (Take) and
// need not read them back. A store holds one; several ingests may add to
// it at once.
type Kept struct {
	mu      sync.Mutex
	sources map[int64]*Keeping
	details map[int64]*Details // of the kept sources, until their run records its findings
}

// Keeping is the writer of one source's ingest: it passes every row on
// and, when the ingest asked for it, writes each record's part to its
// file as a Spill lays out a row (spillKept, and what strtab.appendRecord
// writes, numbered by its own tab), and the row's length to another: a
// run's Spill takes the rows where they lie (AddKept).
type Keeping struct {
	ledgerdb.SourceWriter
	precision time.Duration
	f, lf     *os.File // nil when nothing is kept
	w, lw     *bufio.Writer
	details   *Details
	tab       strtab
	buf       []byte
	seq       int // the rows given so far, records and rejected rows: the ledger numbers a record so
	id        int64
	err       error // the first write that failed
	// Given by the run that takes the source: what its records say of it.
	uri     string
	webhook bool
}

// Keep begins an ingest's keeping: its records' Details, and when p.Keep
// its records with their times cut to the precision the ledger stores them
// at, as Cover does. Done ends it.
func (k *Kept) Keep(p *ledgerdb.IngestParams, precision time.Duration) (*Keeping, error) {
	d, err := newDetails()
	if err != nil {
		return nil, err
	}
	kw := &Keeping{precision: precision, details: d}
	if p.Keep {
		if kw.f, err = tempFile("kept"); err == nil {
			if kw.lf, err = tempFile("kept"); err != nil {
				kw.f.Close()
			}
		}
		if err != nil {
			d.Close()
			return nil, err
		}
		kw.w, kw.lw = bufio.NewWriterSize(kw.f, 1<<18), bufio.NewWriterSize(kw.lf, 1<<16)
	}
	return kw, nil
}

// close lets the kept rows go.
func (kw *Keeping) close() {
	kw.f.Close()
	kw.lf.Close()
}

// Details are the details of the ingest's records, for the driver to add
// to as it numbers them. Unless the ingest keeps its records, the driver
// writes them all to the ledger in the ingest's transaction; else Done
// holds them for FindingRecord (Held).
func (kw *Keeping) Details() *Details { return kw.details }

// Over returns the writer of the ingest: w, keeping what it is given
// when the ingest asked for it.
func (kw *Keeping) Over(w ledgerdb.SourceWriter) ledgerdb.SourceWriter {
	if kw.f == nil {
		return w
	}
	kw.SourceWriter = w
	return kw
}

// Evidence implements ledgerdb.SourceWriter.
// A record that cannot be kept (the temporary folder full) fails nothing:
// the source is then not kept, and its run reads it back.
func (kw *Keeping) Evidence(e *reconcile.Evidence) error {
	kw.seq++
	if kw.err == nil {
		r := *e
		r.Time = e.Time.UTC().Truncate(kw.precision)
		r.Seq = kw.seq
		b := kw.tab.appendKept(append(kw.buf[:0], spillKept), &r)
		kw.buf = b
		var n [binary.MaxVarintLen64]byte
		if _, kw.err = kw.w.Write(b); kw.err == nil {
			_, kw.err = kw.lw.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
		}
	}
	return kw.SourceWriter.Evidence(e)
}

// Reject implements ledgerdb.SourceWriter: a rejected row takes the
// next number too.
func (kw *Keeping) Reject(r *reconcile.Rejected) error {
	kw.seq++
	return kw.SourceWriter.Reject(r)
}

// Done ends the ingest: what was kept goes to k when the ingest wrote the
// source (err nil, res not a duplicate), else it is dropped.
func (k *Kept) Done(kw *Keeping, res *ledgerdb.IngestResult, err error) {
	if kw.f != nil && err == nil && !res.Duplicate { // f is the ingest's keeping: p.Keep
		k.mu.Lock()
		if k.details == nil {
			k.details = map[int64]*Details{}
		}
		k.details[res.SourceID] = kw.details
		k.mu.Unlock()
	} else {
		kw.details.Close()
	}
	if kw.f == nil {
		return
	}
	if err == nil && !res.Duplicate && kw.err == nil {
		if kw.err = kw.w.Flush(); kw.err == nil {
			kw.err = kw.lw.Flush()
		}
	}
	if err != nil || res.Duplicate || kw.err != nil {
		kw.close()
		return
	}
	kw.id = res.SourceID
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.sources == nil {
		k.sources = map[int64]*Keeping{}
	}
	k.sources[kw.id] = kw
}

// Take returns the sources among ids that k keeps, and the ids it does
// not keep, in the order of ids, and drops everything else k kept: a
// source is the run's own only for the run that ingested it (a run that
// ended before its matching kept some), and one that is not kept is read
// back.
func (k *Kept) Take(ids []int64) (taken []*Keeping, rest []int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	rest = []int64{}
	for _, id := range ids {
		if kw, ok := k.sources[id]; ok {
			taken = append(taken, kw)
			delete(k.sources, id)
		} else {
			rest = append(rest, id)
		}
	}
	k.drop()
	return taken, rest
}

// HeldWrite bounds how long a store's Close writes the details it still
// holds: a ledger that went away must not keep the process from ending.
const HeldWrite = 10 * time.Minute

// Held returns the details k holds, by source.
func (k *Kept) Held() map[int64]*Details {
	k.mu.Lock()
	defer k.mu.Unlock()
	held := make(map[int64]*Details, len(k.details))
	for id, d := range k.details {
		held[id] = d
	}
	return held
}

// Written drops the details of held, which the ledger now holds as it
// should.
func (k *Kept) Written(held map[int64]*Details) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for id, d := range held {
		if k.details[id] == d {
			d.Close()
			delete(k.details, id)
		}
	}
}

// Close drops everything kept.
func (k *Kept) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.drop()
	for id, d := range k.details {
		d.Close()
		delete(k.details, id)
	}
}

func (k *Kept) drop() {
	for id, kw := range k.sources {
		kw.close()
		delete(k.sources, id)
	}
}

// AddKept adds to s the records of the sources taken, of the kinds that
// link, as the run's own, each with the URI and webhook flag that origin
// gives its source, and returns how many it added. The rows stay in the
// sources' files, which s closes with its own.
func (s *Spill) AddKept(taken []*Keeping, linkKinds []string, origin func(source int64) (uri string, webhook bool, ok bool)) (int, error) {
	links := map[reconcile.Kind]bool{}
	for _, k := range linkKinds {
		links[reconcile.Kind(k)] = true
	}
	var n int
	var err error
	for _, kw := range taken {
		if err == nil {
			var added int
			added, err = s.addKept(kw, links, origin)
			n += added
		}
		if !slices.Contains(s.kept, kw) {
			kw.close()
		}
	}
	return n, err
}

// addKept adds the rows of kw, where they lie; past the kinds of row a
// Spill can tell apart (maxKept sources), it writes them again, as Record
// does.
func (s *Spill) addKept(kw *Keeping, links map[reconcile.Kind]bool, origin func(int64) (string, bool, bool)) (int, error) {
	var ok bool
	kw.uri, kw.webhook, ok = origin(kw.id)
	if !ok {
		return 0, fmt.Errorf("kept records of source %d, which the manifest does not hold", kw.id)
	}
	end, err := kw.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	lend, err := kw.lf.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	inPlace := len(s.kept) < s.maxKept
	if inPlace {
		s.kept = append(s.kept, kw)
		s.runs = append(s.runs, rowRun{f: kw.f, end: end, kind: spillKept + byte(len(s.kept)-1)})
	}
	r := bufio.NewReaderSize(io.NewSectionReader(kw.f, 0, end), 1<<18)
	lr := bufio.NewReaderSize(io.NewSectionReader(kw.lf, 0, lend), 1<<16)
	var n int
	for {
		l, err := binary.ReadUvarint(lr)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		kw.buf = slices.Grow(kw.buf[:0], int(l))[:l]
		if _, err := io.ReadFull(r, kw.buf); err != nil {
			return n, err
		}
		// Its strings are views of kw.buf, valid until the next row is
		// read: Record copies them.
		var e reconcile.Evidence
		d := decoder{b: kw.buf, table: kw.tab.strs, views: true}
		if d.byte() != spillKept {
			d.err = errors.New("not a kept row")
		}
		d.kept(&e)
		if d.err == nil && len(d.b) > 0 {
			d.err = errors.New("row longer than its record")
		}
		if d.err != nil {
			return n, fmt.Errorf("kept records of source %d: %w", kw.id, d.err)
		}
		e.URI, e.Webhook, e.SourceID = kw.uri, kw.webhook, kw.id
		switch {
		case !links[e.Kind]:
			if e.EffectKey != "" || e.ParentEffectKey != "" || e.ParentTxID != "" {
				s.Unlinked.Add(&e)
			}
			if inPlace {
				err = s.addLength(len(kw.buf), true)
			}
		case inPlace:
			s.router.AddRecord()
			s.values = matcher.RecordValues(s.values[:0], &e)
			s.Records++
			err = s.addLength(len(kw.buf), false)
			n++
		default:
			err = s.Record(&e, true)
			n++
		}
		if err != nil {
			return n, err
		}
	}
}
