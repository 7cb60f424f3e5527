// Package tabular reads the delimited text files that providers export:
// a byte-order mark, CRLF line ends, comma, semicolon or tab delimiters,
// quoted fields, and a header row mapped by name. Every record comes with the
// 1-based line on which it starts.
package tabular

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"
	"unicode"
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

// What qf says about a field.
const (
	fieldQuoted  = 1 << iota // it was quoted
	fieldDoubled             // and held doubled quotes
	fieldNeeds               // Join quotes it, if the line holds no CR
)

// span is a field's place in its record's raw text. A quoted field that
// holds doubled quotes or a CRLF line end differs from its raw text (esc);
// u is then the end of its content in Reader.esc.
type span struct {
	start, end int
	esc        bool
	u          int
}

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

// leadingSpace reports whether f starts with a space, as unicode.IsSpace
// has it.
func leadingSpace(f string) bool {
	if c := f[0]; c < utf8.RuneSelf {
		return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
	}
	r, _ := utf8.DecodeRuneInString(f)
	return unicode.IsSpace(r)
}

// index returns the position of the first delimiter in b, or -1.
func (r *Reader) index(b []byte) int {
	if r.c != 0 {
		return bytes.IndexByte(b, r.c)
	}
	return bytes.Index(b, []byte(r.comma))
}

// unescape appends the content of a quoted field's raw text to dst as
// encoding/csv reads it: a doubled quote is one quote, CRLF is LF.
func unescape(dst []byte, raw string) []byte {
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"': // always doubled inside quotes: keep one
			dst = append(dst, '"')
			i++
		case c == '\r' && i+1 < len(raw) && raw[i+1] == '\n':
		default:
			dst = append(dst, c)
		}
	}
	return dst
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

// readQuoted reads a record whose first line, orig with n bytes of content,
// holds a quote, as encoding/csv does. Most such records are one line, and
// their fields are substrings of the line, unless they hold doubled quotes;
// a quoted field that goes on past the line is left to readLines. This is
// the way for a delimiter of more than one byte; readQuotedByte is the one
// for the others.
func (r *Reader) readQuoted(orig []byte, n int, nl bool) ([]string, int, error) {
	if r.c != 0 {
		return r.readQuotedByte(orig, n, nl)
	}
	s := string(orig[:n])
	rec := r.rec[:0]
	commaLen := len(r.comma)
	q := strings.IndexByte(s, '"') // the first quote at or after p, or -1
	for p := 0; ; {
		if p == q { // a quoted field
			j := p + 1 // after the quote that ends it, or the first of a pair
			esc := false
			for {
				k := strings.IndexByte(s[j:], '"')
				if k < 0 {
					return r.readLines(orig, n, nl)
				}
				j += k + 1
				if j < len(s) && s[j] == '"' {
					esc = true
					j++
					continue
				}
				break
			}
			f := s[p+1 : j-1]
			if esc {
				f = strings.ReplaceAll(f, `""`, `"`)
			}
			rec = append(rec, f)
			switch {
			case j == len(s):
			case strings.HasPrefix(s[j:], r.comma):
				p = j + commaLen
				if q = strings.IndexByte(s[p:], '"'); q >= 0 {
					q += p
				}
				continue
			default:
				r.raw = s
				return nil, r.numLine, &csv.ParseError{StartLine: r.numLine, Line: r.numLine, Column: j, Err: csv.ErrQuote}
			}
			break
		}
		// An unquoted field, up to the next delimiter; it must hold no quote.
		i := strings.Index(s[p:], r.comma)
		end := len(s)
		if i >= 0 {
			end = p + i
		}
		if q >= 0 && q < end {
			r.raw = s
			return nil, r.numLine, &csv.ParseError{StartLine: r.numLine, Line: r.numLine, Column: q + 1, Err: csv.ErrBareQuote}
		}
		rec = append(rec, s[p:end])
		if i < 0 {
			break
		}
		p = end + commaLen
	}
	r.raw, r.rec, r.ok, r.shape = s, rec, true, shapeQuoted
	return rec, r.numLine, nil
}

