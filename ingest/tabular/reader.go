// Package tabular reads the delimited text files that providers export:
// a byte-order mark, CRLF line ends, comma, semicolon or tab delimiters,
// quoted fields, and a header row mapped by name. Every record comes with the
// 1-based line on which it starts.
package tabular

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// Reader reads records from delimited text. It reads what encoding/csv
// reads with FieldsPerRecord -1 and neither LazyQuotes nor TrimLeadingSpace:
// the same records, starting on the same lines, and the same errors for
// malformed quoting. Besides each record it keeps the record's text as it is
// in the input (Raw), and gives it as Join writes it (Joined), so that
// callers need not write the record back.
//
// A line is copied to one string and its fields are substrings of it,
// unless they hold doubled quotes. A line with quotes that Join would write
// otherwise is written as Join writes it instead, and Raw copies the line
// as it is only when asked.
type Reader struct {
	Comma rune // the delimiter in use

	br      *bufio.Reader
	comma   string // Comma in UTF-8
	c       byte   // Comma when it is a single byte, else 0
	bad     error  // not nil when Comma cannot be a delimiter
	numLine int    // lines read so far
	// cut says that the record last read ends the input without a line
	// end, and open that it ends inside a quoted field (see Guard).
	cut, open bool
	// over says that the line last read is longer than maxLine: only its
	// start was kept, and the rest skipped.
	over bool

	rec   []string
	raw   string
	rawb  []byte // when not nil, raw is these bytes, not yet copied to a string
	ok    bool   // rec is a record, not the rest of a malformed one
	shape uint8  // how rec was read: shapePlain, shapeQuoted or shapeLines
	// same says, for shapePlain with a one-byte Comma, that Join quotes no
	// field: if raw holds no CR, Joined is raw.
	same bool
	// joined is Joined, when reading the record already found it (jok).
	joined string
	jok    bool
	fields []field // scratch: the fields of a line with quotes
	buf    []byte  // scratch for the text of a quoted line as Join writes it
	long   []byte  // a line longer than br's buffer
	multi  []byte  // the raw text of a record that spans lines
	spans  []span  // the fields as offsets into the record's text
	esc    []byte  // scratch for unescaping quoted fields
	ends   []int   // scratch: where the fields of a plainly quoted line end
	// dropsQuotes says that the last line with quotes was one that Join
	// writes without some of them: the next is likely one that
	// readPlainQuoted reads, as in PayPal's reports.
	dropsQuotes bool
}

// The shapes of a record, as Read read it.
const (
	shapePlain  = iota // one line without quotes
	shapeQuoted        // one line with quotes
	shapeLines         // more than one line
)

var bom = []byte{0xEF, 0xBB, 0xBF}

// errInvalidDelim is encoding/csv's error for a delimiter it cannot use.
var errInvalidDelim = errors.New("csv: invalid field or comment delimiter")

// NewReader returns a Reader for r. The delimiter is sniffed from the first
// line (the one among ',', ';' and '\t' that occurs most outside quotes) unless
// comma is non-zero. A leading byte-order mark is dropped.
func NewReader(r io.Reader, comma rune) (*Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, bom) {
		br.Discard(3)
	}
	if comma == 0 {
		head, err := br.Peek(br.Size())
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
		comma = Sniff(head)
	}
	rd := &Reader{br: br, Comma: comma}
	if !validDelim(comma) {
		rd.bad = errInvalidDelim
		return rd, nil
	}
	rd.comma = string(comma)
	if comma < utf8.RuneSelf {
		rd.c = byte(comma)
	}
	return rd, nil
}

// validDelim is encoding/csv's rule for a usable delimiter.
func validDelim(r rune) bool {
	return r != 0 && r != '"' && r != '\r' && r != '\n' && utf8.ValidRune(r) && r != utf8.RuneError
}

// Sniff guesses the delimiter of the first line of head.
func Sniff(head []byte) rune {
	counts := map[byte]int{}
	quoted := false
	for _, c := range head {
		if c == '"' {
			quoted = !quoted
			continue
		}
		if quoted {
			continue
		}
		if c == '\n' {
			break
		}
		if c == ',' || c == ';' || c == '\t' {
			counts[c]++
		}
	}
	best := byte(',')
	for _, c := range []byte{';', '\t'} {
		if counts[c] > counts[best] {
			best = c
		}
	}
	return rune(best)
}

