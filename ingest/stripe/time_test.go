package stripe

import (
	"testing"
	"time"
)

// FuzzParseReportTime checks parseReportTime against what it did before it
// read Stripe's own forms itself: time.ParseInLocation with each layout.
func FuzzParseReportTime(f *testing.F) {
	for _, s := range []string{"2025-03-01 12:34:56", "2025-03-01T12:34:56", "2025-03-01T12:34:56Z", "2024-03-31 02:30:00",
		"2023-02-29 00:00:00", "2025-03-01 24:00:00", "2025-03-01 1:02:03"} {
		f.Add(s)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		f.Skip(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, loc := range []*time.Location{time.UTC, ny} {
			got, err := parseReportTime(s, loc)
			var want time.Time
			var werr error
			for _, l := range reportLayouts {
				var w time.Time
				if w, werr = time.ParseInLocation(l, s, loc); werr == nil {
					want = w.UTC()
					break
				}
			}
			if (err == nil) != (werr == nil) || got != want {
				t.Fatalf("parseReportTime(%q, %v) = %v, %v; time.ParseInLocation gives %v, %v", s, loc, got, err, want, werr)
			}
		}
	})
}
