package driver

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"reconcile"
	"reconcile/ledgerdb"
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

// TestDecideWritesInKeyOrder: the states and confirmations come out in key
// order, and a key classified twice keeps its findings' order, so that a
// driver writing them in turn leaves the last state, as before the sort.
func TestDecideWritesInKeyOrder(t *testing.T) {
	tx := func(id string) []reconcile.Transaction { return []reconcile.Transaction{{ID: id}} }
	dec := Decide(&ledgerdb.FindingsParams{Discrepancies: []reconcile.Discrepancy{
		{Class: reconcile.ClassConfirmed, EffectKey: "r:charge:2", Transactions: tx("ch_2")},
		{Class: reconcile.ClassMissing, EffectKey: "r:charge:10"},
		{Class: reconcile.ClassConfirmed, EffectKey: "r:charge:1", Transactions: tx("ch_1")},
		{Class: reconcile.ClassDuplicated, EffectKey: "r:charge:10"},
	}})
	var keys []string
	for _, st := range dec.States {
		keys = append(keys, st.Key+"="+string(st.Class))
	}
	if got, want := strings.Join(keys, " "), "r:charge:1=confirmed r:charge:10=missing r:charge:10=duplicated r:charge:2=confirmed"; got != want {
		t.Errorf("states in the order %s, want %s", got, want)
	}
	if len(dec.Confirm) != 2 || dec.Confirm[0].Key != "r:charge:1" || dec.Confirm[1].Key != "r:charge:2" {
		t.Errorf("confirmations in the order %+v", dec.Confirm)
	}
	if len(dec.Findings) != 2 || dec.Findings[0].Class != reconcile.ClassMissing {
		t.Errorf("findings must keep the matcher's order: %+v", dec.Findings)
	}
	// Enough rows for the sort to leave insertion sort: a key named 50
	// times among 150 others keeps its rows in their order.
	classes := []reconcile.Class{reconcile.ClassMissing, reconcile.ClassDuplicated, reconcile.ClassMismatched, reconcile.ClassPending}
	var many []reconcile.Discrepancy
	var want []string
	for i := range 200 {
		d := reconcile.Discrepancy{Class: reconcile.ClassMissing, EffectKey: fmt.Sprintf("r:charge:%d", 199-i)}
		if i%4 == 0 {
			d.EffectKey, d.Class = "r:charge:x", classes[(i/4)%len(classes)]
			want = append(want, string(d.Class))
		}
		many = append(many, d)
	}
	var got []string
	for _, st := range Decide(&ledgerdb.FindingsParams{Discrepancies: many}).States {
		if st.Key == "r:charge:x" {
			got = append(got, string(st.Class))
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("a key's states out of their order: %v, want %v", got, want)
	}
}
