package deploy

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"reconcile/ledgerdb/postgres/pgtest"
)

// statements splits SQL text into its statements, comments dropped and
// white space collapsed.
func statements(text string) []string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line + " ")
	}
	var out []string
	for _, s := range strings.Split(b.String(), ";") {
		if s = strings.Join(strings.Fields(s), " "); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// effectDDL is every statement of a driver's migrations that creates or
// changes the effect table, in the order the migrations apply them.
func effectDDL(t *testing.T, driver string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "ledgerdb", driver, "migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations for %s: %v", driver, err)
	}
	sort.Strings(files)
	touches := regexp.MustCompile(`(?i)^(CREATE TABLE (IF NOT EXISTS )?effect \(|ALTER TABLE effect |CREATE (UNIQUE )?INDEX \w+ ON effect \(|CREATE TRIGGER \w+ AFTER \w+ (OF [\w, ]+ )?ON effect )`)
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range statements(string(b)) {
			if touches.MatchString(s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// The CREATE TABLE and the other statements docs/LEDGER.md shows for each
// database are the migrations' own, so the page cannot drift from them.
func TestLedgerDocSchemaIsTheMigrations(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"postgres", "sqlite"} {
		want := effectDDL(t, driver)
		got := statements(docBlock(t, "docs/LEDGER.md", driver+"-schema"))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("docs/LEDGER.md %s-schema is not what ledgerdb/%s/migrations do to effect (-migrations +doc):\n%s", driver, driver, diff)
		}
	}
}

// runResult is the part of a JSON result these tests read.
type runResult struct {
	RunID         string         `json:"run_id"`
	Counts        map[string]int `json:"counts"`
	Discrepancies []struct {
		Class     string `json:"class"`
		EffectKey string `json:"effect_key"`
	} `json:"discrepancies"`
}

func parseResult(t *testing.T, r result) runResult {
	t.Helper()
	var res runResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("JSON result: %v\n%s", err, r)
	}
	return res
}

// runLedgerDocSample writes the doc's sample report into dir and runs the
// doc's sample commands there as written, with docLedger for the doc's
// sqlite:ledger.db, then checks that the run read every row the doc's
// statements wrote into ledger.
func runLedgerDocSample(t *testing.T, dir, docLedger, ledger string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "stripe-2026-11-28.itemized.csv"), []byte(docBlock(t, "docs/LEDGER.md", "sample-report")), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := reconcileBinary(t)
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(docBlock(t, "docs/LEDGER.md", "sample-run")), "\n") {
		cmdline, _, _ := strings.Cut(line, "#")
		cmdline = replaceAll(t, "docs/LEDGER.md sample-run", strings.TrimSpace(cmdline), "reconcile ", bin+" ", "sqlite:ledger.db", docLedger)
		lines = append(lines, "cd "+dir+" && "+cmdline)
	}
	if len(lines) != 2 {
		t.Fatalf("docs/LEDGER.md sample-run has %d commands, want the run and the show", len(lines))
	}
	r := shell(t, nil, lines[0])
	if r.code != 0 || !regexp.MustCompile(`confirmed\s+3\s`).MatchString(r.stdout) {
		t.Errorf("%s: %s; want exit 0 and 3 confirmed, as docs/LEDGER.md says", lines[0], r)
	}
	for _, class := range []string{"duplicated", "missing", "pending", "mismatched", "unexpected", "deferred", "escalated"} {
		if !regexp.MustCompile(class + `\s+0\s`).MatchString(r.stdout) {
			t.Errorf("%s: %s; want no %s effect", lines[0], r, class)
		}
	}
	if r := shell(t, nil, lines[1]); r.code != 0 || !strings.Contains(r.stdout, "confirmed") || !strings.Contains(r.stdout, "pi_3LgOrder1002") {
		t.Errorf("%s: %s; want the effect confirmed with pi_3LgOrder1002, as docs/LEDGER.md says", lines[1], r)
	}

	// Every other row the statements wrote is read as written.
	for key, want := range map[string]string{"shop_20261128:charge:0": "pi_3LgOrder1001", "shop_20261128:refund:0": "re_3LgRefund0001", "shop_20261128:charge:2": "abandoned"} {
		if r := reconcile(t, nil, "show", key, "--ledger", ledger); r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("show %s: %s; want %s", key, r, want)
		}
	}
}

