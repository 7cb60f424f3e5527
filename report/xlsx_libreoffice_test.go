package report

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
)

// requireTool finds an external program a test needs: the path in the
// environment variable env, else program on PATH. Without it the test
// fails when RECONCILE_REQUIRE_TOOLS=1 (scripts/test installs the tools and
// sets it) and is skipped otherwise.
func requireTool(t *testing.T, env, program, install string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(program); err == nil {
		return p
	}
	msg := fmt.Sprintf("this test needs %s, which is not installed: run scripts/test (it installs it), or %s, or set %s", program, install, env)
	if os.Getenv("RECONCILE_REQUIRE_TOOLS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// libreOfficeCSV converts every sheet of the spreadsheet at path to CSV
// with LibreOffice and returns each sheet's fields by sheet name. The
// export separates fields by tabs, quotes every text cell and no number,
// and writes numbers and dates as a person sees them (en-US), so a
// quoted field is a text cell and an unquoted one a number.
func libreOfficeCSV(t *testing.T, soffice, path string) map[string][][]field {
	t.Helper()
	out := t.TempDir()
	// Tokens: tab, double quote, UTF-8, from line 1, no column formats,
	// en-US, quote all text cells, (import only), save cell contents as
	// shown, no formulas, (import only), every sheet to its own file.
	const filter = "csv:Text - txt - csv (StarCalc):9,34,76,1,,1033,true,true,true,false,false,-1"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A profile of its own, so that runs in parallel do not share a lock.
	cmd := exec.CommandContext(ctx, soffice, "-env:UserInstallation=file://"+filepath.Join(out, "profile"),
		"--headless", "--convert-to", filter, "--outdir", out, path)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, b)
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	files, _ := filepath.Glob(filepath.Join(out, base+"-*.csv"))
	sheets := map[string][][]field{}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := parseCSV(string(b), '\t')
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sheets[strings.TrimSuffix(strings.TrimPrefix(filepath.Base(name), base+"-"), ".csv")] = rows
	}
	return sheets
}

// field is a field of CSV: its text, and whether it was quoted.
type field struct {
	s      string
	quoted bool
}

// parseCSV reads CSV keeping what encoding/csv drops: which fields were
// quoted.
func parseCSV(data string, sep byte) ([][]field, error) {
	var rows [][]field
	var row []field
	for i := 0; i < len(data); {
		var f field
		if data[i] == '"' {
			f.quoted = true
			var b strings.Builder
			for i++; ; i++ {
				if i >= len(data) {
					return nil, errors.New("a quoted field does not end")
				}
				if data[i] == '"' {
					if i+1 < len(data) && data[i+1] == '"' {
						b.WriteByte('"')
						i++
						continue
					}
					i++
					break
				}
				b.WriteByte(data[i])
			}
			f.s = b.String()
		} else {
			j := i
			for j < len(data) && data[j] != sep && data[j] != '\n' && data[j] != '\r' {
				j++
			}
			f.s, i = data[i:j], j
		}
		row = append(row, f)
		switch {
		case i >= len(data):
		case data[i] == sep:
			i++
			continue
		case data[i] == '\r' || data[i] == '\n':
			if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			i++
		default:
			return nil, fmt.Errorf("text after a quoted field at byte %d", i)
		}
		rows, row = append(rows, row), nil
	}
	return rows, nil
}

