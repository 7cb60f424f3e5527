package tabular

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"
)

// What qf says about a field.
const (
	fieldQuoted  = 1 << iota // it was quoted
	fieldDoubled             // and held doubled quotes
	fieldNeeds               // Join quotes it, if the line holds no CR
)

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
