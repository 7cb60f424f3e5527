package driver

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"time"
	"unsafe"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/matcher"
)

// Spill cuts a run into partitions in the run's process: a driver hands
// it every effect in scope and every record as it fetches them, the Spill
// keeps them, and the values they are named by, in temporary files; Cut
// routes them (matcher.Router) and lays the rows out partition by
// partition, so that each is read back in one piece. Memory holds eight
// bytes per row and the values of one share (joinShare) at a time,
// never the rows.
type Spill struct {
	f       *os.File
	w       *bufio.Writer
	written int64 // the bytes of rows in f
	// Where the rows lie, in the order added: in f, or in the file of a
	// kept source (AddKept), whose rows take the kind spillKept+i in the
	// layout by partition, i its place in kept.
	runs    []rowRun
	kept    []*Keeping
	maxKept int // how many sources AddKept takes where they lie: maxKept
	skipped int // rows of kept sources that are none of the Spill's (AddKept)
	router  *matcher.Router
	// The values each row is named by (matcher.RecordValues) wait in a
	// file of their own, in the order added, until Cut joins them, a share
	// at a time; each row's length in another, for the passes that lay
	// the rows out.
	vf, lf  *os.File
	vw, lw  *bufio.Writer
	nvalues int
	values  []uint64
	share   int // how many values to join at a time: joinShare
	hold    int // how many bytes of rows Cut moves at a time: cutHold
	buf     []byte
	vbuf    []byte
	off     []int64 // after Cut: where each partition starts, and the end
	count   int
	rows    [][3]int // after Cut: each partition's rows of each kind, to size its slices
	shared  strtab
	// Effects and Records count what was added.
	Effects, Records int
	// Unlinked are the records of kept sources (AddKept) that name an
	// effect or a parent by key, or a parent by transaction, but are of a
	// kind that does not link: no partition holds them.
	Unlinked NamedRecords
}

// NamedRecords is a list of records held in one buffer of bytes (and the
// few strings that repeat apart), as the run's loose records are kept
// until it sorts its sources. Held as structs, they each pinned the row
// their strings were read from: at 1M, with the open keys, 13.5 MB of the
// 34 MB live after the partitions, which the collector went through at
// every cycle; it does not look inside bytes.
type NamedRecords struct {
	tab strtab
	b   []byte
	n   int
}

// Add appends e: what a partition holds of it, its URI, and where the
// ledger holds it with its raw kind and fee (SourceID, Seq), if known.
func (l *NamedRecords) Add(e *reconcile.Evidence) {
	l.b = binary.AppendVarint(l.tab.append(l.b, e.URI), e.SourceID)
	l.b = l.tab.appendKept(l.b, e)
	l.n++
}

// Len is how many records were added.
func (l *NamedRecords) Len() int { return l.n }

// All yields the records in the order added. Their strings are views of
// the list's buffer, and the record is reused: valid until the next one.
func (l *NamedRecords) All() iter.Seq[*reconcile.Evidence] {
	return func(yield func(*reconcile.Evidence) bool) {
		d := decoder{b: l.b, table: l.tab.strs, views: true}
		var e reconcile.Evidence
		for len(d.b) > 0 {
			e.URI, e.SourceID = d.shared(), d.varint()
			d.kept(&e)
			if d.err != nil {
				panic("named records do not decode") // what Add wrote: a bug
			}
			if !yield(&e) {
				return
			}
		}
	}
}

// rowRun is a stretch of rows that lie one after the other in f, from off
// to end, and the kind they take in the layout by partition (0: as
// written).
type rowRun struct {
	f        *os.File
	off, end int64
	kind     byte
}

// The kinds of row a Spill holds.
const (
	spillEffect  byte = iota
	spillMine         // a record of the run's own evidence
	spillEarlier      // a record of earlier evidence
	spillKept         // a record of the first kept source; spillKept+i of the i-th
)

// maxKept is how many kept sources a Spill takes where they lie: one
// kind of row each.
const maxKept = 256 - int(spillKept)

