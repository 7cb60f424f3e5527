package csvmap

import (
	"testing"
	"time"
)

// FuzzParseTimeISO checks parseTime without a layout against what it
// did before it read the common forms itself: the ISO layouts in order.
func FuzzParseTimeISO(f *testing.F) {
	for _, s := range []string{"2024-05-01T09:00:00Z", "2024-05-01 09:00:00", "2024-03-31T02:30:00", "2024-02-30T00:00:00Z",
		"2024-05-01 09:00:00Z", "2024-05-01T09:00:00+02:00", "2024-05-01", "2024-05-01T24:00:00Z"} {
		f.Add(s)
	}
	ber, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		f.Skip(err)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, loc := range []*time.Location{time.UTC, ber} {
			got, err := parseTime(v, "", loc)
			var want time.Time
			ok := false
			for _, l := range isoLayouts {
				if w, err := time.ParseInLocation(l, v, loc); err == nil {
					want, ok = w.UTC(), true
					break
				}
			}
			if (err == nil) != ok || ok && (got != want) {
				t.Fatalf("parseTime(%q, %v) = %v, %v; the ISO layouts give %v, %v", v, loc, got, err, want, ok)
			}
		}
	})
}
