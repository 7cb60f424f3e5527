package driver

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"reconcile"
)

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
