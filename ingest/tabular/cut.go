package tabular

import (
	"fmt"

	"reconcile"
)

// A file that is still being written when it is read ends in the middle of
// a row. Its last line then has no line terminator, but so has the last
// line of many complete files: a last line without one is taken only when
// the row it holds is complete and valid, and otherwise the whole input is
// unreadable, so that a run reads it again once it is whole rather than
// take a part of it for the provider's account.

// CutError is the error of an input whose last line has no line terminator
// and holds a row that is incomplete or rejected: the file may still be
// being written.
type CutError struct {
	Line int    // the line the row starts on
	What string // what is wrong with the row
}

func (e *CutError) Error() string {
	return fmt.Sprintf("line %d: %s: the file may still be being written; run again when it is complete", e.Line, e.What)
}

// Unterminated reports whether the record Read last returned, or the text
// of the malformed one, ends the input without a line terminator.
func (r *Reader) Unterminated() bool { return r.cut }

// Guard returns sink guarded against a cut last line: when the record the
// reader last returned ends the input without a line terminator, rejecting
// it, or taking it with fewer fields than the header (Width), fails with a
// *CutError instead. A line over MaxLine, which the parser rejects as
// malformed, is rejected with the reader's reason, which names the line
// and the bound. A parser passes the guard to the code that gives each
// record its outcome, and returns the error as it returns a sink's.
func (r *Reader) Guard(sink reconcile.RowSink) *Guard {
	return &Guard{RowSink: sink, rd: r}
}

// Guard is a sink guarded by Reader.Guard.
type Guard struct {
	reconcile.RowSink
	rd *Reader
	// Width is the number of fields in the header, 0 when rows differ in
	// width (PayPal's): a shorter last row is cut, whatever the parser
	// makes of it.
	Width int
}

func (g *Guard) Evidence(e *reconcile.Evidence) error {
	if err := g.incomplete(e.Line); err != nil {
		return err
	}
	return g.RowSink.Evidence(e)
}

func (g *Guard) Ignore(line int, reason string) error {
	if err := g.incomplete(line); err != nil {
		return err
	}
	return g.RowSink.Ignore(line, reason)
}

func (g *Guard) Reject(line int, raw, reason string) error {
	if g.rd.over {
		// The parser took the record for malformed CSV: its reason is
		// the reader's, which names the bound.
		reason = g.rd.overReason(line)
	}
	if !g.rd.cut {
		return g.RowSink.Reject(line, raw, reason)
	}
	if err := g.incomplete(line); err != nil {
		return err
	}
	return &CutError{Line: line, What: "the last line has no line terminator and its row is rejected (" + reason + ")"}
}

// incomplete returns the error for a last record, starting on line, that
// is cut short: it ends inside quotes or lacks fields. A line of nothing
// but spaces and delimiters holds no row to cut, whatever its width.
func (g *Guard) incomplete(line int) error {
	r := g.rd
	switch {
	case !r.cut:
		return nil
	case r.open:
		return &CutError{Line: line, What: "the last line is cut in the middle of a row (no line terminator, inside a quoted field)"}
	case r.ok && len(r.rec) < g.Width && !blank(r.rec):
		return &CutError{Line: line, What: fmt.Sprintf("the last line is cut in the middle of a row (no line terminator, %d of %d fields)", len(r.rec), g.Width)}
	}
	return nil
}

// Cut adds to err, which stopped a parse at the record the reader last
// returned or at the end of the input after it, that the input's last line
// has no line terminator, when that is so: the file may be incomplete
// because it is still being written, not because it is corrupt.
func (r *Reader) Cut(err error) error {
	if err == nil || !r.cut {
		return err
	}
	return fmt.Errorf("%w; the last line has no line terminator: the file may still be being written; run again when it is complete", err)
}

// blank reports whether every field of rec is empty or spaces.
func blank(rec []string) bool {
	for _, f := range rec {
		if Trim(f) != "" {
			return false
		}
	}
	return true
}
