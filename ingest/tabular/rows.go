package tabular

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"

	"reconcile"
)

// checkEvery is how many records Rows.Read reads between checks of its
// context.
const checkEvery = 4096

// Rows reads a delimited input that starts with a header row, and gives
// every record after the header one outcome. Its fields are what differs
// from one format to another: the texts of its errors and the reason for
// a record that is not well-formed CSV.
type Rows struct {
	// Empty is the error for an input without even a header row, such as
	// "line 1: empty file: no header row".
	Empty string
	// Header names the header row in the error of a failed read of it,
	// which is "line N: ", Header, ": " and the reader's error.
	Header string
	// Reason gives the reason a record that is not well-formed CSV is
	// rejected with. When it is nil the reason is "malformed CSV quoting
	// at line L, column C: " and what is wrong, L and C being where the
	// quoting went wrong.
	Reason func(pe *csv.ParseError) string
	// Offset is how many lines come before the reader's first (rows a
	// format skips before its header): every line Read reports or gives
	// counts them.
	Offset int
}

// Read first reads the header record from rd. When the input holds no
// record it returns Empty as its error, and when the header cannot be read
// it returns "line N: ", Header, ": " and the reader's error, N being the
// header's line (1 when the reader names none). It gives the header record
// to header, which returns the number of fields in the header (see
// Guard.Width), or an error that Read returns as "line N: " and the error.
//
// Then Read reads the records after the header until the end of the input,
// where it returns nil, and gives each one its outcome through a Guard on
// sink (see Reader.Guard), whose Width is header's:
//
//   - a record that is not well-formed CSV is rejected through the guard,
//     on the line it starts on, with its text as Raw gives it and Reason's
//     reason, and reading goes on;
//   - any other read error stops reading, and Read returns it as "line N: "
//     and the error, N being the line after the last line read as a record;
//   - every other record is given to row with the line it starts on, its
//     text as Joined gives it and the guard, through which row gives the
//     record its outcome; row may also skip the record by returning nil
//     without one. An error from row stops reading, and Read returns it as
//     it is.
//
// Before it reads the first record after the header, and again every 4096
// records, Read checks ctx: when ctx is done it stops and returns
// ctx.Err().
func (t Rows) Read(ctx context.Context, rd *Reader, sink reconcile.RowSink, header func(rec []string) (width int, err error), row func(rec []string, line int, raw string, sink reconcile.RowSink) error) error {
	rec, line, err := rd.Read()
	switch {
	case errors.Is(err, io.EOF):
		return errors.New(t.Empty)
	case err != nil:
		return fmt.Errorf("line %d: %s: %w", max(line, 1)+t.Offset, t.Header, err)
	}
	line += t.Offset
	width, err := header(rec)
	if err != nil {
		return fmt.Errorf("line %d: %w", line, err)
	}
	guard := rd.Guard(sink)
	guard.Width = width
	last := line
	for n := 0; ; n++ {
		if n%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		rec, line, err = rd.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		line += t.Offset
		if pe := Malformed(err); pe != nil {
			if err := guard.Reject(line, rd.Raw(), t.reason(pe)); err != nil {
				return err
			}
			last = pe.Line + t.Offset
			continue
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", last+1, err)
		}
		last = line
		if err := row(rec, line, rd.Joined(), guard); err != nil {
			return err
		}
	}
}

// reason is the reason a record that is not well-formed CSV is rejected
// with: Reason's, or one that says where the quoting went wrong.
func (t Rows) reason(pe *csv.ParseError) string {
	if t.Reason != nil {
		return t.Reason(pe)
	}
	return fmt.Sprintf("malformed CSV quoting at line %d, column %d: %v", pe.Line, pe.Column, pe.Err)
}
