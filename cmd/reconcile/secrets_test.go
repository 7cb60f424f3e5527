package main

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/ledgerdb/postgres/pgtest"
)

// keywordForm writes a postgres:// URL as a libpq keyword/value string.
func keywordForm(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	kv := []string{"host=" + u.Hostname(), "dbname=" + strings.TrimPrefix(u.Path, "/")}
	if p := u.Port(); p != "" {
		kv = append(kv, "port="+p)
	}
	if name := u.User.Username(); name != "" {
		kv = append(kv, "user="+name)
	}
	if pass, ok := u.User.Password(); ok {
		kv = append(kv, "password='"+strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pass)+"'")
	}
	for k, vs := range u.Query() {
		kv = append(kv, k+"="+vs[0])
	}
	return strings.Join(kv, " ")
}

// inEmptyDir runs the test in a directory of its own and returns a check
// that nothing was created there.
func inEmptyDir(t *testing.T) func() {
	dir := t.TempDir()
	t.Chdir(dir)
	return func() {
		t.Helper()
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			t.Errorf("a file was created in the working directory: %q", ents[0].Name())
		}
	}
}

func TestKeywordConnectionStringOpensThePostgresLedger(t *testing.T) {
	noFile := inEmptyDir(t)
	raw := pgtest.Schema(t)
	kw := keywordForm(t, raw)
	if code, out, errOut := reconcileCmd(t, "migrate", "--ledger", kw); code != 0 || !strings.Contains(out, "is ready") {
		t.Fatalf("migrate --ledger %q = %d, %q, %q; want the ledger made ready", kw, code, out, errOut)
	}
	if code, out, errOut := reconcileCmd(t, "escalations", "--ledger", kw); code != 0 || !strings.Contains(out, "no open escalations") {
		t.Errorf("escalations --ledger %q = %d, %q, %q; want no open escalations", kw, code, out, errOut)
	}
	noFile()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM schema_migration`).Scan(&n); err != nil || n == 0 {
		t.Errorf("the PostgreSQL schema has %d migrations (%v): migrate did not reach it", n, err)
	}
}

func TestMalformedLedgerStringIsRefusedUnshown(t *testing.T) {
	noFile := inEmptyDir(t)
	for _, ledger := range []string{
		"host=db dbname=payments user reconcile password=s3cret",
		"host=db dbname=payments user=reconcile password='s3cret",
		"password=s3cret",
	} {
		for _, cmd := range [][]string{{"migrate"}, {"escalations"}, {"show", "k"}, {"run", "x.csv"}} {
			args := append(cmd, "--ledger", ledger)
			code, out, errOut := reconcileCmd(t, args...)
			if code != exitUsage {
				t.Errorf("reconcile %q = exit %d (%q), want %d", args, code, errOut, exitUsage)
			}
			if strings.Contains(out+errOut, "s3cret") {
				t.Errorf("reconcile %q printed the password: %q %q", args, out, errOut)
			}
		}
	}
	noFile()
}

func TestLedgerErrorsHideAKeywordPassword(t *testing.T) {
	t.Parallel()
	for _, ledger := range []string{
		"host=127.0.0.1 port=1 dbname=payments user=app password=s3cret",
		"host=127.0.0.1 port=nope dbname=payments password='s3 cret'",
		"host=127.0.0.1 port=1 dbname=payments sslmode=bogus password='it\\'s s3cret'",
	} {
		code, out, errOut := reconcileCmd(t, "migrate", "--ledger", ledger)
		if code != exitFailure || strings.Contains(out+errOut, "s3cret") || strings.Contains(out+errOut, "s3 cret") ||
			strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("migrate --ledger %q = %d, stderr %q; want exit 1 on one line without the password", ledger, code, errOut)
		}
	}
}

// forged is text from inputs or the ledger that tries to draw on the
// terminal: a colour, a cleared screen, a carriage return and a line of
// its own, a C1 control sequence introducer.
const forged = "k\x1b[31m\x1b[2J\r\nFORGED\tline\u009b1m\x7f"

// rawControl returns the first control character in s that is not a newline.
func rawControl(s string) (rune, bool) {
	for _, r := range s {
		if r != '\n' && (r < 0x20 || r == 0x7f || 0x80 <= r && r < 0xa0) {
			return r, true
		}
	}
	return 0, false
}

func checkTerminal(t *testing.T, what, out string) {
	t.Helper()
	if r, ok := rawControl(out); ok {
		t.Errorf("%s wrote the raw control character %U:\n%s", what, r, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "FORGED") {
			t.Errorf("%s has a forged line %q:\n%s", what, line, out)
		}
	}
	if !strings.Contains(out, `\x1b[31m`) {
		t.Errorf("%s does not show the escape as \\x1b:\n%s", what, out)
	}
}

func TestOnCallTablesEscapeControlCharacters(t *testing.T) {
	t.Parallel()
	l := ledgerdbtest.New(t, "sqlite")
	store := l.Open(t, nil)
	ctx := context.Background()
	key := "run_1:charge:0" + forged
	if _, err := store.EffectRecord(ctx, &ledgerdb.RecordParams{Key: key, RunID: "run_1" + forged, Step: "charge" + forged, Provider: "stripe",
		Request: json.RawMessage(`{"amount": 100, "currency": "eur", "note": "\u001b[31m\r\nFORGED"}`)}); err != nil {
		t.Fatal(err)
	}
	c, err := store.ClaimAcquire(ctx, &ledgerdb.ClaimParams{Key: key + ":redeliver", Owner: "host" + forged})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.ClaimSettle(ctx, &ledgerdb.SettleParams{Key: key + ":redeliver", Fence: c.Claim.Fence, Owner: "host" + forged, Error: "provider said " + forged}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EscalationOpen(ctx, &ledgerdb.EscalateParams{Key: key + ":escalate:mismatched", Subject: key, Class: reconcile.ClassMismatched,
		Reason: "reason " + forged, RunID: "run_1"}); err != nil {
		t.Fatal(err)
	}
	store.Close()

	code, out, errOut := reconcileCmd(t, "escalations", "--ledger", l.URL)
	if code != 0 {
		t.Fatalf("escalations = %d, %q", code, errOut)
	}
	checkTerminal(t, "escalations", out)
	code, out, errOut = reconcileCmd(t, "show", "--ledger", l.URL, key)
	if code != 0 {
		t.Fatalf("show = %d, %q", code, errOut)
	}
	checkTerminal(t, "show", out)
	code, out, errOut = reconcileCmd(t, "escalations", "--ledger", l.URL, "--ack", key+":escalate:mismatched", "--by", "ana"+forged)
	if code != 0 {
		t.Fatalf("escalations --ack = %d, %q", code, errOut)
	}
	checkTerminal(t, "escalations --ack", out)
	code, out, errOut = reconcileCmd(t, "resolve", "--ledger", l.URL, key, "--as", "abandoned", "--note", "n", "--by", "ana"+forged)
	if code != 0 {
		t.Fatalf("resolve = %d, %q", code, errOut)
	}
	checkTerminal(t, "resolve", out)
}

func TestErrorLineEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	code, _, errOut := reconcileCmd(t, "run", "--ledger", "sqlite:"+t.TempDir()+"/l.db", t.TempDir()+"/missing"+forged+".csv")
	if code == 0 {
		t.Fatalf("run over a missing file = 0, want an error")
	}
	checkTerminal(t, "the error line", errOut)
}
