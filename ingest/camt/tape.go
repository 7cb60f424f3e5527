package camt

import (
	"io"
)

// maxKept bounds how many bytes the tape holds for one element's raw text. An
// entry larger than this (a batch of many thousand transactions) is still
// parsed; only its raw text is replaced by a note.
const maxKept = 1 << 20

// tape is the XML decoder's byte source. The decoder reads it one byte at a
// time (it implements io.ByteReader, so the decoder adds no buffering of its
// own), which keeps Decoder.InputOffset equal to the tape's offsets. The tape
// keeps the bytes from offset keep on, so that the text of the element being
// decoded can be sliced out afterwards, and forgets everything before it.
type tape struct {
	r    io.Reader
	buf  []byte // buf[0] is the byte at offset base
	base int64
	pos  int   // index in buf of the next byte to read
	keep int64 // bytes from this offset on are kept (up to maxKept)
	err  error
}

func newTape(r io.Reader) *tape {
	return &tape{r: r, buf: make([]byte, 0, 64<<10)}
}

// ReadByte returns the next byte.
func (t *tape) ReadByte() (byte, error) {
	if t.pos == len(t.buf) {
		if err := t.fill(); err != nil {
			return 0, err
		}
	}
	b := t.buf[t.pos]
	t.pos++
	return b, nil
}

// Read lets the decoder hand the tape to a CharsetReader; it is not used on
// the normal path.
func (t *tape) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if t.pos == len(t.buf) {
		if err := t.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, t.buf[t.pos:])
	t.pos += n
	return n, nil
}

// fill reads more input, first dropping the bytes that are no longer kept.
func (t *tape) fill() error {
	if t.err != nil {
		return t.err
	}
	drop := t.pos
	if k := t.keep - t.base; k >= 0 && k < int64(drop) {
		drop = int(k)
	}
	if t.pos-drop > maxKept {
		drop = t.pos // too large to keep: the element's text is lost
	}
	if drop > 0 {
		n := copy(t.buf, t.buf[drop:t.pos])
		t.buf = t.buf[:n]
		t.base += int64(drop)
		t.pos -= drop
	}
	if cap(t.buf)-len(t.buf) < 16<<10 {
		nb := make([]byte, len(t.buf), 2*cap(t.buf))
		copy(nb, t.buf)
		t.buf = nb
	}
	for range 100 {
		n, err := t.r.Read(t.buf[len(t.buf):cap(t.buf)])
		t.buf = t.buf[:len(t.buf)+n]
		if n > 0 {
			return nil
		}
		if err != nil {
			t.err = err
			return err
		}
	}
	t.err = io.ErrNoProgress
	return t.err
}

// text returns the input between offsets start and end, and false when those
// bytes were not kept or are more than maxKept.
func (t *tape) text(start, end int64) (string, bool) {
	if start < t.base || end > t.base+int64(len(t.buf)) || start > end || end-start > maxKept {
		return "", false
	}
	return string(t.buf[start-t.base : end-t.base]), true
}
