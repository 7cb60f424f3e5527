package adyen

import (
	"strings"
	"testing"
	"time"
)

// oldLocalTime is localTime as it was, with time.ParseInLocation.
func oldLocalTime(date, abbrev string, zone *time.Location) (time.Time, error) {
	t, err := time.ParseInLocation(time.DateTime, date, zone)
	if err != nil {
		return time.Time{}, err
	}
	if name, _ := t.Zone(); abbrev == "" || strings.EqualFold(name, abbrev) {
		return t, nil
	}
	for _, d := range []time.Duration{-time.Hour, time.Hour} {
		alt := t.Add(d)
		if name, _ := alt.Zone(); strings.EqualFold(name, abbrev) && alt.Format(time.DateTime) == date {
			return alt, nil
		}
	}
	return t, nil
}

// FuzzLocalTime checks localTime against what it did with time.Parse.
func FuzzLocalTime(f *testing.F) {
	for _, s := range []string{"2024-07-15 14:30:00", "2024-10-27 02:30:00", "2024-03-31 02:30:00", "2024-02-30 00:00:00", "2024-07-15T14:30:00"} {
		f.Add(s, "CEST")
		f.Add(s, "CET")
		f.Add(s, "cet")
		f.Add(s, "")
	}
	ams, err := time.LoadLocation("Europe/Amsterdam")
	if err != nil {
		f.Skip(err)
	}
	f.Fuzz(func(t *testing.T, date, abbrev string) {
		got, err := localTime(date, abbrev, ams)
		want, werr := oldLocalTime(date, abbrev, ams)
		if (err == nil) != (werr == nil) || got != want {
			t.Fatalf("localTime(%q, %q) = %v, %v; before, %v, %v", date, abbrev, got, err, want, werr)
		}
	})
}
