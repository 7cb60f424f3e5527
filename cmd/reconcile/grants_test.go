package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/ledgerdb/postgres"
)

// roleLedger is a PostgreSQL ledger whose URL connects as a role given
// exactly the documented grants (postgres.Grants, which the README shows):
// the application's rows are written through Open, as the schema's owner.
func roleLedger(t *testing.T) *ledgerdbtest.Ledger {
	l := ledgerdbtest.New(t, "postgres")
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, l.URL)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	role := "reconcile_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(ctx, "DROP OWNED BY "+role+"; DROP ROLE "+role); admin.Close(ctx) })
	u, _ := url.Parse(l.URL)
	sql := regexp.MustCompile(`\breconcile\b`).ReplaceAllString(postgres.Grants, role)
	sql = strings.ReplaceAll(sql, "SCHEMA public", "SCHEMA "+u.Query().Get("search_path"))
	if _, err := admin.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return &ledgerdbtest.Ledger{Driver: "postgres", URL: u.String(), Open: l.Open}
}

// A run --apply as the job's least-privileged role refunds the duplicates
// and redelivers the missing effects, and a second run makes no call:
// the grants allow everything the job does.
func TestApplyRunsUnderTheDocumentedGrants(t *testing.T) {
	w := newApplyWorld(t, roleLedger(t))
	code, first, errOut := w.reconcile("")
	if code != 0 || first == nil {
		t.Fatalf("first run exited %d: %s", code, errOut)
	}
	for _, d := range first.Discrepancies {
		for _, x := range d.Actions {
			if x.Outcome != "applied" {
				t.Errorf("%s %s is %s, want applied", x.Kind, x.Key, x.Outcome)
			}
		}
	}
	w.check()
	before := w.calls.Load()
	code, second, errOut := w.reconcile("")
	if code != 0 || second == nil || w.calls.Load() != before {
		t.Fatalf("second run exited %d, %d calls: %s", code, w.calls.Load()-before, errOut)
	}
}
