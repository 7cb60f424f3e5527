package tabular

import (
	"errors"
	"io"
	"strings"
	"testing"

	"reconcile"
	"reconcile/ingest/ingesttest"
)

// guarded reads in with a sink guarded for a header of width fields, and
// gives every record after the header to the guard as a parser would: a
// malformed one or one with an "x" field rejected, the others ignored. It
// returns the calls and the error that stopped the reading.
func guarded(t *testing.T, in string, width int) ([]ingesttest.Call, error) {
	t.Helper()
	r, err := NewReader(strings.NewReader(in), ',')
	if err != nil {
		t.Fatal(err)
	}
	return ingesttest.Run(func(sink reconcile.RowSink) error {
		g := r.Guard(sink)
		g.Width = width
		if _, _, err := r.Read(); err != nil {
			return err
		}
		for {
			rec, line, err := r.Read()
			switch {
			case errors.Is(err, io.EOF):
				return nil
			case Malformed(err) != nil:
				err = g.Reject(line, r.Raw(), "malformed")
			case err != nil:
				return err
			case strings.Contains(r.Raw(), "x"):
				err = g.Reject(line, r.Raw(), "an x")
			default:
				err = g.Ignore(line, strings.Join(rec, "|"))
			}
			if err != nil {
				return err
			}
		}
	})
}

func TestGuardFailsACutLastLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a,b,c\n1,2,3\n4,5,6\n", ""},
		{"a,b,c\n1,2,3\n4,5,6", ""},
		{"a,b,c\n1,2,3\r\n4,5,6\r", ""},
		{"a,b,c\n1,2,3\n4,5,6\n\n  ", ""},
		{"a,b,c\n1,x,3\n4,5,6", ""}, // a rejected row that is not the last stays a rejection
		{"a,b,c\n1,2\n4,5,6\n", ""}, // as does a short row with its line end
		{"a,b,c\n1,2,3\n\"4\n5\",6\n", ""},
		{"a,b,c\n1,2,3\n\"4,5,6\n", ""}, // an open quote, but the file's last line is whole
		{"a,b,c\n1,2,3\n4,5", "line 3: the last line is cut in the middle of a row (no line terminator, 2 of 3 fields): the file may still be being written; run again when it is complete"},
		{"a,b,c\n1,2,3\n4,\"5", "line 3: the last line is cut in the middle of a row (no line terminator, inside a quoted field)"},
		{"a,b,c\n1,2,3\n\"4\n5,6", "line 3: the last line is cut in the middle of a row (no line terminator, inside a quoted field)"},
		{"a,b,c\n1,2,3\n4,5,x", "line 3: the last line has no line terminator and its row is rejected (an x)"},
		{"a,b,c\n1,2,3\n4,5\"6,7", "line 3: the last line has no line terminator and its row is rejected (malformed)"},
	} {
		calls, err := guarded(t, tc.in, 3)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v; want it read", tc.in, err)
		case tc.want == "":
		case err == nil || !strings.Contains(err.Error(), tc.want):
			t.Errorf("%q: error %v, after %v; want %q", tc.in, err, calls, tc.want)
		default:
			var ce *CutError
			if !errors.As(err, &ce) || ce.Line != 3 {
				t.Errorf("%q: %#v; want a *CutError for line 3", tc.in, err)
			}
		}
	}
	// Without a width, only a rejection fails.
	if _, err := guarded(t, "a,b,c\n1,2,3\n4,5", 0); err != nil {
		t.Errorf("no width: %v; want the short row taken", err)
	}
}

func TestCutNamesAnUnterminatedLastLine(t *testing.T) {
	errCorrupt := errors.New("the footer is missing")
	for in, want := range map[string]string{
		"a,b\n1,2\n": "the footer is missing",
		"a,b\n1,2":   "the footer is missing; the last line has no line terminator: the file may still be being written; run again when it is complete",
	} {
		r, _ := NewReader(strings.NewReader(in), ',')
		for {
			if _, _, err := r.Read(); err != nil {
				break
			}
		}
		if got := r.Cut(errCorrupt); got.Error() != want || !errors.Is(got, errCorrupt) {
			t.Errorf("%q: Cut = %v; want %q wrapping the error", in, got, want)
		}
	}
}
