package stripe

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"reconcile"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// call is one sink call, as the golden files render it.
type call struct {
	Call     string              `json:"call"`
	Line     int                 `json:"line,omitempty"`
	Reason   string              `json:"reason,omitempty"`
	Raw      string              `json:"raw,omitempty"`
	Evidence *reconcile.Evidence `json:"evidence,omitempty"`
}

// recorder is a RowSink that keeps every call.
type recorder struct {
	calls []call
}

func (r *recorder) Evidence(e *reconcile.Evidence) error {
	c := *e
	r.calls = append(r.calls, call{Call: "evidence", Evidence: &c})
	return nil
}

func (r *recorder) Reject(line int, raw, reason string) error {
	r.calls = append(r.calls, call{Call: "reject", Line: line, Raw: raw, Reason: reason})
	return nil
}

func (r *recorder) Ignore(line int, reason string) error {
	r.calls = append(r.calls, call{Call: "ignore", Line: line, Reason: reason})
	return nil
}

// line returns the line of a call.
func (c call) line() int {
	if c.Evidence != nil {
		return c.Evidence.Line
	}
	return c.Line
}

// render writes the calls as JSON lines, one per call, with the parse
// error (if any) last.
func render(calls []call, err error) []byte {
	var b bytes.Buffer
	for _, c := range calls {
		j, _ := json.Marshal(c)
		b.Write(j)
		b.WriteByte('\n')
	}
	if err != nil {
		j, _ := json.Marshal(map[string]string{"error": err.Error()})
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// parseFunc is ParseItemized or ParseEvents with its options bound.
type parseFunc func(ctx context.Context, data []byte, sink reconcile.RowSink) error

func itemized(opt ItemizedOptions) parseFunc {
	return func(ctx context.Context, data []byte, sink reconcile.RowSink) error {
		return ParseItemized(ctx, bytes.NewReader(data), opt, sink)
	}
}

func events(ctx context.Context, data []byte, sink reconcile.RowSink) error {
	return ParseEvents(ctx, bytes.NewReader(data), EventsOptions{}, sink)
}

// run parses data and returns the calls and the error.
func run(t testing.TB, parse parseFunc, data []byte) ([]call, error) {
	t.Helper()
	var r recorder
	err := parse(context.Background(), data, &r)
	return r.calls, err
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, diff)
	}
}
