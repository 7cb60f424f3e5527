package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"reconcile/ledgerdb/postgres"
	"reconcile/ledgerdb/postgres/pgtest"
)

// pgSite is a schema of its own and three roles of their own in the test
// database: the applications', the migrating one (which owns the schema, as
// the README says) and the job's, named as the README's examples name them
// plus a suffix.
type pgSite struct {
	schema              string
	app, migrator, role string
	admin               *pgx.Conn
	base                *url.URL
}

func newPgSite(t *testing.T) *pgSite {
	t.Helper()
	ctx := context.Background()
	base, err := url.Parse(pgtest.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, base.String())
	if err != nil {
		t.Fatalf("PostgreSQL is needed for this test and is not reachable at %s: %v", base.Redacted(), err)
	}
	b := make([]byte, 5)
	rand.Read(b)
	sfx := hex.EncodeToString(b)
	p := &pgSite{schema: "ledger_" + sfx, app: "app_" + sfx, migrator: "migrator_" + sfx, role: "reconcile_" + sfx, admin: admin, base: base}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		if _, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+p.schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", p.schema, err)
		}
		for _, r := range []string{p.role, p.app, p.migrator} {
			admin.Exec(ctx, "DROP OWNED BY "+r)
			if _, err := admin.Exec(ctx, "DROP ROLE IF EXISTS "+r); err != nil {
				t.Errorf("drop role %s: %v", r, err)
			}
		}
		admin.Close(ctx)
	})
	p.exec(t, admin, "CREATE ROLE "+p.app+" LOGIN; CREATE ROLE "+p.migrator+" LOGIN; CREATE ROLE "+p.role+" LOGIN; "+
		"CREATE SCHEMA "+p.schema+" AUTHORIZATION "+p.migrator+"; GRANT USAGE, CREATE ON SCHEMA "+p.schema+" TO "+p.app)
	return p
}

// url connects as role (the test's own user for ""), with the site's
// schema as the search path.
func (p *pgSite) url(role string) string {
	u := *p.base
	if role != "" {
		u.User = url.User(role)
	}
	q := u.Query()
	q.Set("search_path", p.schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// names puts the site's names in the README's SQL: its roles for app,
// migrator and reconcile, its schema for public.
func (p *pgSite) names(sql string) string {
	for _, r := range [][2]string{{"app", p.app}, {"migrator", p.migrator}, {"reconcile", p.role}, {"public", p.schema}} {
		sql = regexp.MustCompile(`\b`+r[0]+`\b`).ReplaceAllString(sql, r[1])
	}
	return sql
}

func (p *pgSite) connect(t *testing.T, role string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), p.url(role))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func (p *pgSite) exec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// The README's roles and grants, run as written: the migration is refused
// while the applications own effect, and made by the migrating role once
// it owns it; the migrating role gives the grants; the job's role then runs
// and may create nothing; a table the migrating role makes after the
// default privileges is readable by the job's role; the PostgreSQL 14 note
// runs.
func TestReadmeRolesAndGrants(t *testing.T) {
	t.Parallel()
	p := newPgSite(t)
	readme := "README.md"
	migrateLine := strings.Split(strings.TrimSpace(docBlock(t, readme, "migrate")), "\n")
	if len(migrateLine) != 2 || !strings.HasPrefix(migrateLine[0], "reconcile migrate --ledger postgres://migrator@db/payments") ||
		!strings.Contains(migrateLine[1], "-f ledgerdb/postgres/grants.sql") {
		t.Fatalf("README migrate block %q: want reconcile migrate as the migrating role, then grants.sql", migrateLine)
	}

	// The applications made the table first, as the docs/LEDGER.md schema has it.
	app := p.connect(t, p.app)
	p.exec(t, app, statements(docBlock(t, "docs/LEDGER.md", "postgres-schema"))[0])
	r := reconcile(t, nil, "migrate", "--ledger", p.url(p.migrator))
	if r.code == 0 || !regexp.MustCompile(`permission denied for table effect|must be owner of table effect`).MatchString(r.stderr) {
		t.Errorf("migrate while the applications own effect: %s; want it refused as the README says", r)
	}
	superuser := p.connect(t, "")
	p.exec(t, superuser, p.names(docBlock(t, readme, "owner-fix")))
	if r := reconcile(t, nil, "migrate", "--ledger", p.url(p.migrator)); r.code != 0 {
		t.Fatalf("migrate as the migrating role: %s", r)
	}
	migrator := p.connect(t, p.migrator)
	p.exec(t, migrator, p.names(postgres.Grants))
	p.exec(t, migrator, p.names(docBlock(t, readme, "default-privileges")))

	// The applications still write their rows; the job's role reads them.
	for i, s := range statements(docBlock(t, "docs/LEDGER.md", "postgres-inserts")) {
		if _, err := app.Exec(context.Background(), s); err != nil {
			t.Fatalf("docs/LEDGER.md postgres-inserts statement %d as the applications' role: %v", i+1, err)
		}
	}
	dir := t.TempDir()
	report := filepath.Join(dir, "stripe-2026-11-28.itemized.csv")
	if err := os.WriteFile(report, []byte(docBlock(t, "docs/LEDGER.md", "sample-report")), 0o644); err != nil {
		t.Fatal(err)
	}
	r = reconcile(t, nil, "run", "--ledger", p.url(p.role), "--json", "-", report)
	if res := parseResult(t, r); r.code != 0 || res.Counts["confirmed"] != 3 {
		t.Errorf("run as the job's role: %s; want exit 0 and 3 confirmed", r)
	}
	job := p.connect(t, p.role)
	if _, err := job.Exec(context.Background(), "CREATE TABLE "+p.schema+".job_made (x int)"); err == nil {
		t.Errorf("the job's role created a table in %s", p.schema)
	}

	// A later release's migration adds a table: the job's role may read it.
	p.exec(t, migrator, "CREATE TABLE future_release (id bigserial PRIMARY KEY, note text)")
	if _, err := job.Exec(context.Background(), "INSERT INTO future_release (note) VALUES ('x'); SELECT count(*) FROM future_release"); err != nil {
		t.Errorf("the job's role on a table made after the default privileges: %v", err)
	}
	p.exec(t, superuser, p.names(docBlock(t, readme, "pg14")))
}
