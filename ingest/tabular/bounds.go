package tabular

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// A few megabytes of gzip can expand to one line of gigabytes, and one
// quote that is never closed makes the rest of a file one field: read
// whole, either would take all the memory there is. Reading holds no more
// than the bounds below of one row.

// MaxLine bounds one line of a delimited input, and one row that spans
// lines; the XML reader (camt) bounds one element or text node by it too.
// It is the bound the reader of webhook dumps has on a line, and far more
// than any provider writes in one row.
const MaxLine = 64 << 20

// MaxQuoted and MaxQuotedLines bound a quoted field that goes on past its
// line: it may hold at most MaxQuoted bytes and run over at most
// MaxQuotedLines lines, whichever comes first. A description that spans a
// few lines stays far below both; a quote that is never closed reaches one
// of them.
const (
	MaxQuoted      = 1 << 20
	MaxQuotedLines = 10000
)

// maxLine, maxQuoted and maxQuotedLines are the bounds in force: the
// constants, except in tests, which lower them so as not to need inputs of
// that size.
var maxLine, maxQuoted, maxQuotedLines = MaxLine, MaxQuoted, MaxQuotedLines

// keptOfLong is how much of a line over maxLine is kept as its raw text.
const keptOfLong = 4 << 10

// ErrLineTooLong is the Err of the *csv.ParseError that Read returns for a
// line longer than MaxLine. The rest of the line is skipped, not held, and
// reading goes on with the next line; Raw gives the line's first 4 KiB.
var ErrLineTooLong = errors.New("the line is longer than the bound on one line")

// BoundError is the error of an input that a bound makes unreadable from
// the row it names on: a quoted field that runs on past MaxQuoted or
// MaxQuotedLines, most likely a quote never closed, or a row over MaxLine
// that spans lines. Where such a row ends, and so where the next one
// starts, cannot be told, so reading cannot go on.
type BoundError struct {
	Line int    // the line the quote opened on, or the row started on
	What string // what went past which bound, with Line
}

func (e *BoundError) Error() string { return e.What }

// FormatBytes writes a bound for people: "20 GiB", "64 MiB", "4 KiB",
// "40 bytes".
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// kept returns how much of a line over maxLine, of which b is the start,
// is kept as its raw text: up to keptOfLong bytes, not cutting a UTF-8
// sequence in two.
func kept(b []byte) int {
	n := min(len(b), keptOfLong, maxLine)
	for i := 1; i < utf8.UTFMax && n > 0 && n < len(b) && !utf8.RuneStart(b[n]); i++ {
		n--
	}
	return n
}

// overReason is the reason a line over maxLine, read last, is rejected.
func (r *Reader) overReason(line int) string {
	return fmt.Sprintf("line %d is longer than %s, the bound on one line: it is not read, and only its first %s are kept as its raw text",
		line, FormatBytes(int64(maxLine)), FormatBytes(int64(len(r.raw))))
}

// openQuote is the error of a quoted field, opened on line open, that goes
// on past the bounds; it has bytes bytes before the last line read.
func openQuote(open, bytes int) error {
	bounds := fmt.Sprintf("a quoted field may run over at most %d lines and hold at most %s", maxQuotedLines, FormatBytes(int64(maxQuoted)))
	if bytes > maxQuoted {
		return &BoundError{Line: open, What: fmt.Sprintf("a quote opened on line %d is not closed within %s (%s)", open, FormatBytes(int64(maxQuoted)), bounds)}
	}
	return &BoundError{Line: open, What: fmt.Sprintf("a quote opened on line %d is never closed within %d lines (%s)", open, maxQuotedLines, bounds)}
}

// longRow is the error of a row, starting on line start, that spans lines
// and goes on past maxLine.
func longRow(start int) error {
	return &BoundError{Line: start, What: fmt.Sprintf("the row starting on line %d is longer than %s, the bound on one row", start, FormatBytes(int64(maxLine)))}
}
