package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/xuri/excelize/v2"

	"reconcile/ledgerdb"
	"reconcile/ledgerdb/postgres/pgtest"
)

// reconcile runs the command line in-process and returns its exit status,
// stdout and stderr.
func reconcileCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// The effect table that `reconcile migrate` creates on PostgreSQL has exactly
// the columns of DESIGN section 4, with their types, nullability and default,
// and those the job adds: with defaults, or generated.
func TestMigrateCreatesTheEffectTableOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	code, out, errOut := reconcileCmd(t, "migrate", "--ledger", url)
	if code != 0 || !strings.Contains(out, "applied 001_ledger") {
		t.Fatalf("migrate = %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = reconcileCmd(t, "migrate", "--ledger", url)
	if code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("second migrate = %d, %q; want exit 0 and up to date", code, out)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT column_name, data_type, is_nullable, coalesce(column_default, '') || CASE WHEN is_generated = 'ALWAYS' THEN 'generated' ELSE '' END
		FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'effect'
		ORDER BY ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var name, typ, null, def string
		err := r.Scan(&name, &typ, &null, &def)
		return strings.Join([]string{name, typ, null, def}, " | "), err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"key | text | NO | ",
		"run_id | text | NO | ",
		"step | text | NO | ",
		"provider | text | NO | ",
		"status | text | NO | ",
		"external_id | text | YES | ",
		"request | jsonb | NO | ",
		"response | jsonb | YES | ",
		"created_at | timestamp with time zone | NO | now()",
		"confirmed_at | timestamp with time zone | YES | ",
		// Added for compensations, with defaults, as DESIGN section 4 allows:
		// applications that write the columns above are unaffected.
		"parent_key | text | YES | ",
		"depth | integer | NO | 0",
		// Generated from request for the job's reads: applications neither
		// write them nor need a grant for them.
		"request_amount | text | YES | generated",
		"request_currency | text | YES | generated",
		"request_other | text | YES | generated",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("effect columns (-want +got):\n%s", diff)
	}
	var pk string
	if err := conn.QueryRow(ctx, `
		SELECT a.attname FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = 'effect'::regclass AND i.indisprimary`).Scan(&pk); err != nil || pk != "key" {
		t.Errorf("effect primary key = %q, %v; want key", pk, err)
	}
}

func TestMigrateTwiceOnSQLiteIsNoop(t *testing.T) {
	t.Parallel()
	url := "sqlite:" + filepath.Join(t.TempDir(), "sub", "ledger.db")
	if code, out, errOut := reconcileCmd(t, "migrate", "--ledger", url); code != 0 || !strings.Contains(out, "applied 001_ledger") {
		t.Fatalf("migrate = %d, %q, %q", code, out, errOut)
	}
	if code, out, _ := reconcileCmd(t, "migrate", "--ledger", url); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("second migrate = %d, %q; want up to date", code, out)
	}
}

func TestLedgerFromEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env.db")
	t.Setenv("RECONCILE_LEDGER", "sqlite:"+path)
	if code, out, errOut := reconcileCmd(t, "migrate"); code != 0 || !strings.Contains(out, path) {
		t.Errorf("migrate with RECONCILE_LEDGER = %d, %q, %q; want the ledger at %s", code, out, errOut, path)
	}
}

// Two processes' worth of migrations at once on one fresh PostgreSQL schema:
// both succeed and the schema is migrated once.
func TestConcurrentMigrateOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	var wg sync.WaitGroup
	outs := make([]string, 4)
	codes := make([]int, 4)
	for i := range outs {
		wg.Go(func() { codes[i], outs[i], _ = reconcileCmd(t, "migrate", "--ledger", url) })
	}
	wg.Wait()
	applied := 0
	for i := range outs {
		if codes[i] != 0 {
			t.Errorf("migrate %d exited %d", i, codes[i])
		}
		if strings.Contains(outs[i], "applied 001_ledger") {
			applied++
		}
	}
	if applied != 1 {
		t.Errorf("%d of 4 concurrent migrates applied 001_ledger, want exactly 1: %q", applied, outs)
	}
}

