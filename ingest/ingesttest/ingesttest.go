// Package ingesttest is what the parsers' tests share: a sink that records
// every call, golden files, the checks that hold for any input, and the
// floor the benchmarks are compared with. Only tests import it.
package ingesttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"reconcile"
)

// Call is one sink call: evidence, reject or ignore.
type Call struct {
	Call     string              `json:"call"`
	Line     int                 `json:"line,omitempty"`
	Reason   string              `json:"reason,omitempty"`
	Raw      string              `json:"raw,omitempty"`
	Evidence *reconcile.Evidence `json:"evidence,omitempty"`
}

// String is the call as one JSON line, for test messages.
func (c Call) String() string {
	j, _ := json.Marshal(c)
	return string(j)
}

// Recorder is a RowSink that keeps every call, in order.
type Recorder struct {
	Calls []Call
}

func (r *Recorder) Evidence(e *reconcile.Evidence) error {
	c := *e // a copy: what the parser does with e afterwards is not recorded
	r.Calls = append(r.Calls, Call{Call: "evidence", Line: e.Line, Evidence: &c})
	return nil
}

func (r *Recorder) Reject(line int, raw, reason string) error {
	r.Calls = append(r.Calls, Call{Call: "reject", Line: line, Raw: raw, Reason: reason})
	return nil
}

func (r *Recorder) Ignore(line int, reason string) error {
	r.Calls = append(r.Calls, Call{Call: "ignore", Line: line, Reason: reason})
	return nil
}

// Records returns the evidence calls' records.
func (r *Recorder) Records() []*reconcile.Evidence {
	var ev []*reconcile.Evidence
	for _, c := range r.Calls {
		if c.Evidence != nil {
			ev = append(ev, c.Evidence)
		}
	}
	return ev
}

// Outcomes returns the calls without their raw rows and evidence: what a
// test compares when it asks only which rows were taken.
func (r *Recorder) Outcomes() []Call {
	out := make([]Call, len(r.Calls))
	for i, c := range r.Calls {
		out[i] = Call{Call: c.Call, Line: c.Line, Reason: c.Reason}
	}
	return out
}

// Summary returns each call as "call@line": what a test compares when it
// asks only which line had which outcome.
func Summary(calls []Call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = fmt.Sprintf("%s@%d", c.Call, c.Line)
	}
	return out
}

// Run parses with parse, which reads its input into the sink it is given,
// and returns the calls and the error.
func Run(parse func(reconcile.RowSink) error) ([]Call, error) {
	var r Recorder
	err := parse(&r)
	return r.Calls, err
}

// ErrSink is what a FailingSink fails with.
var ErrSink = errors.New("sink full")

// FailingSink records calls like a Recorder but fails those named by On
// ("evidence", "reject" or "ignore"; all of them when empty) with ErrSink.
type FailingSink struct {
	Recorder
	On string
}

func (f *FailingSink) fails(call string) bool { return f.On == "" || f.On == call }

func (f *FailingSink) Evidence(e *reconcile.Evidence) error {
	if f.fails("evidence") {
		return ErrSink
	}
	return f.Recorder.Evidence(e)
}

func (f *FailingSink) Reject(line int, raw, reason string) error {
	if f.fails("reject") {
		return ErrSink
	}
	return f.Recorder.Reject(line, raw, reason)
}

func (f *FailingSink) Ignore(line int, reason string) error {
	if f.fails("ignore") {
		return ErrSink
	}
	return f.Recorder.Ignore(line, reason)
}

// Inputs returns the contents of the files matching pattern, and fails tb
// if there are none.
func Inputs(tb testing.TB, pattern string) [][]byte {
	tb.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no files match %s: %v", pattern, err)
	}
	ins := make([][]byte, len(paths))
	for i, p := range paths {
		ins[i] = ReadFile(tb, p)
	}
	return ins
}

// ReadFile returns the file's content, or fails tb.
func ReadFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