// readQuotedByte is readQuoted for a one-byte delimiter. Fields are short,
// so it looks for quotes and delimiters eight bytes at a time rather than
// with bytes.IndexByte, which costs more to start than it saves on them.
// It also notes which fields Join quotes, so that the fields can be
// substrings of the one string that is Joined: the line itself when Join
// writes it so, else the line as Join writes it (and Raw is then copied
// only if asked for).
func (r *Reader) readQuotedByte(orig []byte, n int, nl bool) ([]string, int, error) {
	b := orig[:n]
	// Lines of a file are much alike: try first the way for the kind of
	// line the last one was.
	if r.dropsQuotes {
		if rec := r.readPlainQuoted(b); rec != nil {
			return rec, r.numLine, nil
		}
	} else if rec := r.readKeptQuotes(b); rec != nil {
		return rec, r.numLine, nil
	}
	fields := r.fields[:0]
	c := r.c
	same := true // whether Join quotes just the fields that are quoted
	for p := 0; ; {
		if p < len(b) && b[p] == '"' { // a quoted field
			j := p + 1 // after the quote that ends it, or the first of a pair
			flag := uint8(fieldQuoted)
			for {
				if j = index2(b, j, '"', c); j < len(b) && b[j] == c {
					flag |= fieldNeeds
					if j = index1(b, j, '"'); j == len(b) {
						return r.readLines(orig, n, nl)
					}
				}
				if j == len(b) {
					return r.readLines(orig, n, nl)
				}
				j++
				if j < len(b) && b[j] == '"' {
					flag |= fieldDoubled | fieldNeeds
					j++
					continue
				}
				break
			}
			if flag&fieldNeeds == 0 && j-1 > p+1 && quotable(b[p+1]) && needsQuotesUnquoted(string(b[p+1:j-1])) {
				flag |= fieldNeeds
			}
			same = same && flag&fieldNeeds != 0
			fields = append(fields, field{p + 1, j - 1, flag})
			if j == len(b) {
				break
			}
			if b[j] != c {
				r.raw = string(b)
				return nil, r.numLine, &csv.ParseError{StartLine: r.numLine, Line: r.numLine, Column: j, Err: csv.ErrQuote}
			}
			p = j + 1
			continue
		}
		// An unquoted field, up to the next delimiter; it must hold no quote.
		j := index2(b, p, c, '"')
		if j < len(b) && b[j] == '"' {
			r.raw = string(b)
			return nil, r.numLine, &csv.ParseError{StartLine: r.numLine, Line: r.numLine, Column: j + 1, Err: csv.ErrBareQuote}
		}
		flag := uint8(0)
		if j > p && quotable(b[p]) && needsQuotesUnquoted(string(b[p:j])) {
			flag, same = fieldNeeds, false
		}
		fields = append(fields, field{p, j, flag})
		if j == len(b) {
			break
		}
		p = j + 1
	}
	r.fields = fields

	var s string
	switch {
	case bytes.IndexByte(b, '\r') >= 0:
		// Join quotes a field with a CR, which reading did not look for.
		s = string(b)
		r.raw = s
	case same:
		s = string(b)
		r.raw, r.joined, r.jok = s, s, true
		r.dropsQuotes = false
	default:
		// The line as Join writes it: the line with the quotes of the
		// fields that need none left out, and quotes put around those that
		// need them and have none. The raw text of a field that holds
		// doubled quotes is what Join writes inside the quotes.
		j := r.buf[:0]
		from := 0 // what of b is not yet in j
		for i, f := range fields {
			switch f.flag & (fieldQuoted | fieldNeeds) {
			case fieldQuoted:
				j = append(j, b[from:f.start-1]...)
				from = f.start
				fields[i].start, fields[i].end = len(j), len(j)+f.end-f.start
				j = append(j, b[from:f.end]...)
				from = f.end + 1
			case fieldNeeds:
				j = append(j, b[from:f.start]...)
				j = append(j, '"')
				fields[i].start, fields[i].end = len(j), len(j)+f.end-f.start
				j = append(j, b[f.start:f.end]...)
				j = append(j, '"')
				from = f.end
			default:
				d := len(j) - from
				fields[i].start, fields[i].end = f.start+d, f.end+d
			}
		}
		j = append(j, b[from:]...)
		r.buf = j
		s = string(j)
		r.rawb, r.joined, r.jok = b, s, true
		r.dropsQuotes = true
	}
	rec := r.rec[:0]
	for _, f := range fields {
		v := s[f.start:f.end]
		if f.flag&fieldDoubled != 0 {
			v = strings.ReplaceAll(v, `""`, `"`)
		}
		rec = append(rec, v)
	}
	r.rec, r.ok, r.shape = rec, true, shapeQuoted
	return rec, r.numLine, nil
}

