package report

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"reconcile"
)

// TestXLSXLargeRunAsAControllerSeesIt writes the workbook of a large run
// (bigResult, the benchmark's: RECONCILE_XLSX_LARGE findings, e.g. 100000),
// reads it with openpyxl's read-only reader, and prints its Summary the way
// LibreOffice prints it: a PDF of the first pages and a PNG of each, in
// RECONCILE_XLSX_OUT (a temporary directory when unset), to look at. It is
// skipped unless RECONCILE_XLSX_LARGE is set: LibreOffice takes minutes
// over a million rows.
//
//	RECONCILE_XLSX_LARGE=100000 RECONCILE_XLSX_OUT=/tmp/xlsx go test -run LargeRun -v ./report/
func TestXLSXLargeRunAsAControllerSeesIt(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("RECONCILE_XLSX_LARGE"))
	if err != nil || n <= 0 {
		t.Skip("set RECONCILE_XLSX_LARGE to a number of findings (100000) to write, read and print a large run's workbook")
	}
	soffice := requireTool(t, "RECONCILE_SOFFICE", "soffice", "apt-get install --no-install-recommends libreoffice-calc-nogui")
	pdftoppm := requireTool(t, "RECONCILE_PDFTOPPM", "pdftoppm", "apt-get install poppler-utils")
	python := requirePython(t)
	out := os.Getenv("RECONCILE_XLSX_OUT")
	if out == "" {
		out = t.TempDir()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}

	r := bigResult(n, n/100)
	r.AsOf, r.Applied = "2026-11-28T00:00:00Z", true
	r.Counts[string(reconcile.ClassConfirmed)] = 40 * n
	r.Inputs = []Input{
		{URI: "s3://settlements/2026-11-28/stripe_balance_change_from_activity.csv", Format: "stripe-itemized", Rows: 41 * n, Evidence: 41*n - n/100, Rejected: n / 100},
		{URI: "s3://bank/2026-11-28/camt053_DE89370400440532013000.xml", Format: "camt053", Rows: 30, Evidence: 30},
	}
	for _, x := range []struct {
		name   string
		totals bool
	}{{"summary", false}, {"summary-with-totals", true}} {
		if x.totals {
			defer func(f func(*Input) []Volume, g func(*Result) []Volume) { inputTotals, confirmedVolumes = f, g }(inputTotals, confirmedVolumes)
			inputTotals = func(in *Input) []Volume {
				if in.Format == "camt053" {
					return []Volume{{Provider: "bank", Currency: "EUR", Kind: reconcile.KindPayout, Count: 30, AmountMinor: 912_345_678_90}}
				}
				return []Volume{
					{Provider: "stripe", Currency: "EUR", Kind: reconcile.KindCharge, Count: 40 * n, AmountMinor: 9_876_543_210_00, FeeMinor: 287_654_321_00},
					{Provider: "stripe", Currency: "EUR", Kind: reconcile.KindRefund, Count: n, AmountMinor: -123_456_789_00},
					{Provider: "stripe", Currency: "EUR", Kind: reconcile.KindPayout, Count: 30, AmountMinor: -912_345_678_90},
					{Provider: "stripe", Currency: "JPY", Kind: reconcile.KindCharge, Count: n, AmountMinor: 987_654_321, FeeMinor: 35_000_000},
				}
			}
			confirmedVolumes = func(*Result) []Volume {
				return []Volume{{Provider: "stripe", Currency: "EUR", Count: 39 * n, AmountMinor: 9_752_345_678_00},
					{Provider: "stripe", Currency: "JPY", Count: n, AmountMinor: 987_654_321}}
			}
		}
		path := filepath.Join(out, x.name+".xlsx")
		file, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := WriteXLSX(file, r, sampleEscalations()); err != nil {
			t.Fatalf("WriteXLSX: %v", err)
		}
		if err := file.Close(); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(path)
		t.Logf("%s: %d findings in %v, %.1f MB", path, n, time.Since(start).Round(time.Millisecond), float64(st.Size())/(1<<20))
		if x.totals {
			printSummary(t, soffice, pdftoppm, path, out)
			continue
		}

		start = time.Now()
		got := readOnlyOpenpyxl(t, python, path)
		t.Logf("openpyxl read-only read it in %v", time.Since(start).Round(time.Millisecond))
		byClass := map[reconcile.Class]int{}
		for _, d := range r.Discrepancies {
			byClass[d.Class]++
		}
		for c, k := range byClass {
			if g := got[sheetName(c)]; g.Rows != k+1 || g.MaxRow != k+1 {
				t.Errorf("openpyxl read-only reads %d rows of %s (max_row %d), want a header and %d findings", g.Rows, sheetName(c), g.MaxRow, k)
			}
		}
		if g := got[rejectedSheet]; g.Rows != len(r.Rejected)+1 {
			t.Errorf("openpyxl read-only reads %d rows of %s, want %d", g.Rows, rejectedSheet, len(r.Rejected)+1)
		}
		printSummary(t, soffice, pdftoppm, path, out)
	}
}

// printSummary prints the first pages of the workbook at path, the
// Summary's, with LibreOffice to a PDF and each page to a PNG in out.
func printSummary(t *testing.T, soffice, pdftoppm, path, out string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	start := time.Now()
	filter := `pdf:calc_pdf_Export:{"PageRange":{"type":"string","value":"1-3"}}`
	cmd := exec.CommandContext(ctx, soffice, "-env:UserInstallation=file://"+filepath.Join(t.TempDir(), "profile"),
		"--headless", "--convert-to", filter, "--outdir", out, path)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, b)
	}
	pdf := strings.TrimSuffix(path, ".xlsx") + ".pdf"
	t.Logf("LibreOffice printed %s in %v", pdf, time.Since(start).Round(time.Millisecond))
	cmd = exec.CommandContext(ctx, pdftoppm, "-png", "-r", "80", pdf, strings.TrimSuffix(pdf, ".pdf"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, b)
	}
	pages, _ := filepath.Glob(strings.TrimSuffix(pdf, ".pdf") + "-*.png")
	if len(pages) == 0 {
		t.Fatalf("pdftoppm made no page of %s", pdf)
	}
	t.Logf("pages: %s", fmt.Sprint(pages))
}
