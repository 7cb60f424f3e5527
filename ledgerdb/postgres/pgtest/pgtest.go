// Package pgtest gives each test its own schema in a real PostgreSQL
// database: TEST_DATABASE_URL, else a server on localhost:5432. The test
// command (scripts/test) sets TEST_DATABASE_URL, starting a throwaway
// cluster when no server runs.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// DefaultURL is tried when TEST_DATABASE_URL is unset.
const DefaultURL = "postgres://localhost:5432/test?sslmode=disable"

// BaseURL returns the database the tests use.
func BaseURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Schema creates a fresh schema for t, drops it when t ends, and returns a
// URL whose connections use it.
func Schema(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	base := BaseURL()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("PostgreSQL is needed for this test and is not reachable at %s: %v\n"+
			"Run the tests with `make test` (it finds or starts PostgreSQL), or set TEST_DATABASE_URL.", base, err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		conn.Close(ctx)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
