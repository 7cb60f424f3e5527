package ledgerdb

import (
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/var/lib/x")
	tests := []struct {
		in   string
		want Location
	}{
		{"", Location{SQLite, "/var/lib/x/reconcile/ledger.db"}},
		{"postgres://u@h:5432/db", Location{Postgres, "postgres://u@h:5432/db"}},
		{"postgresql://u@h/db?sslmode=disable", Location{Postgres, "postgresql://u@h/db?sslmode=disable"}},
		{"sqlite:/tmp/l.db", Location{SQLite, "/tmp/l.db"}},
		{"sqlite:rel/l.db", Location{SQLite, "rel/l.db"}},
		{"sqlite:///tmp/l.db", Location{SQLite, "/tmp/l.db"}},
		{"ledger.db", Location{SQLite, "ledger.db"}},
	}
	for _, tc := range tests {
		got, err := ParseURL(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"mysql://u:pw@h/db", "sqlite:", "sqlite::memory:"} {
		_, err := ParseURL(bad)
		if err == nil {
			t.Errorf("ParseURL(%q) succeeded, want an error", bad)
		} else if strings.Contains(err.Error(), "pw@") {
			t.Errorf("ParseURL(%q) error shows the password: %v", bad, err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://app:s3cret@db:5432/pay": "postgres://app:xxxxx@db:5432/pay",
		"postgres://app@db/pay":             "postgres://app@db/pay",
		"postgres://db/pay?x=a@b":           "postgres://db/pay?x=xxxxx",
		"sqlite:/tmp/x.db":                  "sqlite:/tmp/x.db",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
