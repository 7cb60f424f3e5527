package tabular

import (
	"strings"
	"testing"
	"time"
)

func TestParseDateTime(t *testing.T) {
	ams, err := time.LoadLocation("Europe/Amsterdam")
	if err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		in      string
		sep     byte
		mid     byte
		ok      bool
		rest    string
		wantUTC string
	}{
		{"2025-03-01 12:34:56", '-', ' ', true, "", "2025-03-01T11:34:56Z"},
		{"2024-02-29T23:59:59Z", '-', 'T', true, "Z", "2024-02-29T22:59:59Z"},
		{"2024/03/31 02:30:00 -0700", '/', ' ', true, " -0700", "2024-03-31T01:30:00Z"}, // a time the clocks skip: as time.Date has it
		{"2023-02-29 00:00:00", '-', ' ', false, "", ""},
		{"2025-13-01 00:00:00", '-', ' ', false, "", ""},
		{"2025-12-01 24:00:00", '-', ' ', false, "", ""},
		{"2025-12-01 1:00:00", '-', ' ', false, "", ""},
		{"2025-12-01T10:00:00", '-', ' ', false, "", ""},
		{"2025-1a-01 10:00:00", '-', ' ', false, "", ""},
		{"2025-12-01 10:00", '-', ' ', false, "", ""},
	} {
		got, rest, ok := ParseDateTime(tc.in, tc.sep, tc.mid, ams)
		if ok != tc.ok || ok && (rest != tc.rest || got.UTC().Format(time.RFC3339) != tc.wantUTC) {
			t.Errorf("ParseDateTime(%q) = %v, %q, %v; want %s, %q, %v", tc.in, got.UTC(), rest, ok, tc.wantUTC, tc.rest, tc.ok)
		}
	}
}

// FuzzParseDateTime checks that what ParseDateTime and ParseOffset accept,
// time.ParseInLocation reads as the same time.
func FuzzParseDateTime(f *testing.F) {
	for _, s := range []string{"2025-03-01 12:34:56", "2025.03.01T12:34:56", "2024-02-29T00:00:00", "2100-02-29 00:00:00", "0000-01-01 00:00:00",
		"2024/10/27 02:30:00", "2024-03-31 02:30:00", "9999-12-31 23:59:59"} {
		f.Add(s, "+0200")
		f.Add(s, "-07:00")
	}
	ams, err := time.LoadLocation("Europe/Amsterdam")
	if err != nil {
		f.Skip(err)
	}
	f.Fuzz(func(t *testing.T, s, zone string) {
		if len(s) < 19 {
			return
		}
		s = s[:19]
		// Other separators can be read as parts of a layout.
		if !strings.ContainsRune("-/.", rune(s[4])) || s[7] != s[4] || !strings.ContainsRune(" T", rune(s[10])) {
			return
		}
		layout := "2006" + s[4:5] + "01" + s[7:8] + "02" + s[10:11] + "15:04:05"
		for _, loc := range []*time.Location{time.UTC, ams} {
			got, rest, ok := ParseDateTime(s, s[4], s[10], loc)
			if !ok {
				continue
			}
			if rest != "" {
				t.Fatalf("ParseDateTime(%q) left %q", s, rest)
			}
			want, err := time.ParseInLocation(layout, s, loc)
			if err != nil || !got.Equal(want) || got.Location() != want.Location() {
				t.Fatalf("ParseDateTime(%q) = %v, time.ParseInLocation(%q) = %v, %v", s, got, layout, want, err)
			}
		}
		for _, colon := range []bool{false, true} {
			off, ok := ParseOffset(zone, colon)
			if !ok {
				continue
			}
			l := "-0700"
			if colon {
				l = "-07:00"
			}
			want, err := time.Parse("2006-01-02 "+l, "2000-01-01 "+zone)
			if _, woff := want.Zone(); err != nil || woff != off {
				t.Fatalf("ParseOffset(%q, %v) = %d, time.Parse says %v, %v", zone, colon, off, want, err)
			}
		}
	})
}
