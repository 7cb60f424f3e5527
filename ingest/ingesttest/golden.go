package ingesttest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Format is how a package's golden files write the calls. Each package
// keeps the form its files were first written in, so that they stay as
// they are.
type Format int

const (
	// FormatCalls is one {"call": …} object a line; evidence calls leave their
	// line to the evidence (stripe).
	FormatCalls Format = iota
	// FormatLinedCalls is Calls with the line on evidence calls too (adyen,
	// paypal).
	FormatLinedCalls
	// FormatOps is one {"evidence"|"reject"|"ignore": …} object a line, with
	// "<" and "&" left as they are so that XML stays readable (camt,
	// csvmap).
	FormatOps
)

// Render writes the calls in format f, one JSON line each, and the parse
// error, if any, as a last line {"error": …}.
func Render(f Format, calls []Call, err error) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(f != FormatOps)
	for _, c := range calls {
		var v any = c
		switch {
		case f == FormatOps && c.Evidence != nil:
			v = map[string]any{c.Call: c.Evidence}
		case f == FormatOps && c.Call == "reject":
			v = map[string]any{c.Call: struct {
				Line   int
				Reason string
				Raw    string
			}{c.Line, c.Reason, c.Raw}}
		case f == FormatOps:
			v = map[string]any{c.Call: struct {
				Line   int
				Reason string
			}{c.Line, c.Reason}}
		case f == FormatCalls && c.Evidence != nil:
			c.Line = 0
			v = c
		}
		enc.Encode(v)
	}
	if err != nil {
		enc.Encode(map[string]string{"error": err.Error()})
	}
	return b.Bytes()
}

// Golden compares the calls and the error, rendered in format f, with the
// file at path; go test -update writes the file instead.
func Golden(t *testing.T, path string, f Format, calls []Call, err error) {
	t.Helper()
	got := Render(f, calls, err)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatalf("%v (run go test -update to create it)", rerr)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

// GoldenFiles parses each file matching pattern, golden files left out,
// with parse, in a subtest named after the file, and compares the outcome
// with its golden file: the same name with .golden for its extension.
func GoldenFiles(t *testing.T, pattern string, f Format, parse func(t *testing.T, path string, in []byte) ([]Call, error)) {
	paths, err := filepath.Glob(pattern)
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures match %s: %v", pattern, err)
	}
	for _, path := range paths {
		if strings.HasSuffix(path, ".golden") {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			calls, err := parse(t, path, ReadFile(t, path))
			Golden(t, strings.TrimSuffix(path, filepath.Ext(path))+".golden", f, calls, err)
		})
	}
}
