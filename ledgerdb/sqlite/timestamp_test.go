package sqlite

import (
	"database/sql"
	"testing"
	"time"
)

// Applications write SQLite timestamps in the forms their drivers and
// SQLite itself produce; every one of them is read, and a time without a
// zone is UTC, as CURRENT_TIMESTAMP means it.
func TestApplicationTimestampsAreRead(t *testing.T) {
	want := time.Date(2026, 3, 1, 0, 13, 4, 0, time.UTC)
	for _, s := range []string{
		"2026-03-01 00:13:04", // CURRENT_TIMESTAMP
		"2026-03-01T00:13:04",
		"2026-03-01 00:13:04+00:00",
		"2026-03-01T00:13:04Z",
		"2026-03-01 01:13:04+01:00",
		"2026-02-28T19:13:04-05:00",
		"2026-03-01 01:13:04+0100",
		"2026-03-01 00:13:04.000",
	} {
		got, err := parseTS(sql.NullString{String: s, Valid: true})
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("parseTS(%q) = %v, %v, want %v", s, got, err, want)
		}
	}
	frac, err := parseTS(sql.NullString{String: "2026-03-01 00:13:04.123456", Valid: true})
	if err != nil || frac.Nanosecond() != 123456000 {
		t.Errorf("parseTS with a fraction = %v, %v", frac, err)
	}
	for _, bad := range []string{"", "2026-03-01", "yesterday", "2026-13-01 00:00:00"} {
		if _, err := parseTS(sql.NullString{String: bad, Valid: true}); err == nil {
			t.Errorf("parseTS(%q) = nil error, want one", bad)
		}
	}
}
