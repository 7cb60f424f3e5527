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
	"unicode"
	"unicode/utf8"
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

// Join writes rec back as one delimited line, quoting fields as
// encoding/csv's Writer would; it is how a record's raw text is kept. It
// builds the line directly, since a csv.Writer per row (and its 4 KiB
// buffer) was most of a parse's allocations.
func Join(rec []string, comma rune) string {
	n := len(rec) * utf8.RuneLen(comma)
	for _, f := range rec {
		n += len(f) + 2
	}
	var b strings.Builder
	b.Grow(n)
	for i, f := range rec {
		if i > 0 {
			b.WriteRune(comma)
		}
		if !needsQuotes(f, comma) {
			b.WriteString(f)
			continue
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(f, `"`, `""`))
		b.WriteByte('"')
	}
	return b.String()
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
		for i := 0; i < len(f); i++ {
			if c := f[i]; c == '\n' || c == '\r' || c == '"' || c == byte(comma) {
				return true
			}
		}
	} else if strings.ContainsRune(f, comma) || strings.ContainsAny(f, "\"\r\n") {
		return true
	}
	r, _ := utf8.DecodeRuneInString(f)
	return unicode.IsSpace(r)
}

// Header maps column names to their positions. Names are compared after
// trimming spaces and ignoring case. A Header is not safe for concurrent use.
type Header struct {
	Names []string
	index map[string]int // lower-cased name → position
	exact map[string]int // the name as the caller spelled it → position, so lookups do not lower-case each time
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
