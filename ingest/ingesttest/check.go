package ingesttest

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
)

// Check parses in twice with parse, which reads it into the sink it is
// given, and fails t unless what holds for any input holds: the two parses
// agree; every call's line lies within the input; every rejected or
// ignored row has a reason; and every evidence is the provider's, in an
// upper-case three-letter currency, at a UTC time, with the provenance
// left to the reader. It returns the calls, for the checks of one format.
func Check(t *testing.T, in []byte, provider string, parse func(reconcile.RowSink) error) []Call {
	t.Helper()
	calls, err := Run(parse)
	again, err2 := Run(parse)
	if first, second := Render(FormatLinedCalls, calls, err), Render(FormatLinedCalls, again, err2); !bytes.Equal(first, second) {
		t.Fatalf("a second parse differs (-first +second):\n%s", cmp.Diff(string(first), string(second)))
	}
	lines := bytes.Count(in, []byte("\n")) + 1
	for _, c := range calls {
		if c.Line < 1 || c.Line > lines {
			t.Fatalf("%s on line %d of a %d-line input", c.Call, c.Line, lines)
		}
		e := c.Evidence
		if e == nil {
			if c.Reason == "" {
				t.Fatalf("%s on line %d without a reason", c.Call, c.Line)
			}
			continue
		}
		if cur := e.Amount.Currency; len(cur) != 3 || !upper(cur[0]) || !upper(cur[1]) || !upper(cur[2]) {
			t.Fatalf("line %d: currency %q", e.Line, cur)
		}
		if e.Time.Location() != time.UTC {
			t.Fatalf("line %d: time %v is not UTC", e.Line, e.Time)
		}
		if e.Provider != provider || e.URI != "" || e.SourceHash != "" {
			t.Fatalf("line %d: provider %q, URI %q, hash %q", e.Line, e.Provider, e.URI, e.SourceHash)
		}
	}
	return calls
}

func upper(b byte) bool { return 'A' <= b && b <= 'Z' }