// readKeptQuotes reads a line whose quoted fields all need their quotes,
// since they hold the delimiter, and hold no doubled quotes, as a
// description with a comma does: the line is then as Join writes it, and
// its fields are substrings of it. It finds quotes and delimiters eight
// bytes at a time, and every one in those bytes at once. It returns nil,
// having read nothing, for any other line.
func (r *Reader) readKeptQuotes(b []byte) []string {
	if bytes.IndexByte(b, '\r') >= 0 {
		return nil
	}
	s := string(b)
	rec := r.rec[:0]
	qq, cc := lsb*uint64('"'), lsb*uint64(r.c)
	start := 0      // where the field starts
	quoted := 0     // 1 when the field is quoted
	inside := false // within the field's quotes
	delim := false  // the quoted field holds the delimiter
	for i := 0; i < len(b); i += 8 {
		var v uint64
		if i+8 <= len(b) {
			v = binary.LittleEndian.Uint64(b[i:])
		} else {
			for k := len(b) - 1; k >= i; k-- { // zero bytes are neither quote nor delimiter
				v = v<<8 | uint64(b[k])
			}
		}
		for m := exactZeros(v^qq) | exactZeros(v^cc); m != 0; m &= m - 1 {
			k := i + bits.TrailingZeros64(m)/8
			switch {
			case b[k] != '"' && inside: // a delimiter within quotes
				delim = true
			case b[k] != '"': // a delimiter: the field ends
				f := s[start+quoted : k-quoted]
				if quoted == 0 && f != "" && quotable(f[0]) && needsQuotesUnquoted(f) {
					return nil
				}
				rec = append(rec, f)
				start, quoted = k+1, 0
			case k == start && quoted == 0: // an opening quote
				quoted, inside, delim = 1, true, false
			case inside && (k+1 == len(b) || b[k+1] == r.c): // a closing quote
				f := s[start+1 : k]
				if !delim && !(f != "" && quotable(f[0]) && needsQuotesUnquoted(f)) { // Join writes it unquoted
					return nil
				}
				inside = false
			default: // a doubled quote, or one out of place
				return nil
			}
		}
	}
	if inside { // the quotes go on past the line
		return nil
	}
	f := s[start+quoted : len(s)-quoted]
	if quoted == 0 && f != "" && quotable(f[0]) && needsQuotesUnquoted(f) {
		return nil
	}
	rec = append(rec, f)
	r.raw, r.joined, r.jok = s, s, true
	r.rec, r.ok, r.shape = rec, true, shapeQuoted
	return rec
}

