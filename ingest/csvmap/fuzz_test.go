package csvmap

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var upperCode = regexp.MustCompile(`^[A-Z]{3}$`)

// FuzzParse reads fuzzed bytes with each of the testdata mappings, chosen by
// the first argument.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	var mappings []*Mapping
	for i, path := range files {
		js, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		mappings = append(mappings, mustMapping(f, string(js)))
		in, err := os.ReadFile(strings.TrimSuffix(path, ".json") + ".csv")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), in)
	}
	f.Add(uint8(0), []byte("a;b\n\"x\n"))
	f.Add(uint8(1), []byte("id,created,amount,currency\n1,2024-01-01,\"1,0\"\"0\",EUR\n"))

	f.Fuzz(func(t *testing.T, which uint8, in []byte) {
		m := mappings[int(which)%len(mappings)]
		a, errA := parse(t, m, string(in))
		b, errB := parse(t, m, string(in))
		if (errA == nil) != (errB == nil) || errA != nil && errA.Error() != errB.Error() {
			t.Fatalf("two parses of the same input: errors %v and %v", errA, errB)
		}
		if diff := cmp.Diff(a.lines, b.lines); diff != "" {
			t.Fatalf("two parses of the same input differ:\n%s", diff)
		}
		lines := bytes.Count(in, []byte("\n")) + 1
		for _, o := range a.outs {
			if o.Line < 1 || o.Line > lines {
				t.Errorf("%s on line %d, input has %d lines", o.Op, o.Line, lines)
			}
			if o.Op != "evidence" && o.Reason == "" {
				t.Errorf("%s on line %d without a reason", o.Op, o.Line)
			}
		}
		for _, e := range a.ev {
			if !upperCode.MatchString(e.Amount.Currency) {
				t.Errorf("evidence on line %d has currency %q", e.Line, e.Amount.Currency)
			}
			if e.Time.Location() != time.UTC || e.Line < 1 {
				t.Errorf("evidence on line %d has time %v, want UTC", e.Line, e.Time)
			}
			if e.Provider != m.Provider || e.Fee < 0 {
				t.Errorf("evidence on line %d: provider %q, fee %d", e.Line, e.Provider, e.Fee)
			}
		}
	})
}