func TestUnmigratedPostgresLedgerIsRefused(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	_, _, err := openLedger(context.Background(), url, ledgerdb.Config{})
	if err == nil || !strings.Contains(err.Error(), "reconcile migrate") {
		t.Errorf("openLedger on an empty schema: %v; want an error that says to run reconcile migrate", err)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"bogus"},
		{"migrate", "--nope"},
		{"migrate", "extra-arg"},
		{"migrate", "--ledger", "mysql://u:secret@h/db"},
		{"migrate", "--ledger", "sqlite:"},
		{"--log-format", "xml", "migrate"},
	} {
		code, _, errOut := reconcileCmd(t, args...)
		if code != exitUsage {
			t.Errorf("reconcile %q = exit %d, want %d", args, code, exitUsage)
		}
		if strings.Contains(errOut, "secret") {
			t.Errorf("reconcile %q printed a password: %q", args, errOut)
		}
	}
}

func TestUnreachableLedgerIsOneClearLine(t *testing.T) {
	t.Parallel()
	code, _, errOut := reconcileCmd(t, "migrate", "--ledger", "postgres://app:secret@127.0.0.1:1/payments")
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	if strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "postgres://app:xxxxx@127.0.0.1:1/payments") ||
		!strings.Contains(errOut, "cannot connect") || strings.Contains(errOut, "secret") {
		t.Errorf("stderr = %q; want one line naming the redacted URL and saying it cannot connect", errOut)
	}
}

// The demo runs the whole loop twice in the same folder: the first round
// finds and repairs what the shop's faults did and pages for the rest; the
// second, on the provider's next report, finds nothing left to do.
func TestDemoRunsTheWholeLoop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for range 2 { // a second demo starts over in the same folder
		code, out, errOut := reconcileCmd(t, "demo", "--dir", dir)
		if code != 0 {
			t.Fatalf("demo = %d, %q", code, errOut)
		}
		for _, want := range []string{"applied    compensate", "applied    redeliver", "escalated  compensate", "escalated  escalate",
			"closed escalation", "The demo's files are in " + dir} {
			if !strings.Contains(out, want) {
				t.Errorf("demo output lacks %q:\n%s", want, out)
			}
		}
		read := func(name string) runResult {
			var r runResult
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err == nil {
				err = json.Unmarshal(b, &r)
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return r
		}
		faulty := demoOrders / 50 // each fault happens every 50 orders
		first := read("round-1.json")
		want := map[string]int{"duplicated": 2 * faulty, "missing": faulty, "mismatched": 1, "unexpected": 1, "escalated": 1, "deferred": 0, "pending": 0}
		for class, n := range want {
			if first.Counts[class] != n {
				t.Errorf("round 1: %d %s, want %d (counts %v)", first.Counts[class], class, n, first.Counts)
			}
		}
		second := read("round-2.json")
		for _, class := range []string{"missing", "mismatched", "unexpected", "escalated", "deferred", "pending"} {
			if second.Counts[class] != 0 {
				t.Errorf("round 2: %d %s, want none (counts %v)", second.Counts[class], class, second.Counts)
			}
		}
		if hasOutcome(&second, "applied") || hasOutcome(&second, "planned") || hasOutcome(&second, "deferred") {
			t.Errorf("round 2 still acts: %+v", second.Discrepancies)
		}
		pages, err := os.ReadFile(filepath.Join(dir, "pages.log"))
		if err != nil || strings.Count(string(pages), `"event":"trigger"`) != 2 || strings.Count(string(pages), `"event":"resolve"`) != 2 {
			t.Errorf("pages.log (%v) = %s; want two pages, both resolved", err, pages)
		}
		if _, err := excelize.OpenFile(filepath.Join(dir, "discrepancies.xlsx")); err != nil {
			t.Errorf("discrepancies.xlsx: %v", err)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	code, out, errOut := reconcileCmd(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "reconcile version ") {
		t.Errorf("reconcile --version = exit %d, %q %q", code, out, errOut)
	}
}

// Without $USER (cron, a container) a decision is still signed by the OS
// user, not "unknown".
func TestWhoAmIFallsBackToTheOSUser(t *testing.T) {
	t.Setenv("USER", "")
	if got := whoami(); got == "" || got == "unknown" {
		t.Errorf("whoami() = %q, want the OS user", got)
	}
}
