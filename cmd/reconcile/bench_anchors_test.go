package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"reconcile"
	"reconcile/fixtures"
)

// bench --anchors on SQLite times the anchors on the bench's own files and
// prints plausible rows: encoding/csv reads as many rows as the report has
// lines, json.Valid checks every line of the webhook dump, the SQLite floor
// inserts as many rows as the run read evidence records, and the run's
// phases are shown beside their floors. With the DuckDB anchor installed
// (tools/duckdb/node_modules) its classes are printed, and on this world
// they are the classes it was built with; without it the bench says how to
// install it and goes on.
func TestBenchAnchorsOnSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errOut := reconcileCmd(t, "bench", "--effects", "2000", "--anchors",
		"--ledger", "sqlite:"+filepath.Join(dir, "ledger.db"), "--dir", dir)
	if code != 0 {
		t.Fatalf("bench exit %d: %s\n%s", code, errOut, out)
	}
	if strings.Contains(out, "DIFFERS") {
		t.Fatalf("the run did not find the world as built:\n%s", out)
	}
	i := strings.Index(out, "anchors, on the same files in the same run:\n")
	if i < 0 {
		t.Fatalf("no anchors:\n%s", out)
	}
	anchors := out[i:]

	// The files the anchors read, counted here.
	report, err := os.ReadFile(filepath.Join(dir, "bench.itemized.csv"))
	if err != nil {
		t.Fatal(err)
	}
	events, err := os.ReadFile(filepath.Join(dir, "bench.events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines, eventLines := bytes.Count(report, []byte("\n")), bytes.Count(events, []byte("\n"))
	if want := fixtures.NewWorld(2000, fixtures.DefaultRates, 1).Lines(); lines != want {
		t.Fatalf("the report has %d lines, the world %d", lines, want)
	}
	effects, err := os.ReadFile(filepath.Join(dir, "bench.effects.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(effects, []byte("key,step,provider,status,external_id,amount,currency,created_at\n")) {
		t.Errorf("the effects CSV starts %q", effects[:min(len(effects), 100)])
	}

	row := func(name, pattern string) []string {
		t.Helper()
		re := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + ` +(\d+\.\d{3}) s  ` + pattern + `$`)
		m := re.FindStringSubmatch(anchors)
		if m == nil {
			t.Fatalf("no row %q matching %q:\n%s", name, pattern, anchors)
		}
		return m
	}
	csvRow := row("encoding/csv: read the report (ReuseRecord)", `(\d+) rows \(the report's lines: (\d+)\)`)
	if csvRow[2] != strconv.Itoa(lines) || csvRow[3] != strconv.Itoa(lines) {
		t.Errorf("encoding/csv read %s rows, the report's lines %s; the file has %d lines", csvRow[2], csvRow[3], lines)
	}
	jsonRow := row("json.Valid: check the webhook dump line by line", `(\d+) lines, (\d+) valid`)
	if jsonRow[2] != strconv.Itoa(eventLines) || jsonRow[3] != strconv.Itoa(eventLines) {
		t.Errorf("json.Valid saw %s lines, %s valid; the dump has %d lines, all valid", jsonRow[2], jsonRow[3], eventLines)
	}
	// The run's evidence records: the report's rows that name a
	// transaction and the dump's events once each, so more than the
	// report's transactions and fewer than all the lines.
	sqliteRow := row("SQLite: narrow rows, multi-row INSERT, one transaction, no index", `(\d+) rows, as many as the run's evidence records`)
	if n, _ := strconv.Atoi(sqliteRow[2]); n < lines-1-50 || n > lines-1+eventLines {
		t.Errorf("the SQLite floor wrote %d rows; the report has %d rows and the dump %d lines", n, lines-1, eventLines)
	}
	if strings.Contains(anchors, "PostgreSQL:") {
		t.Errorf("PostgreSQL floors on a SQLite ledger:\n%s", anchors)
	}
	// Each phase of the run beside its floor, where it has one.
	for _, p := range []string{
		`  ingest +\d+\.\d{3} s  floor \d+\.\d{3} s \(encoding/csv \d+\.\d{3} s \+ json.Valid \d+\.\d{3} s \+ SQLite INSERT \d+\.\d{3} s\): \d+\.\dx`,
		`  link +\d+\.\d{3} s  no floor`,
		`  partitions +\d+\.\d{3} s  no floor; matching \d+\.\d{3} s of it`,
		`  record +\d+\.\d{3} s  no floor`,
	} {
		if !regexp.MustCompile(`(?m)^` + p + `$`).MatchString(anchors) {
			t.Errorf("no phase line %q:\n%s", p, anchors)
		}
	}

	installed := false
	if _, err := os.Stat(filepath.Join("..", "..", "tools", "duckdb", "node_modules", "@duckdb", "node-api")); err == nil {
		installed = true
	} else if os.Getenv("RECONCILE_REQUIRE_TOOLS") == "1" {
		t.Fatalf("the DuckDB anchor is not installed (RECONCILE_REQUIRE_TOOLS=1): npm ci --prefix tools/duckdb")
	}
	if !installed {
		if !strings.Contains(anchors, "DuckDB: skipped: ") || !strings.Contains(anchors, "install it with `npm ci --prefix ") ||
			!strings.Contains(anchors, "run / DuckDB: not measured (DuckDB skipped)") {
			t.Errorf("without DuckDB the bench did not say how to install it:\n%s", anchors)
		}
		return
	}
	if !regexp.MustCompile(`(?m)^  DuckDB v[0-9.]+: classify in SQL \(effects, report and webhook dump\) +\d+\.\d{3} s  \d+ threads; the node process `).MatchString(anchors) {
		t.Errorf("no DuckDB row:\n%s", anchors)
	}
	if !regexp.MustCompile(`(?m)^  end to end +\d+\.\d{3} s  run / DuckDB = \d+\.\dx \(the target: at most 8x on SQLite\)$`).MatchString(anchors) {
		t.Errorf("no run / DuckDB:\n%s", anchors)
	}
	// On the bench's world DuckDB's simpler rules find the classes it was
	// built with: were they to differ, it would no longer be doing the
	// run's work, and its time no anchor.
	want := fixtures.NewWorld(2000, fixtures.DefaultRates, 1).Want
	for _, c := range []reconcile.Class{reconcile.ClassConfirmed, reconcile.ClassDuplicated, reconcile.ClassMissing, reconcile.ClassPending, reconcile.ClassMismatched, reconcile.ClassUnexpected} {
		if line := fmt.Sprintf("    %-10s duckdb %8d  built %8d  same\n", c, want[c], want[c]); !strings.Contains(anchors, line) {
			t.Errorf("DuckDB did not print %d %s:\n%s", want[c], c, anchors)
		}
	}
}