// TestXLSXAsLibreOfficeReadsIt opens the spreadsheet in LibreOffice, the
// program finance reads it with, and checks what it shows: every amount a
// number with its currency's decimals and equal to the result's minor
// units, per class and currency the same totals as the JSON, every text
// from the inputs literal text, however much it looks like a formula.
func TestXLSXAsLibreOfficeReadsIt(t *testing.T) {
	soffice := requireTool(t, "RECONCILE_SOFFICE", "soffice", "apt-get install --no-install-recommends libreoffice-calc-nogui")
	r := randomResult(sampleResult(), 11, 2000)
	esc := sampleEscalations()
	path := filepath.Join(t.TempDir(), "run.xlsx")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteXLSX(file, r, esc); err != nil {
		t.Fatalf("WriteXLSX: %v", err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	sheets := libreOfficeCSV(t, soffice, path)

	var names []string
	for n := range sheets {
		names = append(names, n)
	}
	if len(sheets) != 12 {
		t.Fatalf("LibreOffice exported sheets %q, want 12", names)
	}
	text := func(where string, f field, want string) {
		t.Helper()
		if !f.quoted || f.s != want {
			t.Errorf("%s: LibreOffice shows %q (text: %v), want the text %q", where, f.s, f.quoted, want)
		}
	}
	amount := func(where string, f field, cur string, exp int) int64 {
		t.Helper()
		decimals := 0
		if i := strings.LastIndexByte(f.s, '.'); i >= 0 {
			decimals = len(f.s) - i - 1
		}
		v, err := reconcile.ParseMinor(f.s, exp, '.')
		if f.quoted || err != nil || decimals != exp {
			t.Errorf("%s: LibreOffice shows %q (text: %v), want a number with the %d decimals of %s", where, f.s, f.quoted, exp, cur)
		}
		return v
	}

	// Every row of every class sheet, against the result it came from.
	got := jsonSums{map[[2]string]int64{}, map[[2]string]int64{}, map[[2]string]int64{}, map[string]int64{}}
	next := map[reconcile.Class]int{}
	for _, d := range r.Discrepancies {
		name := sheetName(d.Class)
		next[d.Class]++
		row := sheets[name][next[d.Class]]
		where := fmt.Sprintf("%s row %d", name, next[d.Class]+1)
		header := sheets[name][0]
		if len(row) != len(header) {
			t.Fatalf("%s has %d fields, want %d: %v", where, len(row), len(header), row)
		}
		col := func(title string) int {
			for i, f := range header {
				if f.s == title {
					return i
				}
			}
			t.Fatalf("%s has no column %q", name, title)
			return 0
		}
		if d.EffectKey != "" {
			text(where+" effect key", row[0], d.EffectKey)
		}
		text(where+" reason", row[col("Reason")], d.Reason)
		if w := d.Time.Format("2006-01-02 15:04:05"); row[2].quoted || row[2].s != w {
			t.Errorf("%s time: LibreOffice shows %q (text: %v), want the date %s", where, row[2].s, row[2].quoted, w)
		}
		exp, _ := reconcile.Exponent(d.Provider, d.Currency)
		k := [2]string{string(d.Class), d.Currency}
		sums := []map[[2]string]int64{got.expected, got.observed, got.atRisk}
		for i, title := range []string{"Expected", "Observed", "At risk"} {
			w := []int64{d.ExpectedMinor, d.ObservedMinor, d.AtRisk()}[i]
			where := where + " " + title
			v := amount(where, row[col(title)], d.Currency, exp)
			if v != w {
				t.Errorf("%s = %d minor units, want %d", where, v, w)
			}
			sums[i][k] += v
		}
	}
	for c, n := range next {
		if len(sheets[sheetName(c)]) != n+1 {
			t.Errorf("sheet %s has %d rows, want a header and %d findings", sheetName(c), len(sheets[sheetName(c)]), n)
		}
	}

	// The Summary's money at risk, and its money per class and currency.
	summary := jsonSums{map[[2]string]int64{}, map[[2]string]int64{}, map[[2]string]int64{}, map[string]int64{}}
	section := ""
	for i, row := range sheets["Summary"] {
		if row[0].s != "" && (len(row) < 2 || row[1].s == "") {
			section = row[0].s
			continue
		}
		if row[0].s == "" {
			continue
		}
		where := fmt.Sprintf("Summary row %d", i+1)
		switch {
		case section == "Money per class and currency" && row[0].s != "Class":
			cur := row[1].s
			exp := expOf(r, cur)
			k := [2]string{classOf(t, row[0].s), cur}
			summary.expected[k] = amount(where, row[3], cur, exp)
			summary.observed[k] = amount(where, row[4], cur, exp)
			summary.atRisk[k] = amount(where, row[5], cur, exp)
		case section == "Money at risk per currency" && row[0].s != "Currency":
			summary.moneyAtRisk[row[0].s] = amount(where, row[1], row[0].s, expOf(r, row[0].s))
		}
	}
	want := sumJSON(t, r)
	opt := cmp.AllowUnexported(jsonSums{})
	if diff := cmp.Diff(want, summary, opt); diff != "" {
		t.Errorf("Summary as LibreOffice shows it, against the JSON (-want +got):\n%s", diff)
	}
	got.moneyAtRisk = want.moneyAtRisk // not a figure of the class sheets
	if diff := cmp.Diff(want, got, opt); diff != "" {
		t.Errorf("class sheet totals as LibreOffice shows them, against the JSON (-want +got):\n%s", diff)
	}

	for i, x := range r.Rejected {
		row := sheets["Rejected rows"][i+1]
		where := fmt.Sprintf("Rejected rows row %d", i+2)
		text(where+" reason", row[2], x.Reason)
		if len(x.Raw) <= maxCellText {
			text(where+" raw", row[3], x.Raw)
		} else if !row[3].quoted || !strings.HasPrefix(row[3].s, "[CUT to fit a cell") {
			t.Errorf("%s: a 40,000 character row shows as %.60q…, want it marked as cut", where, row[3].s)
		}
	}
	for i, x := range esc {
		row := sheets["Escalations"][i+2] // below the caption and the header
		text(fmt.Sprintf("Escalations row %d reason", i+3), row[3], x.Reason)
	}
	text("Inputs", sheets["Summary"][findRow(sheets["Summary"], "adyen-settlement")][0], r.Inputs[1].URI)
}

// expOf is the one exponent the currency has in r.
func expOf(r *Result, cur string) int {
	for _, d := range r.Discrepancies {
		if d.Currency == cur {
			e, _ := reconcile.Exponent(d.Provider, cur)
			return e
		}
	}
	return 2
}

func findRow(rows [][]field, second string) int {
	for i, row := range rows {
		if len(row) > 1 && row[1].s == second {
			return i
		}
	}
	return 0
}