// NewSpill returns an empty Spill, its file in the system's temporary
// folder.
func NewSpill() (*Spill, error) {
	f, err := tempFile("partitions")
	if err != nil {
		return nil, err
	}
	vf, err := tempFile("partitions")
	if err != nil {
		f.Close()
		return nil, err
	}
	lf, err := tempFile("partitions")
	if err != nil {
		f.Close()
		vf.Close()
		return nil, err
	}
	return &Spill{f: f, w: bufio.NewWriterSize(f, 1<<20), vf: vf, vw: bufio.NewWriterSize(vf, 1<<20), lf: lf, lw: bufio.NewWriterSize(lf, 1<<16),
		router: matcher.NewRouter(0), share: joinShare, hold: cutHold, maxKept: maxKept}, nil
}

// tempFile is an unlinked temporary file for what (its name, and what an
// error says).
func tempFile(what string) (*os.File, error) {
	f, err := os.CreateTemp("", "reconcile-"+what+"-*")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	os.Remove(f.Name()) // the open file lives on, and goes with the process however it ends
	return f, nil
}

// Close removes what the Spill holds.
func (s *Spill) Close() error {
	s.vf.Close()
	s.lf.Close()
	for _, kw := range s.kept {
		kw.close()
	}
	return s.f.Close()
}

// joinShare is about how many values Cut joins at a time: the Router
// holds eight bytes for each.
const joinShare = 16 << 20

// cutHold is about how many bytes of rows Cut holds at a time, twice.
const cutHold = 8 << 20

// add writes a row, its length, and its values for Cut.
func (s *Spill) add(row []byte) error {
	s.buf = row
	if _, err := s.w.Write(row); err != nil {
		return err
	}
	if l := len(s.runs) - 1; l >= 0 && s.runs[l].f == s.f {
		s.runs[l].end += int64(len(row))
	} else {
		s.runs = append(s.runs, rowRun{f: s.f, off: s.written, end: s.written + int64(len(row))})
	}
	s.written += int64(len(row))
	return s.addLength(len(row), false)
}

