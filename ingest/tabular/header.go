package tabular

import (
	"encoding/csv"
	"errors"
	"fmt"
	"strings"
)

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
