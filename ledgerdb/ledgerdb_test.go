package ledgerdb

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"reconcile"
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

func TestCanonicalJSON(t *testing.T) {
	a, err := CanonicalJSON([]byte(`{"b": {"y": 1, "x": [3, 2]}, "a": 1420000}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := CanonicalJSON([]byte("{\"a\":1420000,\n \"b\":{\"x\":[3,2],\"y\":1}}"))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) || string(a) != `{"a":1420000,"b":{"x":[3,2],"y":1}}` {
		t.Errorf("canonical forms differ: %s vs %s", a, b)
	}
	big, _ := CanonicalJSON([]byte(`{"amount": 92233720368547758071}`))
	if !strings.Contains(string(big), "92233720368547758071") {
		t.Errorf("a large number lost digits: %s", big)
	}
	if c, _ := CanonicalJSON([]byte(`{"x":[2,3]}`)); string(c) == string(a) {
		t.Errorf("different documents share a canonical form")
	}
}

func TestLoadMigrationsAndPending(t *testing.T) {
	fsys := fstest.MapFS{
		"001_ledger.sql": {Data: []byte("CREATE TABLE a (x int);")},
		"002_more.sql":   {Data: []byte("CREATE TABLE b (x int);")},
	}
	ms, err := LoadMigrations(fsys)
	if err != nil || len(ms) != 2 || ms[0].Name != "ledger" || ms[1].Version != 2 {
		t.Fatalf("LoadMigrations = %+v, %v", ms, err)
	}
	if p, err := Pending(ms, nil); err != nil || len(p) != 2 {
		t.Errorf("Pending(nothing applied) = %d, %v; want 2", len(p), err)
	}
	if p, err := Pending(ms, []Applied{{1, ms[0].Checksum}}); err != nil || len(p) != 1 || p[0].Version != 2 {
		t.Errorf("Pending(1 applied) = %+v, %v; want version 2", p, err)
	}
	for name, applied := range map[string][]Applied{
		"ahead":   {{1, ms[0].Checksum}, {2, ms[1].Checksum}, {3, "x"}},
		"altered": {{1, "not the same"}},
		"gap":     {{2, ms[1].Checksum}},
	} {
		if _, err := Pending(ms, applied); !errors.Is(err, reconcile.ErrSchema) {
			t.Errorf("Pending(%s) error = %v, want ErrSchema", name, err)
		}
	}
	if err := Check("sqlite:x", fsys, []Applied{{1, ms[0].Checksum}}); !errors.Is(err, reconcile.ErrSchema) || !strings.Contains(err.Error(), "reconcile migrate") {
		t.Errorf("Check(behind) = %v; want ErrSchema saying to run reconcile migrate", err)
	}
	bad := fstest.MapFS{"001_a.sql": {}, "003_c.sql": {}}
	if _, err := LoadMigrations(bad); err == nil {
		t.Errorf("LoadMigrations with a gap succeeded")
	}
	if _, err := LoadMigrations(fstest.MapFS{"init.sql": {}}); err == nil {
		t.Errorf("LoadMigrations with an unnumbered file succeeded")
	}
}