// addLength writes the length of a row, and whether the Spill skips it
// (a kept row of a kind that links to nothing); and, unless skipped, its
// values for Cut: their count, then each.
func (s *Spill) addLength(length int, skip bool) error {
	b := binary.AppendUvarint(s.vbuf[:0], uint64(length)<<1|uint64(bit(skip)))
	if _, err := s.lw.Write(b); err != nil {
		return err
	}
	if skip {
		s.skipped++
		s.vbuf = b
		return nil
	}
	b = binary.AppendUvarint(b[:0], uint64(len(s.values)))
	for _, v := range s.values {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	s.nvalues += len(s.values)
	s.vbuf = b
	_, err := s.vw.Write(b)
	return err
}

// eachValues calls f with each row's number and values, in the order
// added.
func (s *Spill) eachValues(f func(n uint32, values []uint64)) error {
	end, err := s.vf.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(io.NewSectionReader(s.vf, 0, end), 1<<20)
	var words []byte
	for n := range uint32(s.Effects + s.Records) {
		k, err := binary.ReadUvarint(r)
		if err != nil {
			return err
		}
		words = slices.Grow(words[:0], 8*int(k))[:8*k]
		if _, err := io.ReadFull(r, words); err != nil {
			return err
		}
		s.values = s.values[:0]
		for i := 0; i < len(words); i += 8 {
			s.values = append(s.values, binary.LittleEndian.Uint64(words[i:]))
		}
		f(n, s.values)
	}
	return nil
}

// eachLength calls f with each row's number and length, in the order
// added, and with the length of each row skipped (AddKept), which has no
// number.
func (s *Spill) eachLength(f func(n uint32, length int, skipped bool)) error {
	end, err := s.lf.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(io.NewSectionReader(s.lf, 0, end), 1<<20)
	var n uint32
	for range s.Effects + s.Records + s.skipped {
		v, err := binary.ReadUvarint(r)
		if err != nil {
			return err
		}
		f(n, int(v>>1), v&1 == 1)
		if v&1 == 0 {
			n++
		}
	}
	return nil
}

// Effect adds an effect in scope.
func (s *Spill) Effect(e *ledgerdb.ScopedEffect) error {
	s.router.AddEffect(e.Key)
	s.values = matcher.EffectValues(s.values[:0], e.Provider, e.Key, e.ExternalID)
	s.Effects++
	b := append(s.buf[:0], spillEffect)
	for _, v := range [...]string{e.Provider, e.Step, string(e.Status), string(e.State)} {
		b = s.shared.append(b, v)
	}
	for _, v := range [...]string{e.Key, e.ExternalID, string(e.Request)} {
		b = appendString(b, v)
	}
	b = appendTime(appendTime(b, e.CreatedAt), e.Since)
	b = append(b, bit(e.Final))
	return s.add(b)
}

// Record adds a record: of the run's own evidence when mine, else earlier
// evidence. Only what a partition holds of it is kept (Partition).
func (s *Spill) Record(e *reconcile.Evidence, mine bool) error {
	s.router.AddRecord()
	s.values = matcher.RecordValues(s.values[:0], e)
	s.Records++
	b := append(s.buf[:0], spillEarlier)
	if mine {
		b[0] = spillMine
	}
	return s.add(s.shared.appendRecord(s.shared.append(b, e.URI), e))
}

// strtab numbers the strings that repeat across rows (a provider, a kind,
// a status, a URI): a row holds the number.
type strtab struct {
	strs   []string
	number map[string]uint64
}

func (t *strtab) append(b []byte, v string) []byte {
	n, ok := t.number[v]
	if !ok {
		if t.number == nil {
			t.number = map[string]uint64{}
		}
		n = uint64(len(t.strs))
		t.number[v] = n
		t.strs = append(t.strs, v)
	}
	return binary.AppendUvarint(b, n)
}

// appendRecord writes what a partition holds of a record but its URI;
// decoder.record reads it back.
func (t *strtab) appendRecord(b []byte, e *reconcile.Evidence) []byte {
	for _, v := range [...]string{e.Provider, string(e.Kind), e.Amount.Currency} {
		b = t.append(b, v)
	}
	for _, v := range [...]string{e.TxID, e.EffectKey, e.ParentEffectKey, e.PaymentIntent, e.ParentTxID} {
		b = appendString(b, v)
	}
	b = binary.AppendVarint(b, int64(e.Line))
	b = binary.AppendVarint(b, e.Amount.Minor)
	b = appendTime(b, e.Time)
	return append(b, bit(e.Pending)|bit(e.Failed)<<1|bit(e.Webhook)<<2)
}

// appendKept writes what a partition holds of a record but its URI, and
// its number in its source, raw kind and fee: what the ledger holds of it
// but its source (a kept row); decoder.kept reads it back.
func (t *strtab) appendKept(b []byte, e *reconcile.Evidence) []byte {
	b = binary.AppendVarint(t.appendRecord(b, e), int64(e.Seq))
	return binary.AppendVarint(t.append(b, e.RawKind), e.Fee)
}

// Cut routes what was added into partitions of about size effects
// (matcher.Router.Partitions), lays the file out by partition, and says
// in sum how many effects, records and partitions there are, and the
// bytes they take.
func (s *Spill) Cut(size int, sum *ledgerdb.MatchSummary) error {
	count, err := s.cut(size)
	sum.Effects, sum.Records, sum.Partitions = s.Effects, s.Records, count
	if len(s.off) > 0 {
		sum.Spilled = s.off[count] - s.off[0]
	}
	return err
}

func (s *Spill) cut(size int) (int, error) {
	for _, w := range []*bufio.Writer{s.w, s.lw} {
		if err := w.Flush(); err != nil {
			return 0, err
		}
	}
	if err := s.join(); err != nil {
		return 0, err
	}
	part, count := s.router.Partitions(size)
	s.router = nil
	s.off = make([]int64, count+1)
	if err := s.eachLength(func(n uint32, length int, skipped bool) {
		if !skipped {
			s.off[part[n]+1] += int64(length)
		}
	}); err != nil {
		return 0, err
	}
	for i := range count {
		s.off[i+1] += s.off[i]
	}
	// Rows are copied from where they lie, in the order added, to where
	// their partition lies in f (after its rows), some megabytes at a
	// time: read in the order added, then grouped by partition in a
	// second buffer, so that each partition's share is one write. Both
	// buffers are reused.
	base := s.written
	at := make([]int64, count)
	copy(at, s.off[:count])
	s.rows = make([][3]int, count)
	var (
		held, grouped []byte
		parts         []uint32             // the partition of each row held
		lens          []int                // and its length
		span          = make([]int, count) // the bytes of each partition's rows held
		next          = make([]int, count)
	)
	flush := func() error {
		clear(span)
		for i, p := range parts {
			span[p] += lens[i]
		}
		for p := range next {
			next[p] = 0
			if p > 0 {
				next[p] = next[p-1] + span[p-1]
			}
		}
		grouped = slices.Grow(grouped[:0], len(held))[:len(held)]
		off := 0
		for i, p := range parts {
			next[p] += copy(grouped[next[p]:], held[off:off+lens[i]])
			off += lens[i]
		}
		for p, n := range span { // next[p] is now the end of p's rows
			if n > 0 {
				if _, err := s.f.WriteAt(grouped[next[p]-n:next[p]], base+at[p]); err != nil {
					return err
				}
				at[p] += int64(n)
			}
		}
		held, parts, lens = held[:0], parts[:0], lens[:0]
		return nil
	}
	r := bufio.NewReaderSize(nil, 1<<20)
	var (
		run    = -1
		left   int64 // the bytes of run not read
		failed error
	)
	if err := s.eachLength(func(n uint32, length int, skipped bool) {
		for left == 0 && run+1 < len(s.runs) {
			run++
			at := s.runs[run]
			r.Reset(io.NewSectionReader(at.f, at.off, at.end-at.off))
			left = at.end - at.off
		}
		left -= int64(length)
		if skipped {
			if _, err := r.Discard(length); err != nil && failed == nil {
				failed = err
			}
			return
		}
		p, l := part[n], len(held)
		held = slices.Grow(held, length)[:l+length]
		if _, err := io.ReadFull(r, held[l:]); err != nil && failed == nil {
			failed = err
		}
		kind := held[l]
		if k := s.runs[run].kind; k != 0 { // a kept source's: the run's own
			held[l], kind = k, spillMine
		}
		s.rows[p][kind]++
		parts, lens = append(parts, p), append(lens, length)
		if len(held) > s.hold && failed == nil {
			failed = flush()
		}
	}); err != nil {
		return 0, err
	}
	if failed != nil {
		return 0, failed
	}
	if err := flush(); err != nil {
		return 0, err
	}
	for i := range s.off {
		s.off[i] += base
	}
	s.count = count
	return count, nil
}

// join joins every row by its values, a share of the values (by their
// hash) at a time: each value falls in one share, so the groups come out
// as one pass over all of them would make them.
func (s *Spill) join() error {
	if err := s.vw.Flush(); err != nil {
		return err
	}
	shares := uint64(max(1, (s.nvalues+s.share-1)/s.share))
	for share := range shares {
		s.router.Reserve(s.nvalues / int(shares)) // a share holds about its part, by the values' hash
		if err := s.eachValues(func(n uint32, values []uint64) {
			for _, v := range values {
				if matcher.Share(v, shares) == share {
					s.router.Join(n, v)
				}
			}
		}); err != nil {
			return err
		}
		s.router.Forget()
	}
	return nil
}

// Partition reads partition i back, with Index and Count set.
func (s *Spill) Partition(i int) (*ledgerdb.Partition, error) {
	b := make([]byte, s.off[i+1]-s.off[i])
	if _, err := s.f.ReadAt(b, s.off[i]); err != nil {
		return nil, err
	}
	n := s.rows[i]
	p := &ledgerdb.Partition{Index: i, Count: s.count, Effects: sized[ledgerdb.ScopedEffect](n[spillEffect]),
		Evidence: sized[reconcile.Evidence](n[spillMine]), Earlier: sized[reconcile.Evidence](n[spillEarlier])}
	// Each row's strings are read as views of b, then moved into one
	// string of the row's own: one allocation a row instead of one a
	// string, and what a finding keeps of a row holds that row alone.
	d := decoder{b: b, table: s.shared.strs, views: true}
	for len(d.b) > 0 && d.err == nil {
		start := len(b) - len(d.b)
		switch kind := d.byte(); kind {
		case spillEffect: // decoded where it goes: an effect is too large to copy
			p.Effects = append(p.Effects, ledgerdb.ScopedEffect{})
			e := &p.Effects[len(p.Effects)-1]
			e.Provider, e.Step, e.Status, e.State = d.shared(), d.shared(), reconcile.Status(d.shared()), reconcile.Class(d.shared())
			var request string
			e.Key, e.ExternalID, request = d.string(), d.string(), d.string()
			e.Request = []byte(request)
			e.CreatedAt, e.Since = d.time(), d.time()
			e.Final = d.byte() == 1
			own(b[start:len(b)-len(d.b)], &e.Key, &e.ExternalID)
		case spillMine, spillEarlier:
			to := &p.Evidence
			if kind == spillEarlier {
				to = &p.Earlier
			}
			*to = append(*to, reconcile.Evidence{URI: d.shared()})
			e := &(*to)[len(*to)-1]
			d.record(e)
			own(b[start:len(b)-len(d.b)], &e.TxID, &e.EffectKey, &e.ParentEffectKey, &e.PaymentIntent, &e.ParentTxID)
		default: // a kept source's, its strings numbered by its own tab
			if int(kind-spillKept) >= len(s.kept) {
				d.err = fmt.Errorf("row of kind %d", kind)
				break
			}
			kw := s.kept[kind-spillKept]
			p.Evidence = append(p.Evidence, reconcile.Evidence{URI: kw.uri, SourceID: kw.id})
			e := &p.Evidence[len(p.Evidence)-1]
			d.table = kw.tab.strs
			d.kept(e)
			d.table = s.shared.strs
			e.Webhook = kw.webhook // not the ingest's
			own(b[start:len(b)-len(d.b)], &e.TxID, &e.EffectKey, &e.ParentEffectKey, &e.PaymentIntent, &e.ParentTxID)
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("partition %d: %w", i, d.err)
	}
	return p, nil
}

// sized is an empty slice with room for n, nil when n is 0.
func sized[T any](n int) []T {
	if n == 0 {
		return nil
	}
	return make([]T, 0, n)
}

func bit(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendTime writes t as seconds since 1970 and nanoseconds: a count of
// nanoseconds alone holds only the years 1678 to 2262, and a report may
// date a row 9999-12-31.
func appendTime(b []byte, t time.Time) []byte {
	return binary.AppendUvarint(binary.AppendVarint(b, t.Unix()), uint64(t.Nanosecond()))
}

// decoder reads back what Spill wrote; the first error sticks.
type decoder struct {
	b     []byte
	table []string // strtab.strs
	err   error
	// views makes string return views of b, not copies: valid only
	// while b is neither changed nor let go (see own).
	views bool
}

// own moves the strings that point into row (views of a decoder's b)
// into one string of its own, so that they outlive row's buffer.
func own(row []byte, strs ...*string) {
	var whole string
	for _, s := range strs {
		if len(*s) == 0 {
			*s = ""
			continue
		}
		if whole == "" {
			whole = string(row)
		}
		at := int(uintptr(unsafe.Pointer(unsafe.StringData(*s))) - uintptr(unsafe.Pointer(unsafe.SliceData(row))))
		*s = whole[at : at+len(*s)]
	}
}

var errShort = errors.New("row cut short")

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.err = errShort
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	l, n := binary.Uvarint(d.b)
	if n <= 0 || uint64(len(d.b)-n) < l {
		d.err = errShort
		return ""
	}
	v := d.b[n : n+int(l)]
	d.b = d.b[n+int(l):]
	if d.views {
		return unsafe.String(unsafe.SliceData(v), len(v))
	}
	return string(v)
}

// shared reads a string by its number: every row holds the same copy.
func (d *decoder) shared() string {
	n, w := binary.Uvarint(d.b)
	if w <= 0 || n >= uint64(len(d.table)) {
		d.err = errShort
		return ""
	}
	d.b = d.b[w:]
	return d.table[n]
}

// record reads what strtab.appendRecord wrote.
func (d *decoder) record(e *reconcile.Evidence) {
	e.Provider, e.Kind, e.Amount.Currency = d.shared(), reconcile.Kind(d.shared()), d.shared()
	e.TxID, e.EffectKey, e.ParentEffectKey, e.PaymentIntent, e.ParentTxID = d.string(), d.string(), d.string(), d.string(), d.string()
	e.Line, e.Amount.Minor, e.Time = int(d.varint()), d.varint(), d.time()
	flags := d.byte()
	e.Pending, e.Failed, e.Webhook = flags&1 != 0, flags&2 != 0, flags&4 != 0
}

func (d *decoder) kept(e *reconcile.Evidence) {
	d.record(e)
	e.Seq, e.RawKind, e.Fee = int(d.varint()), d.shared(), d.varint()
}

func (d *decoder) time() time.Time {
	sec := d.varint()
	ns, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return time.Time{}
	}
	d.b = d.b[n:]
	return time.Unix(sec, int64(ns)).UTC()
}
