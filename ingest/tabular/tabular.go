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
	"fmt"
	"io"
	"strings"
)

// Reader reads records from delimited text.
type Reader struct {
	csv   *csv.Reader
	Comma rune // the delimiter in use
}

var bom = []byte{0xEF, 0xBB, 0xBF}

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
	c := csv.NewReader(br)
	c.Comma = comma
	c.FieldsPerRecord = -1
	c.ReuseRecord = true
	return &Reader{csv: c, Comma: comma}, nil
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
// well-formed CSV is returned as a *csv.ParseError, after which reading may go
// on with the next line.
func (r *Reader) Read() (rec []string, line int, err error) {
	rec, err = r.csv.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, pe.StartLine, err
		}
		return nil, 0, err
	}
	line, _ = r.csv.FieldPos(0)
	return rec, line, nil
}

// Join writes rec back as one delimited line, quoting where needed. It is how
// a rejected record's raw text is kept.
func Join(rec []string, comma rune) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Comma = comma
	w.Write(rec)
	w.Flush()
	return strings.TrimRight(b.String(), "\n")
}

// Header maps column names to their positions. Names are compared after
// trimming spaces and ignoring case.
type Header struct {
	Names []string
	index map[string]int
}

// NewHeader maps the columns of a header record.
func NewHeader(rec []string) *Header {
	h := &Header{Names: make([]string, len(rec)), index: make(map[string]int, len(rec))}
	for i, n := range rec {
		n = strings.TrimSpace(n)
		h.Names[i] = n
		k := strings.ToLower(n)
		if _, dup := h.index[k]; !dup {
			h.index[k] = i
		}
	}
	return h
}

// Index returns the position of the named column, or -1.
func (h *Header) Index(name string) int {
	if i, ok := h.index[strings.ToLower(name)]; ok {
		return i
	}
	return -1
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
	return strings.TrimSpace(rec[i])
}
