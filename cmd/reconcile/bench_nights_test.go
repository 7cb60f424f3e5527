package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/fixtures"
	"reconcile/ledgerdb/postgres/pgtest"
)

// A bench with a second night finds both nights' classes as built: the
// first world's on an empty ledger, then the second world's together with
// what the first night left open, in the classes those effects have on the
// next day.
func TestBenchSecondNightFindsBothNightsAsBuilt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errOut := reconcileCmd(t, "bench", "--effects", "3000", "--second-night", "1000", "--seed", "7",
		"--ledger", "sqlite:"+filepath.Join(dir, "ledger.db"), "--dir", dir)
	if code != 0 {
		t.Fatalf("bench exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "DIFFERS") || strings.Count(out, " ok\n") != 12 || !strings.Contains(out, "night 2 / night 1: ") {
		t.Fatalf("the runs did not find both nights as built:\n%s", out)
	}

	// The second night's table against the classes worked out here from
	// the generator, apart from the bench's own sums. The second world has
	// the classes of the world --effects 1000 makes with the same seed. The
	// first night's confirmed effects and unexpected transactions are not
	// classified again; its duplicated, mismatched and missing effects are
	// open still, and its pending ones are missing on the next day.
	first := fixtures.NewWorld(3000, fixtures.DefaultRates, 7).Want
	second := fixtures.NewWorld(1000, fixtures.DefaultRates, 7).Want
	if first[reconcile.ClassPending] == 0 || first[reconcile.ClassDuplicated] == 0 || first[reconcile.ClassMismatched] == 0 {
		t.Fatalf("the first world leaves too little open to test: %v", first)
	}
	night2 := out[strings.Index(out, "night 2: "):]
	for c, want := range map[reconcile.Class]int{
		reconcile.ClassConfirmed:  second[reconcile.ClassConfirmed],
		reconcile.ClassDuplicated: second[reconcile.ClassDuplicated] + first[reconcile.ClassDuplicated],
		reconcile.ClassMissing:    second[reconcile.ClassMissing] + first[reconcile.ClassMissing] + first[reconcile.ClassPending],
		reconcile.ClassPending:    second[reconcile.ClassPending],
		reconcile.ClassMismatched: second[reconcile.ClassMismatched] + first[reconcile.ClassMismatched],
		reconcile.ClassUnexpected: second[reconcile.ClassUnexpected],
	} {
		if line := fmt.Sprintf("  %-10s found %8d ", c, want); !strings.Contains(night2, line) {
			t.Errorf("night 2 did not find %d %s:\n%s", want, c, night2)
		}
	}
}

// The machine's busy time is read from /proc/stat's first line: every kind
// of time but idle, waiting for the disk and taken by the host (steal), in
// hundredths of a second; the lines of each processor and a line it cannot
// read count nothing.
func TestBusyOfProcStat(t *testing.T) {
	for stat, want := range map[string]time.Duration{
		"cpu  100 2 30 5000 70 4 5 6 9 0\ncpu0 50 1 15 2500 35 2 2 3 0 0\n": 1410 * time.Millisecond,
		"cpu  100 2 30 5000 70 4 5 6\n":                                     1410 * time.Millisecond,
		"cpu0 100 2 30 5000 70 4 5 6\n":                                     0,
		"cpu  100 2 30 5000 70 4 5\n":                                       0,
		"cpu  100 2 x 5000 70 4 5 6\n":                                      0,
	} {
		if got := busyOf(stat); got != want {
			t.Errorf("busyOf(%q) = %v, want %v", stat, got, want)
		}
	}
}

// On PostgreSQL the bench times each night on a ledger as a night finds
// it: vacuumed and analyzed (autovacuum's work, which a test server may
// have turned off) after the application loaded its effects and after the
// first night wrote its records, not on rows no reader has seen yet.
func TestBenchSettlesThePostgresLedgerBeforeEachNight(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	dir := t.TempDir()
	code, out, errOut := reconcileCmd(t, "bench", "--effects", "300", "--second-night", "100", "--ledger", url, "--dir", dir)
	if code != 0 {
		t.Fatalf("bench exit %d: %s", code, errOut)
	}
	if n := strings.Count(out, "the ledger vacuumed"); n != 2 {
		t.Errorf("the bench said %d times that it settled the ledger, want 2:\n%s", n, out)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, table := range []string{"effect", "evidence", "effect_state"} {
		var vacuumed, analyzed int
		if err := conn.QueryRow(context.Background(), `SELECT vacuum_count, analyze_count
FROM pg_stat_user_tables WHERE relid = $1::regclass`, table).Scan(&vacuumed, &analyzed); err != nil {
			t.Fatal(err)
		}
		if vacuumed != 2 || analyzed != 2 {
			t.Errorf("%s after the bench's two nights: vacuumed %d times, analyzed %d; want 2 and 2", table, vacuumed, analyzed)
		}
	}
}
