package csvmap

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"reconcile"
	"reconcile/ingest/ingesttest"
)

// FuzzParse reads fuzzed bytes with each of the testdata mappings, chosen by
// the first argument.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	var mappings []*Mapping
	for i, path := range files {
		mappings = append(mappings, mustMapping(f, string(ingesttest.ReadFile(f, path))))
		f.Add(uint8(i), ingesttest.ReadFile(f, strings.TrimSuffix(path, ".json")+".csv"))
	}
	f.Add(uint8(0), []byte("a;b\n\"x\n"))
	f.Add(uint8(1), []byte("id,created,amount,currency\n1,2024-01-01,\"1,0\"\"0\",EUR\n"))

	f.Fuzz(func(t *testing.T, which uint8, in []byte) {
		m := mappings[int(which)%len(mappings)]
		for _, c := range ingesttest.Check(t, in, m.Provider, func(sink reconcile.RowSink) error {
			return Parse(context.Background(), bytes.NewReader(in), Options{Mapping: m}, sink)
		}) {
			if e := c.Evidence; e != nil && e.Fee < 0 {
				t.Errorf("evidence on line %d: fee %d", e.Line, e.Fee)
			}
		}
	})
}
