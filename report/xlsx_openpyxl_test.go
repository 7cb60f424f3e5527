package report

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// requirePython finds a Python 3 that has openpyxl: RECONCILE_PYTHON, else
// python3 on PATH, else Debian's. Without one the test is skipped, or fails
// when RECONCILE_REQUIRE_TOOLS=1.
func requirePython(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("RECONCILE_PYTHON"), "python3", "/usr/bin/python3"}
	for _, p := range candidates {
		if p == "" {
			continue
		}
		if err := exec.Command(p, "-c", "import openpyxl").Run(); err == nil {
			return p
		}
	}
	msg := "this test needs Python 3 with openpyxl, which is not installed: apt-get install python3-openpyxl, or set RECONCILE_PYTHON"
	if os.Getenv("RECONCILE_REQUIRE_TOOLS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// openpyxlReadOnly is what openpyxl's read-only reader, the one that
// streams a large workbook (and trusts each sheet's <dimension>, as Power
// BI does), sees of every sheet: its size, the rows it yields, and the
// values of the first eight rows.
const openpyxlReadOnly = `
import json, sys, datetime, openpyxl
wb = openpyxl.load_workbook(sys.argv[1], read_only=True)
out = {}
for ws in wb.worksheets:
    rows = 0
    first = []
    for row in ws.iter_rows(values_only=True):
        rows += 1
        if rows <= 8:
            first.append([v.isoformat() if isinstance(v, datetime.datetime) else v for v in row])
    out[ws.title] = {"max_row": ws.max_row, "max_column": ws.max_column, "rows": rows, "first": first}
json.dump(out, sys.stdout, default=str)
`

type openpyxlSheet struct {
	MaxRow    int     `json:"max_row"`
	MaxColumn int     `json:"max_column"`
	Rows      int     `json:"rows"`
	First     [][]any `json:"first"`
}

// readOnlyOpenpyxl reads the workbook at path with openpyxl in read-only
// mode.
func readOnlyOpenpyxl(t *testing.T, python, path string) map[string]openpyxlSheet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", openpyxlReadOnly, path)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("openpyxl: %v", err)
	}
	var got map[string]openpyxlSheet
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("openpyxl's output: %v\n%.500s", err, b)
	}
	return got
}

// TestXLSXAsOpenpyxlReadsIt reads the workbook with openpyxl's read-only
// reader and checks that it sees every row and column of every sheet (the
// rows and columns excelize reads from the cells themselves), the Summary's
// verdict, and the As of date as a date.
func TestXLSXAsOpenpyxlReadsIt(t *testing.T) {
	python := requirePython(t)
	r := randomResult(sampleResult(), 5, 500)
	path := filepath.Join(t.TempDir(), "run.xlsx")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteXLSX(file, r, sampleEscalations()); err != nil {
		t.Fatalf("WriteXLSX: %v", err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	got := readOnlyOpenpyxl(t, python, path)

	f := openXLSX(t, r, sampleEscalations())
	for _, sheet := range f.GetSheetList() {
		rs := rows(t, f, sheet)
		cols := 0
		for _, row := range rs {
			cols = max(cols, len(row))
		}
		g, ok := got[sheet]
		if !ok {
			t.Errorf("openpyxl finds no sheet %q", sheet)
			continue
		}
		if g.MaxRow != len(rs) || g.MaxColumn != cols || g.Rows != len(rs) {
			t.Errorf("openpyxl read-only sees %s as %d rows by %d columns and reads %d rows; it has %d rows by %d columns",
				sheet, g.MaxRow, g.MaxColumn, g.Rows, len(rs), cols)
		}
	}
	s := got["Summary"]
	if len(s.First) < 3 || s.First[1][0] != "Verdict: needs a person" {
		t.Fatalf("openpyxl reads the Summary's first rows as %v, want the verdict on row 2", s.First)
	}
	var asOf any
	for _, row := range s.First {
		if len(row) > 1 && row[0] == "As of (UTC)" {
			asOf = row[1]
		}
	}
	if asOf != "2026-11-28T00:00:00" {
		t.Errorf("openpyxl reads As of as %#v, want the date 2026-11-28T00:00:00", asOf)
	}
}
