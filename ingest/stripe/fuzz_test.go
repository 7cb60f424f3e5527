package stripe

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// addSeeds adds the fixtures in testdata whose names match pattern.
func addSeeds(f *testing.F, pattern string, add func(data []byte)) {
	paths, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seeds for %s: %v", pattern, err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		add(data)
	}
}

// checkInvariants checks what must hold for any input: every record has an
// upper-case three-letter currency, a line and a UTC time; every outcome's
// line lies within the input; and a second parse gives the same result.
func checkInvariants(t *testing.T, parse parseFunc, data []byte) []call {
	calls, err := run(t, parse, data)
	lines := bytes.Count(data, []byte("\n")) + 1
	for _, c := range calls {
		if l := c.line(); l < 1 || l > lines {
			t.Fatalf("%s on line %d of a %d-line input", c.Call, l, lines)
		}
		e := c.Evidence
		if e == nil {
			if c.Reason == "" {
				t.Fatalf("%s on line %d without a reason", c.Call, c.Line)
			}
			continue
		}
		cur := e.Amount.Currency
		if len(cur) != 3 || cur[0] < 'A' || cur[0] > 'Z' || cur[1] < 'A' || cur[1] > 'Z' || cur[2] < 'A' || cur[2] > 'Z' {
			t.Fatalf("line %d: currency %q", e.Line, cur)
		}
		if e.Time.Location() != time.UTC {
			t.Fatalf("line %d: time %v is not UTC", e.Line, e.Time)
		}
		if e.Provider != provider || e.URI != "" || e.SourceHash != "" {
			t.Fatalf("line %d: provider %q, URI %q, hash %q", e.Line, e.Provider, e.URI, e.SourceHash)
		}
	}
	again, err2 := run(t, parse, data)
	if first, second := render(calls, err), render(again, err2); !bytes.Equal(first, second) {
		t.Fatalf("a second parse differs (-first +second):\n%s", cmp.Diff(string(first), string(second)))
	}
	return calls
}

func FuzzParseItemized(f *testing.F) {
	addSeeds(f, "itemized_*.csv", func(data []byte) { f.Add(data, false) })
	f.Add([]byte(itemizedHeader+"\n"+itemizedRow(baseRow())+"\n"), false)
	f.Add([]byte("currency;gross;reporting_category;created;source_id\nEUR;\"1.234,5\";charge;2025-01-01 00:00:00;ch_1\n"), true)
	f.Add([]byte("currency,gross,reporting_category,created_utc,source_id\nkwd,1.2345,refund,2025-01-01T00:00:00Z,\"re_\"\"1\"\n"), false)
	berlin := time.FixedZone("CET", 3600)
	f.Fuzz(func(t *testing.T, data []byte, comma bool) {
		calls := checkInvariants(t, itemized(ItemizedOptions{Location: berlin, DecimalComma: comma}), data)
		// A CSV row has exactly one outcome: no line may carry two.
		seen := map[int]string{}
		for _, c := range calls {
			if prev, ok := seen[c.line()]; ok {
				t.Fatalf("line %d has a %s and a %s", c.line(), prev, c.Call)
			}
			seen[c.line()] = c.Call
		}
	})
}

func FuzzParseEvents(f *testing.F) {
	addSeeds(f, "events*", func(data []byte) { f.Add(data) })
	f.Add([]byte(`{"received_at":1,"body":"{\"id\":\"evt_1\",\"object\":\"event\",\"type\":\"payout.paid\",\"created\":1,\"data\":{\"object\":{\"id\":\"po_1\",\"amount\":5,\"currency\":\"jpy\"}}}"}`))
	f.Add([]byte("[\n{\"id\":\"evt_1\",\"type\":\"charge.refunded\",\"created\":2,\"data\":{\"object\":{\"id\":\"ch_1\",\"refunds\":{\"data\":[{\"id\":\"re_1\",\"amount\":3,\"currency\":\"kwd\"}]}}}}\n]"))
	f.Add([]byte("{\n\"id\": \"evt_1\"\n}\n{\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkInvariants(t, events, data)
	})
}