// readPlainQuoted reads a line whose quoted fields hold no quote, delimiter
// or CR, and none of whose fields Join quotes, as PayPal writes every line:
// the line as Join writes it is then the line without its quotes, which it
// writes as it reads the line, in one pass and a byte at a time (the
// fields are too short to gain from more). It returns nil, having read
// nothing, for any other line.
func (r *Reader) readPlainQuoted(b []byte) []string {
	if bytes.IndexByte(b, '\r') >= 0 {
		return nil
	}
	if cap(r.buf) < len(b) {
		r.buf = make([]byte, len(b))
	}
	if cap(r.ends) <= len(b) {
		r.ends = make([]int, 0, len(b)+1)
	}
	j := r.buf[:len(b)] // the line as Join writes it, shorter than b by its quotes
	ends := r.ends[:0]  // where each field ends in j; there is room for them all
	c := r.c
	w := 0
	for i := 0; ; {
		start := w
		if i < len(b) && b[i] == '"' {
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == c {
					return nil
				}
				j[w] = b[i]
				w++
			}
			if i == len(b) { // the quotes go on past the line
				return nil
			}
			i++
		} else {
			for ; i < len(b) && b[i] != c; i++ {
				if b[i] == '"' {
					return nil
				}
				j[w] = b[i]
				w++
			}
		}
		if w > start && quotable(j[start]) && needsQuotesUnquoted(string(j[start:w])) {
			return nil
		}
		ends = append(ends, w)
		if i == len(b) {
			break
		}
		if b[i] != c {
			return nil
		}
		j[w] = c
		w++
		i++
	}
	s := string(j[:w])
	rec, from := slices.Grow(r.rec[:0], len(ends))[:len(ends)], 0
	for k, e := range ends {
		rec[k] = s[from:e]
		from = e + 1
	}
	r.rawb, r.joined, r.jok = b, s, true
	r.rec, r.ok, r.shape = rec, true, shapeQuoted
	return rec
}

// field is a field of a line with quotes: its content's place in the line
// and what it is (fieldQuoted...).
type field struct {
	start, end int
	flag       uint8
}

// quotable reports whether a field that starts with c may be one Join
// quotes for how it starts: with a space, or as \..
func quotable(c byte) bool { return c <= ' ' || c >= utf8.RuneSelf || c == '\\' }

// needsQuotesUnquoted is needsQuotes for a field that holds no quote,
// delimiter, CR or LF.
func needsQuotesUnquoted(f string) bool { return f == `\.` || leadingSpace(f) }

// readLines reads a record whose first line, orig with n bytes of content,
// holds a quote, as encoding/csv does: field by field, reading more lines
// while a quoted field goes on. A quoted field that goes on past
// maxQuoted or maxQuotedLines, or a record that goes on past maxLine, is
// a *BoundError.
func (r *Reader) readLines(orig []byte, n int, nl bool) ([]string, int, error) {
	recLine := r.numLine
	r.spans = r.spans[:0]
	multi := false   // the record's text is in r.multi, not orig
	base := 0        // offset of the current line in the record's text
	line := orig[:n] // the unread content of the current line
	off := 0         // offset of line in the current line
	pos := struct{ line, col int }{recLine, 1}
	var perr *csv.ParseError
	commaLen := len(r.comma)
parse:
	for {
		if len(line) == 0 || line[0] != '"' {
			// An unquoted field: up to the next delimiter, and no quote in it.
			i := r.index(line)
			field := line
			if i >= 0 {
				field = line[:i]
			}
			if j := bytes.IndexByte(field, '"'); j >= 0 {
				perr = &csv.ParseError{StartLine: recLine, Line: r.numLine, Column: pos.col + j, Err: csv.ErrBareQuote}
				break parse
			}
			r.spans = append(r.spans, span{start: base + off, end: base + off + len(field)})
			if i < 0 {
				break parse
			}
			line = line[i+commaLen:]
			off += i + commaLen
			pos.col += i + commaLen
			continue parse
		}
		// A quoted field: up to a quote that is not doubled, over lines.
		line = line[1:]
		off++
		pos.col++
		start, esc := base+off, false
		open := r.numLine // the line the quote opened on
		for {
			if i := bytes.IndexByte(line, '"'); i >= 0 {
				line = line[i+1:]
				off += i + 1
				pos.col += i + 1
				switch {
				case len(line) > 0 && line[0] == '"':
					esc = true
					line = line[1:]
					off++
					pos.col++
				case len(line) >= commaLen && string(line[:commaLen]) == r.comma:
					r.spans = append(r.spans, span{start: start, end: base + off - 1, esc: esc})
					line = line[commaLen:]
					off += commaLen
					pos.col += commaLen
					continue parse
				case len(line) == 0:
					r.spans = append(r.spans, span{start: start, end: base + off - 1, esc: esc})
					break parse
				default:
					perr = &csv.ParseError{StartLine: recLine, Line: r.numLine, Column: pos.col - 1, Err: csv.ErrQuote}
					break parse
				}
				continue
			}
			if len(line) == 0 && !nl {
				// The input ends inside the quotes.
				r.open = true
				perr = &csv.ParseError{StartLine: recLine, Line: pos.line, Column: pos.col, Err: csv.ErrQuote}
				break parse
			}
			// The field goes on on the next line. A CRLF line end in it
			// is read as LF.
			pos.col += len(line)
			if nl {
				pos.col++
				if n < len(orig)-1 {
					esc = true
				}
			}
			if !multi {
				r.multi = append(r.multi[:0], orig...)
				multi = true
			}
			next, k, knl, err := r.readLine()
			switch {
			case err == io.EOF:
				line, nl = nil, false
			case err != nil:
				return nil, 0, err
			case r.over || len(r.multi)+len(next) > maxLine:
				return nil, recLine, longRow(recLine)
			case len(r.multi)-start > maxQuoted || r.numLine-open >= maxQuotedLines:
				return nil, open, openQuote(open, len(r.multi)-start)
			default:
				base = len(r.multi)
				r.multi = append(r.multi, next...)
				orig, n, nl = next, k, knl
				line, off = next[:k], 0
				if k > 0 || knl {
					pos.line++
					pos.col = 1
				}
			}
		}
	}

	text := orig[:n]
	if multi {
		text = r.multi[:base+n]
	}
	raw := string(text)
	r.raw = raw
	if perr != nil {
		return nil, recLine, perr
	}
	esc := r.esc[:0]
	for i, s := range r.spans {
		if s.esc {
			esc = unescape(esc, raw[s.start:s.end])
			r.spans[i].u = len(esc)
		}
	}
	r.esc = esc
	var unesc string
	if len(esc) > 0 {
		unesc = string(esc)
	}
	rec, at := r.rec[:0], 0
	for _, s := range r.spans {
		if s.esc {
			rec = append(rec, unesc[at:s.u])
			at = s.u
		} else {
			rec = append(rec, raw[s.start:s.end])
		}
	}
	r.rec, r.ok, r.shape = rec, true, shapeLines
	return rec, recLine, nil
}

