package ingest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"reconcile"
)

// collect is a Sink that keeps what it is given, in order.
type collect struct{ rows []any }

func (c *collect) Evidence(e *reconcile.Evidence) error { c.rows = append(c.rows, *e); return nil }
func (c *collect) Reject(r *reconcile.Rejected) error   { c.rows = append(c.rows, *r); return nil }

// spooled gives rows to a Spool and returns what its Replay gives back.
func spooled(t *testing.T, rows []any) []any {
	t.Helper()
	s, err := NewSpool()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, r := range rows {
		switch r := r.(type) {
		case reconcile.Evidence:
			err = s.Evidence(&r)
		case reconcile.Rejected:
			err = s.Reject(&r)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	got := &collect{}
	if err := s.Replay(got); err != nil {
		t.Fatal(err)
	}
	return got.rows
}

// sameRows compares rows, times as instants with their offset (a spool
// keeps a zone's offset, not its name).
func sameRows(t *testing.T, got, want []any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replayed %d rows, kept %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if ge, ok := g.(reconcile.Evidence); ok {
			we := w.(reconcile.Evidence)
			_, goff := ge.Time.Zone()
			_, woff := we.Time.Zone()
			if !ge.Time.Equal(we.Time) || goff != woff || ge.Time.IsZero() != we.Time.IsZero() {
				t.Errorf("row %d: time %v, kept %v", i, ge.Time, we.Time)
			}
			ge.Time, we.Time = time.Time{}, time.Time{}
			g, w = ge, we
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("row %d:\n got %#v\nkept %#v", i, g, w)
		}
	}
}

// Every value of every row comes back, in order: empty and hostile
// strings, extreme amounts, times of every kind, metadata nil, empty and
// full, rejected rows among the records.
func TestASpoolGivesBackWhatItKept(t *testing.T) {
	full := reconcile.Evidence{Provider: "stripe", TxID: "ch_1", Kind: reconcile.KindRefund, RawKind: "refund",
		Amount: reconcile.Money{Minor: math.MinInt64, Currency: "EUR"}, Fee: math.MaxInt64, Time: time.Date(2026, 3, 29, 1, 30, 0, 123456789, time.UTC),
		Pending: true, Webhook: true, EffectKey: "app:charge:1", ParentEffectKey: "app:charge:0", PaymentIntent: "pi_1", ParentTxID: "ch_0",
		Description: "naïve \x00 \"quoted\"\n", Metadata: map[string]string{"": "", "k": "v\u2028", "é": strings.Repeat("abc", 333)},
		URI: "s3://b/k.csv", SourceHash: "abc", Line: math.MaxInt32, Raw: "ch_1,\r\n"}
	rows := []any{
		reconcile.Evidence{},
		full,
		reconcile.Rejected{URI: "a.csv", Line: 3, Reason: "amount \"x\" is not a number", Raw: "\xff\xfe"},
		reconcile.Evidence{Failed: true, Metadata: map[string]string{}, Time: time.Date(1969, 12, 31, 23, 59, 59, 1, time.UTC)},
		reconcile.Evidence{Time: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), Amount: reconcile.Money{Minor: -1}},
		reconcile.Evidence{Time: time.Date(2026, 11, 30, 9, 0, 0, 0, time.FixedZone("CET", 3600)), Line: -1},
		reconcile.Rejected{},
	}
	sameRows(t, spooled(t, rows), rows)
}

// Random records, in random order with rejected rows, come back as kept.
func TestASpoolGivesBackRandomRows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	}
	var rows []any
	for range 20000 {
		if r.IntN(10) == 0 {
			rows = append(rows, reconcile.Rejected{URI: str(), Line: r.Int(), Reason: str(), Raw: str()})
			continue
		}
		e := reconcile.Evidence{Provider: str(), TxID: str(), Kind: reconcile.Kind(str()), RawKind: str(),
			Amount: reconcile.Money{Minor: r.Int64() - r.Int64(), Currency: str()}, Fee: r.Int64(),
			Time:    time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)).UTC(),
			Pending: r.IntN(2) == 0, Failed: r.IntN(2) == 0, Webhook: r.IntN(2) == 0, EffectKey: str(), ParentEffectKey: str(),
			PaymentIntent: str(), ParentTxID: str(), Description: str(), URI: str(), SourceHash: str(), Line: r.IntN(1 << 30), Raw: str()}
		if n := r.IntN(4); n > 0 {
			e.Metadata = map[string]string{}
			for i := range n - 1 {
				e.Metadata[fmt.Sprint(i, str())] = str()
			}
		}
		rows = append(rows, e)
	}
	sameRows(t, spooled(t, rows), rows)
}