// Read returns the next record and the line it starts on. The record is
// reused by the next call. At the end it returns io.EOF. A record that is not
// well-formed CSV is returned as a *csv.ParseError, as encoding/csv reports
// it, after which reading goes on with the next line; Raw then gives the
// text that was read as that record.
func (r *Reader) Read() (rec []string, line int, err error) {
	r.raw, r.rawb, r.ok, r.shape, r.same, r.jok, r.open, r.over = "", nil, false, shapePlain, false, false, false, false
	if r.bad != nil {
		return nil, 0, r.bad
	}
	var orig []byte
	var n int
	var nl bool
	for { // blank lines are no records
		orig, n, nl, err = r.readLine()
		if err != nil {
			return nil, 0, err
		}
		if n > 0 || r.over {
			break
		}
	}
	if r.over {
		r.raw = string(orig[:n])
		return nil, r.numLine, &csv.ParseError{StartLine: r.numLine, Line: r.numLine, Column: maxLine + 1, Err: ErrLineTooLong}
	}
	if bytes.IndexByte(orig[:n], '"') >= 0 {
		return r.readQuoted(orig, n, nl)
	}
	// No quotes: the fields are the line split at the delimiter, and
	// substrings of the one string the line is copied to.
	s := string(orig[:n])
	r.raw = s
	rec = r.rec[:0]
	if r.c == 0 {
		for {
			i := strings.Index(s, r.comma)
			if i < 0 {
				break
			}
			rec = append(rec, s[:i])
			s = s[i+len(r.comma):]
		}
		rec = append(rec, s)
		r.rec, r.ok = rec, true
		return rec, r.numLine, nil
	}
	b, same := orig[:n], true
	for p := 0; ; {
		i := index1(b, p, r.c)
		f := s[p:i]
		if f != "" && quotable(f[0]) {
			same = same && !needsQuotesUnquoted(f)
		}
		rec = append(rec, f)
		if i == len(b) {
			break
		}
		p = i + 1
	}
	r.rec, r.ok, r.same = rec, true, same
	return rec, r.numLine, nil
}

// Joined returns the record Read last returned as Join(rec, r.Comma)
// writes it. That is Raw() itself, with no copy, when the input writes the
// record that way, as it does unless it quotes a field that needs no quotes,
// leaves unquoted one that Join quotes (a leading space), or holds a CR; for
// a line with quotes, reading it made the text already. After a malformed
// record, which has no fields, it is Raw().
func (r *Reader) Joined() string {
	if !r.ok {
		return r.Raw()
	}
	if r.jok {
		return r.joined
	}
	if r.shape == shapeLines || r.c == 0 || strings.IndexByte(r.raw, '\r') >= 0 {
		if j := Join(r.rec, r.Comma); j != r.raw {
			return j
		}
		return r.raw
	}
	// On one line without quotes or a CR, with a one-byte delimiter,
	// reading the record found whether Join quotes a field: one that starts
	// with a space or is \..
	if r.same {
		return r.raw
	}
	return Join(r.rec, r.Comma)
}

// index returns the position of the first delimiter in b, or -1.
func (r *Reader) index(b []byte) int {
	if r.c != 0 {
		return bytes.IndexByte(b, r.c)
	}
	return bytes.Index(b, []byte(r.comma))
}

// Raw returns the text of the record (or of the malformed input) that Read
// last returned, exactly as it is in the input but without the line end
// that closes it. It is "" after io.EOF or a read error.
func (r *Reader) Raw() string {
	if r.rawb != nil {
		r.raw, r.rawb = string(r.rawb), nil
	}
	return r.raw
}

// readLine reads the next line. It returns the line as read (valid until
// the next read), the length of its content without the line end, and
// whether it ends in a newline. As encoding/csv does, it takes CRLF as a
// line end and drops a CR that is the last byte of the input. At the end of
// the input it returns io.EOF. A line longer than maxLine is read only up
// to the bound and skipped after it: readLine sets r.over, and the content
// it returns is the line's first bytes (see kept).
func (r *Reader) readLine() (line []byte, n int, nl bool, err error) {
	r.over = false
	line, err = r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.long = append(r.long[:0], line...)
		// Read on until the line is known to be over the bound: more than
		// maxLine+1 bytes held, since the last of them may be the CR of a
		// CRLF. The rest of such a line is skipped, not held.
		for err == bufio.ErrBufferFull && len(r.long) <= maxLine+1 {
			line, err = r.br.ReadSlice('\n')
			r.long = append(r.long, line...)
		}
		for err == bufio.ErrBufferFull {
			r.over = true
			_, err = r.br.ReadSlice('\n')
		}
		if r.over && err == nil {
			r.long = append(r.long, '\n') // the line end that was skipped
		}
		line = r.long
	}
	if err != nil && (err != io.EOF || len(line) == 0) {
		return nil, 0, false, err
	}
	r.numLine++
	n = len(line)
	r.cut = line[n-1] != '\n'
	if line[n-1] == '\n' {
		nl = true
		n--
		if n > 0 && line[n-1] == '\r' {
			n--
		}
	} else if line[n-1] == '\r' {
		n--
	}
	if r.over || n > maxLine {
		r.over = true
		n = kept(line[:n])
	}
	return line, n, nl, nil
}
