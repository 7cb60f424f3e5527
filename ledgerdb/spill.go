package ledgerdb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"reconcile"
	"reconcile/matcher"
)

// Spill cuts a run into partitions in the run's process: a driver hands
// it every effect in scope and every record as it fetches them, the Spill
// routes them (matcher.Router) and keeps them in a temporary file, and
// Cut lays that file out partition by partition, so that each is read
// back in one piece. Memory holds the Router's few bytes per row, never
// the rows.
type Spill struct {
	f      *os.File
	w      *bufio.Writer
	router *matcher.Router
	size   []uint32 // the encoded length of each row, in the order added
	buf    []byte
	off    []int64 // after Cut: where each partition starts, and the end
	count  int
	// Strings that repeat across rows (a provider, a kind, a status, a
	// URI) are written as their number in shared.
	shared []string
	number map[string]uint64
	// Effects and Records count what was added.
	Effects, Records int
}

// The kinds of row a Spill holds.
const (
	spillEffect  byte = iota
	spillMine         // a record of the run's own evidence
	spillEarlier      // a record of earlier evidence
)

// NewSpill returns an empty Spill, its file in the system's temporary
// folder.
func NewSpill() (*Spill, error) {
	f, err := os.CreateTemp("", "reconcile-partitions-*")
	if err != nil {
		return nil, fmt.Errorf("partitions: %w", err)
	}
	os.Remove(f.Name()) // the open file lives on, and goes with the process however it ends
	return &Spill{f: f, w: bufio.NewWriterSize(f, 1<<20), router: matcher.NewRouter(0), number: map[string]uint64{}}, nil
}

// Close removes what the Spill holds.
func (s *Spill) Close() error { return s.f.Close() }

// Effect adds an effect in scope.
func (s *Spill) Effect(e *ScopedEffect) error {
	s.router.Effect(e.Provider, e.Key, e.ExternalID)
	s.Effects++
	b := append(s.buf[:0], spillEffect)
	for _, v := range [...]string{e.Provider, e.Step, string(e.Status), string(e.State)} {
		b = s.appendShared(b, v)
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
	s.router.Record(e)
	s.Records++
	b := append(s.buf[:0], spillEarlier)
	if mine {
		b[0] = spillMine
	}
	for _, v := range [...]string{e.URI, e.Provider, string(e.Kind), e.Amount.Currency} {
		b = s.appendShared(b, v)
	}
	for _, v := range [...]string{e.TxID, e.EffectKey, e.ParentEffectKey, e.PaymentIntent, e.ParentTxID} {
		b = appendString(b, v)
	}
	b = binary.AppendVarint(b, int64(e.Line))
	b = binary.AppendVarint(b, e.Amount.Minor)
	b = appendTime(b, e.Time)
	b = append(b, bit(e.Pending)|bit(e.Failed)<<1|bit(e.Webhook)<<2)
	return s.add(b)
}

func (s *Spill) appendShared(b []byte, v string) []byte {
	n, ok := s.number[v]
	if !ok {
		n = uint64(len(s.shared))
		s.number[v] = n
		s.shared = append(s.shared, v)
	}
	return binary.AppendUvarint(b, n)
}

func (s *Spill) add(b []byte) error {
	s.buf = b
	s.size = append(s.size, uint32(len(b)))
	_, err := s.w.Write(b)
	return err
}

// Cut routes what was added into partitions of about size effects
// (matcher.Router.Partitions) and lays the file out by partition. It
// returns how many partitions there are.
func (s *Spill) Cut(size int) (int, error) {
	if err := s.w.Flush(); err != nil {
		return 0, err
	}
	part, count := s.router.Partitions(size)
	s.router = nil
	s.off = make([]int64, count+1)
	for i, n := range s.size {
		s.off[part[i]+1] += int64(n)
	}
	for i := range count {
		s.off[i+1] += s.off[i]
	}
	// Rows are copied from the file as added (from 0) to where their
	// partition lies (after it), a few megabytes of each at a time.
	base := s.off[count]
	at := make([]int64, count)
	copy(at, s.off[:count])
	pending := make([][]byte, count)
	held := 0
	flush := func() error {
		for p, b := range pending {
			if len(b) > 0 {
				if _, err := s.f.WriteAt(b, base+at[p]); err != nil {
					return err
				}
				at[p] += int64(len(b))
				pending[p] = b[:0]
			}
		}
		held = 0
		return nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, base), 1<<20)
	row := make([]byte, 0, 256)
	for i, n := range s.size {
		row = row[:n]
		if _, err := io.ReadFull(r, row); err != nil {
			return 0, err
		}
		p := part[i]
		pending[p] = append(pending[p], row...)
		if held += int(n); held > 8<<20 {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	for i := range s.off {
		s.off[i] += base
	}
	s.size, s.count = nil, count
	return count, nil
}

// Bytes is how much the partitions take on disk, once cut.
func (s *Spill) Bytes() int64 {
	if len(s.off) == 0 {
		return 0
	}
	return s.off[len(s.off)-1] - s.off[0]
}

// Partition reads partition i back, with Index and Count set.
func (s *Spill) Partition(i int) (*Partition, error) {
	b := make([]byte, s.off[i+1]-s.off[i])
	if _, err := s.f.ReadAt(b, s.off[i]); err != nil {
		return nil, err
	}
	p := &Partition{Index: i, Count: s.count}
	d := decoder{b: b, table: s.shared}
	for len(d.b) > 0 && d.err == nil {
		switch kind := d.byte(); kind {
		case spillEffect:
			var e ScopedEffect
			e.Provider, e.Step, e.Status, e.State = d.shared(), d.shared(), reconcile.Status(d.shared()), reconcile.Class(d.shared())
			e.Key, e.ExternalID, e.Request = d.string(), d.string(), []byte(d.string())
			e.CreatedAt, e.Since = d.time(), d.time()
			e.Final = d.byte() == 1
			p.Effects = append(p.Effects, e)
		case spillMine, spillEarlier:
			var e reconcile.Evidence
			e.URI, e.Provider, e.Kind, e.Amount.Currency = d.shared(), d.shared(), reconcile.Kind(d.shared()), d.shared()
			e.TxID, e.EffectKey, e.ParentEffectKey, e.PaymentIntent, e.ParentTxID = d.string(), d.string(), d.string(), d.string(), d.string()
			e.Line, e.Amount.Minor, e.Time = int(d.varint()), d.varint(), d.time()
			flags := d.byte()
			e.Pending, e.Failed, e.Webhook = flags&1 != 0, flags&2 != 0, flags&4 != 0
			if kind == spillMine {
				p.Evidence = append(p.Evidence, e)
			} else {
				p.Earlier = append(p.Earlier, e)
			}
		default:
			d.err = fmt.Errorf("row of kind %d", kind)
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("partition %d: %w", i, d.err)
	}
	return p, nil
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

// appendTime writes t as nanoseconds since 1970, and the zero time as 0
// (which reads back as the zero time: no provider reports that instant).
func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return binary.AppendVarint(b, 0)
	}
	return binary.AppendVarint(b, t.UnixNano())
}

// decoder reads back what Spill wrote; the first error sticks.
type decoder struct {
	b     []byte
	table []string // Spill.shared
	err   error
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
	v := string(d.b[n : n+int(l)])
	d.b = d.b[n+int(l):]
	return v
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

func (d *decoder) time() time.Time {
	if ns := d.varint(); ns != 0 {
		return time.Unix(0, ns).UTC()
	}
	return time.Time{}
}