// Join writes rec back as one delimited line, quoting fields as
// encoding/csv's Writer would; it is how a record's raw text is kept
// (Reader.Joined gives it without building it when the input already is
// written so). It builds the line directly, since a csv.Writer per row (and
// its 4 KiB buffer) was most of a parse's allocations.
func Join(rec []string, comma rune) string {
	n := len(rec) * utf8.RuneLen(comma)
	for _, f := range rec {
		n += len(f) + 2
	}
	var b strings.Builder
	b.Grow(n)
	for i, f := range rec {
		if i > 0 {
			if comma < utf8.RuneSelf {
				b.WriteByte(byte(comma))
			} else {
				b.WriteRune(comma)
			}
		}
		if !needsQuotes(f, comma) {
			b.WriteString(f)
			continue
		}
		writeQuoted(&b, f)
	}
	return b.String()
}

// writeQuoted writes f in quotes, doubling the quotes in it.
func writeQuoted(b *strings.Builder, f string) {
	b.WriteByte('"')
	for {
		j := strings.IndexByte(f, '"')
		if j < 0 {
			break
		}
		b.WriteString(f[:j+1])
		b.WriteByte('"')
		f = f[j+1:]
	}
	b.WriteString(f)
	b.WriteByte('"')
}

// needsQuotes is encoding/csv's rule for quoting a field on output.
func needsQuotes(f string, comma rune) bool {
	if f == "" {
		return false
	}
	if f == `\.` {
		return true
	}
	if comma < utf8.RuneSelf {
		c := byte(comma)
		for i := 0; i < len(f); i++ {
			// '"', '\n' and '\r' are all at most '"'.
			if b := f[i]; b == c || b <= '"' && (b == '"' || b == '\n' || b == '\r') {
				return true
			}
		}
	} else if strings.ContainsRune(f, comma) || strings.ContainsAny(f, "\"\r\n") {
		return true
	}
	return leadingSpace(f)
}

