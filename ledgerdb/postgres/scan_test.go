package postgres_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/matcher"
)

// The scope reads the same whether PostgreSQL sends its values in binary,
// as pgx asks for them (read from the raw values), or as text, as over
// the simple protocol a connection pooler may need (read through pgx's
// Scan): times before 2000 and to the microsecond, a state and its since,
// a request that is no object and one that lacks its amount, and an
// effect an application wrote through plain SQL (its creation time the
// column's default, its amount a string, other fields in its request).
func TestTheScopeReadsTheSameOverEitherProtocol(t *testing.T) {
	ctx := context.Background()
	s, url := migrated(t)
	before2000 := time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	micro := time.Date(2026, 3, 29, 1, 30, 0, 1000, time.UTC)
	since := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	effects := []reconcile.Effect{
		{Key: "r:charge:1", RunID: "r", Step: "charge", Provider: "stripe", Status: reconcile.StatusConfirmed, ExternalID: "pi_1",
			Request: []byte(`{"amount": 1000, "currency": "eur", "metadata": {"a": 1}}`), CreatedAt: before2000},
		{Key: "r:charge:2", RunID: "r", Step: "charge", Provider: "stripe", Status: reconcile.StatusAttempted, Request: []byte(`[1, 2]`), CreatedAt: micro},
		{Key: "r:refund:3", RunID: "r", Step: "refund", Provider: "adyen", Status: reconcile.StatusAttempted, Request: []byte(`{"currency": "usd"}`),
			CreatedAt: micro},
	}
	if err := s.EffectLoad(ctx, effects); err != nil {
		t.Fatal(err)
	}
	c := connect(t, url)
	written := time.Now()
	if _, err := c.Exec(ctx, `INSERT INTO effect (key, run_id, step, provider, status, external_id, request)
		VALUES ('app:charge:4', 'app', 'charge', 'stripe', 'attempted', 'pi_4', '{"description": "order 4", "amount": "12.50", "currency": "EUR"}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `INSERT INTO effect_state (key, class, final, run_id, classified_at, since) VALUES ('r:charge:2', 'missing', false, 'run_0', $1, $1)`,
		since); err != nil {
		t.Fatal(err)
	}
	scope := func(s ledgerdb.Store, run string) []ledgerdb.ScopedEffect {
		var got []ledgerdb.ScopedEffect
		if _, err := s.PartitionMatch(ctx, &ledgerdb.MatchParams{RunID: run, Kinds: matcher.StepKinds()}, func(p *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
			got = append(got, p.Effects...)
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(got, func(a, b ledgerdb.ScopedEffect) int { return strings.Compare(a.Key, b.Key) })
		return got
	}
	binary := scope(s, "run_1")
	text := scope(open(t, url+"&default_query_exec_mode=simple_protocol", time.Now), "run_2")
	if d := cmp.Diff(binary, text); d != "" {
		t.Errorf("the scope read in binary (-) and as text (+):\n%s", d)
	}
	want := []string{
		`app:charge:4 stripe charge attempted pi_4 (now) {"amount":"12.50","currency":"EUR"}  0001-01-01T00:00:00Z false`,
		`r:charge:1 stripe charge confirmed pi_1 1999-12-31T23:59:59.999999Z {"amount":1000,"currency":"eur"}  0001-01-01T00:00:00Z false`,
		`r:charge:2 stripe charge attempted  2026-03-29T01:30:00.000001Z [1, 2] missing 2026-01-02T03:04:05.123456Z false`,
		`r:refund:3 adyen refund attempted  2026-03-29T01:30:00.000001Z {"amount":null,"currency":"usd"}  0001-01-01T00:00:00Z false`,
	}
	for i, e := range binary {
		if e.Key == "app:charge:4" { // created now, by the column's default
			if e.CreatedAt.Before(written.Add(-time.Minute)) || e.CreatedAt.After(time.Now().Add(time.Minute)) {
				t.Errorf("%s created at %s, written at %s", e.Key, e.CreatedAt, written)
			}
			e.CreatedAt = time.Time{}
		}
		got := strings.Join([]string{e.Key, e.Provider, e.Step, string(e.Status), e.ExternalID, created(e.CreatedAt),
			string(e.Request), string(e.State), e.Since.Format(time.RFC3339Nano), strconv.FormatBool(e.Final)}, " ")
		if i >= len(want) || got != want[i] {
			t.Errorf("effect %d read as\n%s", i, got)
		}
	}
	if len(binary) != len(want) {
		t.Errorf("%d effects in scope, want %d", len(binary), len(want))
	}
}

// created is how the scope's want list writes a creation time: (now)
// for one the test cleared.
func created(t time.Time) string {
	if t.IsZero() {
		return "(now)"
	}
	return t.Format(time.RFC3339Nano)
}
