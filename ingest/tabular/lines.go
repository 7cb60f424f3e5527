package tabular

import (
	"bytes"
	"encoding/csv"
	"io"
)

// span is a field's place in its record's raw text. A quoted field that
// holds doubled quotes or a CRLF line end differs from its raw text (esc);
// u is then the end of its content in Reader.esc.
type span struct {
	start, end int
	esc        bool
	u          int
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