// The statements docs/LEDGER.md shows an application running on SQLite
// run on a fresh ledger, and reconcile run reads the rows they wrote.
func TestLedgerDocStatementsRunOnSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	if r := reconcile(t, nil, "migrate", "--ledger", "sqlite:"+path); r.code != 0 {
		t.Fatalf("migrate: %s", r)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range statements(docBlock(t, "docs/LEDGER.md", "sqlite-inserts")) {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("docs/LEDGER.md sqlite-inserts statement %d: %v\n%s", i+1, err, s)
		}
	}
	db.Close()
	runLedgerDocSample(t, dir, "sqlite:ledger.db", "sqlite:"+path)
}

// The statements docs/LEDGER.md shows an application running on
// PostgreSQL run on a freshly migrated ledger (a schema of its own), and
// reconcile run reads the rows they wrote.
func TestLedgerDocStatementsRunOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	if r := reconcile(t, nil, "migrate", "--ledger", url); r.code != 0 {
		t.Fatalf("migrate: %s", r)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range statements(docBlock(t, "docs/LEDGER.md", "postgres-inserts")) {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("docs/LEDGER.md postgres-inserts statement %d: %v\n%s", i+1, err, s)
		}
	}
	conn.Close(ctx)
	runLedgerDocSample(t, t.TempDir(), "'"+url+"'", url)
}

// Every timestamp form docs/LEDGER.md lists for SQLite, written by an
// application into created_at and confirmed_at, is read by a run.
func TestLedgerDocTimestampFormsAreRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	if r := reconcile(t, nil, "migrate", "--ledger", "sqlite:"+path); r.code != 0 {
		t.Fatalf("migrate: %s", r)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var forms []string // one SQL expression a line, then its comment
	for _, line := range strings.Split(docBlock(t, "docs/LEDGER.md", "sqlite-timestamps"), "\n") {
		if form, _, _ := strings.Cut(line, "--"); strings.TrimSpace(form) != "" {
			forms = append(forms, strings.TrimSpace(form))
		}
	}
	if len(forms) < 9 {
		t.Fatalf("docs/LEDGER.md sqlite-timestamps has %d forms: %q", len(forms), forms)
	}
	report := "balance_transaction_id,created_utc,charge_id,payment_intent_id,source_id,reporting_category,currency,gross,fee,net,description,payment_metadata[effect_key]\n"
	for i, form := range forms {
		key, pi := fmt.Sprintf("app_ts:charge:%d", i), fmt.Sprintf("pi_TsForm%04d", i)
		req := fmt.Sprintf(`{"amount": %d, "currency": "eur", "metadata": {"effect_key": %q}}`, 1000+i, key)
		if _, err := db.Exec(`INSERT INTO effect (key, run_id, step, provider, status, external_id, request, created_at, confirmed_at)
			VALUES (?, 'app_ts', 'charge', 'stripe', 'confirmed', ?, ?, `+form+`, `+form+`)`, key, pi, req); err != nil {
			t.Fatalf("insert with %s: %v", form, err)
		}
		report += fmt.Sprintf("txn_TsForm%04d,2026-11-28 09:15:00,ch_TsForm%04d,%s,ch_TsForm%04d,charge,eur,%d.%02d,0.00,%d.%02d,Form %d,%s\n",
			i, i, pi, i, 10+i/100, i%100, 10+i/100, i%100, i, key)
	}
	file := filepath.Join(dir, "ts.itemized.csv")
	if err := os.WriteFile(file, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	r := reconcile(t, nil, "run", "--ledger", "sqlite:"+path, "--json", "-", file)
	if r.code != 0 {
		t.Fatalf("run on every documented timestamp form: %s", r)
	}
	if res := parseResult(t, r); res.Counts["confirmed"] != len(forms) {
		t.Errorf("run: counts %v, discrepancies %+v; want all %d effects confirmed", res.Counts, res.Discrepancies, len(forms))
	}
}
