package paypal

import (
	"testing"
	"time"
)

// FuzzParseTime checks parseTime against time.Parse(timeLayout, s), which
// it stands in for.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2024/05/01 09:15:00 -0700", "2024/05/01 09:15:00 +0000", "2024/05/01 25:00:00 -0700",
		"2024-05-01T09:15:00Z", "2024/02/29 23:59:59 +2400", "2024/05/01 09:15:00 -07:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseTime(s)
		want, werr := time.Parse(timeLayout, s)
		if (err == nil) != (werr == nil) || !got.Equal(want) {
			t.Fatalf("parseTime(%q) = %v, %v; time.Parse gives %v, %v", s, got, err, want, werr)
		}
	})
}
