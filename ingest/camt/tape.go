package camt

import (
	"bytes"
	"errors"
	"io"

	"reconcile/ingest/tabular"
)

// The bounds on what the decoder may read at once. encoding/xml's Decoder
// has none of its own: it holds a text node, or an element decoded whole,
// however large, so that a few megabytes of gzip expanding to one text node
// of gigabytes would take all the memory there is. Tests lower them.
var (
	// maxToken bounds the bytes of one token as the document is walked,
	// and of one element decoded whole: tabular.MaxLine, the bound on one
	// line of a delimited file.
	maxToken = tabular.MaxLine
	// maxMarkup bounds the markup (its '<') of one element decoded whole:
	// nested elements cost the decoder some forty times their bytes, so
	// maxToken of them alone would take gigabytes. No element that is
	// decoded whole (a transaction's details, a balance) comes near it.
	maxMarkup = 1 << 20
	// maxDepth bounds the nesting of an element skipped token by token,
	// for the same reason; camt.053 nests a dozen deep.
	maxDepth = 256
)

// errTooLong and errMarkup are the tape's errors past maxToken and
// maxMarkup; the parser says which bound, and where.
var (
	errTooLong = errors.New("XML over the bound on one element or text")
	errMarkup  = errors.New("XML element over the bound on its markup")
)

// markupEvery is how often, in bytes read, the markup of an element
// decoded whole is counted.
const markupEvery = 4 << 10

// maxKept bounds how many bytes the tape holds for one element's raw text. An
// entry larger than this (a batch of many thousand transactions) is still
// parsed; only its raw text is replaced by a note.
const maxKept = 1 << 20

// tape is the XML decoder's byte source. The decoder reads it one byte at a
// time (it implements io.ByteReader, so the decoder adds no buffering of its
// own), which keeps Decoder.InputOffset equal to the tape's offsets. The tape
// keeps the bytes from offset keep on, so that the text of the element being
// decoded can be sliced out afterwards, and forgets everything before it.
//
// The tape also bounds what the decoder reads at once (see bound): reading
// past maxToken bytes from where the bound was set fails with errTooLong,
// and, for an element decoded whole, past maxMarkup '<' with errMarkup.
type tape struct {
	r    io.Reader
	buf  []byte // buf[0] is the byte at offset base
	base int64
	pos  int   // index in buf of the next byte to read
	keep int64 // bytes from this offset on are kept (up to maxKept)
	err  error

	stop    int64 // the offset from which reading fails with errTooLong
	whole   bool  // an element is decoded whole: its markup is counted
	markup  int   // the '<' counted since the bound was set
	counted int   // index in buf up to which they are counted
	lim     int   // index in buf up to which bytes are read without a look at the bounds
}

func newTape(r io.Reader) *tape {
	return &tape{r: r, buf: make([]byte, 0, 64<<10), stop: int64(maxToken)}
}

// ReadByte returns the next byte.
func (t *tape) ReadByte() (byte, error) {
	if t.pos >= t.lim {
		if err := t.more(); err != nil {
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
	if t.pos >= t.lim {
		if err := t.more(); err != nil {
			return 0, err
		}
	}
	n := copy(p, t.buf[t.pos:t.lim])
	t.pos += n
	return n, nil
}

// bound lets the decoder read, from here on, at most maxToken bytes, and,
// when whole is set (an element is decoded whole), at most maxMarkup '<'.
// The parser sets it before each token it reads and each element it
// decodes.
func (t *tape) bound(whole bool) {
	t.stop = t.base + int64(t.pos) + int64(maxToken)
	t.whole, t.markup, t.counted = whole, 0, t.pos
	t.setLim()
}

// more makes the next byte readable, or returns why it may not be read.
func (t *tape) more() error {
	if t.whole {
		t.markup += bytes.Count(t.buf[t.counted:t.pos], []byte{'<'})
		t.counted = t.pos
		if t.markup > maxMarkup {
			return errMarkup
		}
	}
	if t.base+int64(t.pos) >= t.stop {
		return errTooLong
	}
	if t.pos == len(t.buf) {
		if err := t.fill(); err != nil {
			return err
		}
		t.counted = t.pos
	}
	t.setLim()
	return nil
}

// setLim sets lim: the end of what is read, the bound, or, for an element
// decoded whole, the next count of its markup, whichever comes first.
func (t *tape) setLim() {
	lim := int64(len(t.buf))
	if s := t.stop - t.base; s < lim {
		lim = max(s, 0)
	}
	if t.whole {
		lim = min(lim, int64(t.pos+markupEvery))
	}
	t.lim = int(lim)
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
