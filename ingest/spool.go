package ingest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"reconcile"
)

// Spool is a Sink that keeps what it is given in an unlinked temporary
// file, for Replay to give again in the same order: an input read once to
// check it can then be written without being parsed again (a webhook
// dump's JSON costs several times its replay) or fetched again.
type Spool struct {
	f   *os.File
	w   *bufio.Writer
	buf []byte
}

// The tags of a spooled row.
const (
	spoolEvidence = 'e'
	spoolRejected = 'r'
)

// NewSpool creates an empty spool; Close removes it.
func NewSpool() (*Spool, error) {
	f, err := os.CreateTemp("", "reconcile-spool-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name()) // gone with the last handle, even if the process dies
	return &Spool{f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

// Close releases the spool.
func (s *Spool) Close() error { return s.f.Close() }

// Evidence keeps e.
func (s *Spool) Evidence(e *reconcile.Evidence) error {
	t, err := e.Time.MarshalBinary()
	if err != nil {
		return err
	}
	b := append(s.buf[:0], spoolEvidence)
	for _, v := range []string{e.Provider, e.TxID, string(e.Kind), e.RawKind, e.Amount.Currency, e.EffectKey, e.ParentEffectKey,
		e.PaymentIntent, e.ParentTxID, e.Description, e.URI, e.SourceHash, e.Raw, string(t)} {
		b = appendString(b, v)
	}
	b = binary.AppendVarint(b, e.Amount.Minor)
	b = binary.AppendVarint(b, e.Fee)
	b = binary.AppendVarint(b, int64(e.Line))
	b = append(b, flag(e.Pending)|flag(e.Failed)<<1|flag(e.Webhook)<<2)
	if e.Metadata == nil {
		b = binary.AppendUvarint(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(e.Metadata))+1)
		for k, v := range e.Metadata {
			b = appendString(appendString(b, k), v)
		}
	}
	s.buf = b
	_, err = s.w.Write(b)
	return err
}

// Reject keeps r.
func (s *Spool) Reject(r *reconcile.Rejected) error {
	b := append(s.buf[:0], spoolRejected)
	b = appendString(appendString(appendString(b, r.URI), r.Reason), r.Raw)
	b = binary.AppendVarint(b, int64(r.Line))
	s.buf = b
	_, err := s.w.Write(b)
	return err
}

// Replay gives out everything kept, in the order it was kept.
func (s *Spool) Replay(out Sink) error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	d := &spoolReader{r: bufio.NewReaderSize(s.f, 256<<10)}
	for {
		tag, err := d.r.ReadByte()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch tag {
		case spoolEvidence:
			e := &reconcile.Evidence{}
			var kind, t string
			for _, p := range []*string{&e.Provider, &e.TxID, &kind, &e.RawKind, &e.Amount.Currency, &e.EffectKey, &e.ParentEffectKey,
				&e.PaymentIntent, &e.ParentTxID, &e.Description, &e.URI, &e.SourceHash, &e.Raw, &t} {
				*p = d.string()
			}
			e.Kind = reconcile.Kind(kind)
			e.Amount.Minor, e.Fee, e.Line = d.varint(), d.varint(), int(d.varint())
			flags := d.byte()
			e.Pending, e.Failed, e.Webhook = flags&1 != 0, flags&2 != 0, flags&4 != 0
			if n := d.uvarint(); n > 0 && d.err == nil {
				e.Metadata = make(map[string]string, min(n-1, 1<<10))
				for range n - 1 {
					k := d.string()
					e.Metadata[k] = d.string()
				}
			}
			if d.err == nil {
				d.err = e.Time.UnmarshalBinary([]byte(t))
			}
			if d.err != nil {
				return fmt.Errorf("spool: %w", d.err)
			}
			if err := out.Evidence(e); err != nil {
				return err
			}
		case spoolRejected:
			r := &reconcile.Rejected{URI: d.string(), Reason: d.string(), Raw: d.string()}
			r.Line = int(d.varint())
			if d.err != nil {
				return fmt.Errorf("spool: %w", d.err)
			}
			if err := out.Reject(r); err != nil {
				return err
			}
		default:
			return fmt.Errorf("spool: unknown row tag %q", tag)
		}
	}
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func flag(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// spoolReader reads the values of a spooled row, keeping the first error.
type spoolReader struct {
	r   *bufio.Reader
	err error
}

func (d *spoolReader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.r)
	d.err = noEOF(err)
	return v
}

func (d *spoolReader) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(d.r)
	d.err = noEOF(err)
	return v
}

func (d *spoolReader) byte() byte {
	if d.err != nil {
		return 0
	}
	v, err := d.r.ReadByte()
	d.err = noEOF(err)
	return v
}

func (d *spoolReader) string() string {
	n := d.uvarint()
	if d.err != nil || n == 0 {
		return ""
	}
	if n > 1<<30 {
		d.err = fmt.Errorf("a value of %d bytes", n)
		return ""
	}
	b := make([]byte, n)
	_, err := io.ReadFull(d.r, b)
	d.err = noEOF(err)
	return string(b)
}

// noEOF makes an end of the spool inside a row an error of its own.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