// Trim is strings.TrimSpace, without a call for the fields that neither
// start nor end with a space, as most fields do: their first and last bytes
// are ASCII from '!' on (0x21 to 0x7F).
func Trim(f string) string {
	if f != "" && (f[0]-'!' > 0x5e || f[len(f)-1]-'!' > 0x5e) {
		f = strings.TrimSpace(f)
	}
	return f
}

// Header maps column names to their positions. Names are compared after
// trimming spaces and ignoring case. A Header is not safe for concurrent use.
type Header struct {
	Names []string
	index map[string]int // lower-cased name → position
	exact map[string]int // the name as the caller spelled it → position, so lookups do not lower-case each time
	dup   map[string]int // lower-cased name → position of its second column, for the names given twice
}

// NewHeader maps the columns of a header record.
func NewHeader(rec []string) *Header {
	h := &Header{Names: make([]string, len(rec)), index: make(map[string]int, len(rec)), exact: map[string]int{}}
	for i, n := range rec {
		n = strings.TrimSpace(n)
		h.Names[i] = n
		k := strings.ToLower(n)
		if _, dup := h.index[k]; !dup {
			h.index[k] = i
		} else if _, ok := h.dup[k]; !ok {
			if h.dup == nil {
				h.dup = map[string]int{}
			}
			h.dup[k] = i
		}
	}
	return h
}

// Index returns the position of the named column, or -1.
func (h *Header) Index(name string) int {
	if i, ok := h.exact[name]; ok {
		return i
	}
	i, ok := h.index[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		i = -1
	}
	h.exact[name] = i
	return i
}

// Unique returns an error naming the first of names, the columns a parser
// reads, that the header names more than once (compared as Index compares
// them): which of the two the provider meant cannot be told, and Index
// would give the first. A column the parser does not read may be repeated.
func (h *Header) Unique(names ...string) error {
	for _, n := range names {
		k := strings.ToLower(strings.TrimSpace(n))
		if j, ok := h.dup[k]; ok {
			i := h.index[k]
			return fmt.Errorf("the header names column %q twice (columns %d and %d)", h.Names[i], i+1, j+1)
		}
	}
	return nil
}

// Has reports whether the header has the named column.
func (h *Header) Has(name string) bool { return h.Index(name) >= 0 }

// Require returns an error naming every column in names that the header lacks.
func (h *Header) Require(names ...string) error {
	var missing []string
	for _, n := range names {
		if !h.Has(n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing required column(s) %s", strings.Join(missing, ", "))
	}
	return nil
}

// Get returns the trimmed value of the named column in rec, or "" when the
// column is absent or the record is short.
func (h *Header) Get(rec []string, name string) string {
	i := h.Index(name)
	if i < 0 || i >= len(rec) {
		return ""
	}
	return Trim(rec[i])
}

// Malformed returns err as the *csv.ParseError that Read returns for input
// that is not well-formed CSV, or nil. It is errors.As without a target
// declared in the caller's read loop, where it escaped to the heap on every
// row.
func Malformed(err error) *csv.ParseError {
	if err == nil {
		return nil
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// Memo remembers what a parser made of the first few distinct values of a
// column, such as a transaction type or a currency: a report holds a
// handful, and comparing a value with each of them costs less than hashing
// it for a map.
type Memo[V any] struct {
	keys []string
	vals []V
}

// memoSize bounds a Memo, so that a column of distinct values (ids where a
// type should be) does not make every lookup long.
const memoSize = 16

// Get returns what was remembered for s.
func (m *Memo[V]) Get(s string) (V, bool) {
	for i, k := range m.keys {
		if k == s {
			return m.vals[i], true
		}
	}
	var zero V
	return zero, false
}

// Put remembers v for s, unless the Memo is full.
func (m *Memo[V]) Put(s string, v V) {
	if len(m.keys) < memoSize {
		m.keys = append(m.keys, s)
		m.vals = append(m.vals, v)
	}
}
