package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/xuri/excelize/v2"

	"reconcile/ledgerdb"
	"reconcile/ledgerdb/postgres/pgtest"
	"reconcile/report"
)

// settlement is a Stripe itemized report about the effects seedLedger
// records: one charge seen once, one seen twice, one for another amount, a
// charge no effect of ours made, and a fee.
const settlement = "balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,source_id,charge_id,payment_intent_id,payment_metadata[effect_key],refund_metadata[effect_key]\n" +
	"txn_1,2026-11-01 09:00:00,eur,10.00,0.30,9.70,charge,ch_0,ch_0,pi_0,run_1:charge:0,\n" +
	"txn_2,2026-11-01 10:00:00,eur,20.00,0.60,19.40,charge,ch_1a,ch_1a,pi_1,run_1:charge:1,\n" +
	"txn_3,2026-11-01 11:00:00,eur,20.00,0.60,19.40,charge,ch_1b,ch_1b,pi_1b,run_1:charge:1,\n" +
	"txn_4,2026-11-01 12:00:00,eur,45.00,1.35,43.65,charge,ch_4,ch_4,pi_4,run_1:charge:4,\n" +
	"txn_5,2026-11-01 13:00:00,eur,99.00,2.97,96.03,charge,ch_u,ch_u,pi_u,,\n" +
	"txn_6,2026-11-01 14:00:00,eur,12.3.4,0,0,charge,ch_bad,ch_bad,,run_1:charge:9,\n" +
	"txn_7,2026-11-01 15:00:00,eur,-5.00,0.00,-5.00,refund,re_0,ch_0,pi_0,run_1:charge:0,run_1:refund:0\n" +
	"txn_8,2026-11-03 00:00:00,eur,-0.50,0.00,-0.50,fee,,,,,\n"

// seedLedger records the application's effects, as the application would:
// created on 30 October, except one created after the cutoff.
func seedLedger(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	created := time.Date(2026, 10, 30, 12, 0, 0, 0, time.UTC)
	store, _, err := openLedger(ctx, url, ledgerdb.Config{Now: func() time.Time { return created }})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rec := func(key, step, req string) {
		if _, err := store.EffectRecord(ctx, &ledgerdb.RecordParams{Key: key, RunID: "run_1", Step: step, Provider: "stripe", Request: json.RawMessage(req)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, amount := range []int{1000, 2000, 3000, 0, 4000} {
		key := fmt.Sprintf("run_1:charge:%d", i)
		if i == 3 {
			continue
		}
		rec(key, "charge", fmt.Sprintf(`{"amount": %d, "currency": "eur", "metadata": {"effect_key": %q}}`, amount, key))
	}
	rec("run_1:refund:0", "refund", `{"amount": 500, "currency": "eur", "charge": "ch_0"}`)
	rec("run_1:charge:1:compensate:ch_old", "compensate", `{"amount": 2000, "currency": "eur", "charge": "ch_old"}`)
	rec("run_1:notify_buyer:0", "notify_buyer", `{"to": "ana@example.org"}`)
	later, _, err := openLedger(ctx, url, ledgerdb.Config{Now: func() time.Time { return time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	if _, err := later.EffectRecord(ctx, &ledgerdb.RecordParams{Key: "run_1:charge:3", RunID: "run_1", Step: "charge", Provider: "stripe",
		Request: json.RawMessage(`{"amount": 500, "currency": "eur"}`)}); err != nil {
		t.Fatal(err)
	}
}

type runResult struct {
	RunID      string         `json:"run_id"`
	AsOf       string         `json:"as_of"`
	Applied    bool           `json:"applied"`
	Counts     map[string]int `json:"counts"`
	OutOfScope int            `json:"out_of_scope"`
	Inputs     []struct {
		URI             string `json:"uri"`
		Format          string `json:"format"`
		Rows            int    `json:"rows"`
		Evidence        int    `json:"evidence"`
		Rejected        int    `json:"rejected"`
		AlreadyIngested bool   `json:"already_ingested"`
	} `json:"inputs"`
	Discrepancies []struct {
		Class         string   `json:"class"`
		EffectKey     string   `json:"effect_key"`
		Provider      string   `json:"provider"`
		Currency      string   `json:"currency"`
		ExpectedMinor int64    `json:"expected_minor"`
		ObservedMinor int64    `json:"observed_minor"`
		Transactions  []string `json:"transactions"`
		Related       []string `json:"related"`
		Actions       []struct {
			Kind    string `json:"kind"`
			Key     string `json:"key"`
			Target  string `json:"target"`
			Outcome string `json:"outcome"`
		} `json:"actions"`
	} `json:"discrepancies"`
	Rejected []struct {
		URI    string `json:"uri"`
		Line   int    `json:"line"`
		Reason string `json:"reason"`
	} `json:"rejected"`
}

func runJSON(t *testing.T, args ...string) (int, runResult, string) {
	t.Helper()
	code, out, errOut := reconcileCmd(t, append([]string{"run", "--json", "-"}, args...)...)
	var r runResult
	if code == 0 || code == exitPerson {
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("run printed no JSON result (%v): %s\nstderr: %s", err, out, errOut)
		}
		if err := report.CheckContract(strings.NewReader(out)); err != nil {
			t.Errorf("the JSON result breaks the contract: %v", err)
		}
	}
	return code, r, errOut
}

func testRunClassifiesAndPlans(t *testing.T, ledger string) {
	seedLedger(t, ledger)
	path := writeFile(t, "2026-11-01.itemized.csv", settlement)
	code, r, errOut := runJSON(t, "--ledger", ledger, path)
	if code != exitPerson {
		t.Fatalf("exit %d, want %d (mismatched and unexpected need a person): %s", code, exitPerson, errOut)
	}
	wantCounts := map[string]int{"confirmed": 2, "duplicated": 1, "missing": 1, "pending": 1, "mismatched": 1, "unexpected": 1, "deferred": 0, "escalated": 1}
	if diff := cmp.Diff(wantCounts, r.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if r.Applied || r.AsOf != "2026-11-03T00:00:00Z" || r.OutOfScope != 1 || !strings.HasPrefix(r.RunID, "rec_") {
		t.Errorf("run_id %q as_of %q applied %v out_of_scope %d", r.RunID, r.AsOf, r.Applied, r.OutOfScope)
	}
	var got []string
	for _, d := range r.Discrepancies {
		var acts []string
		for _, a := range d.Actions {
			acts = append(acts, fmt.Sprintf("%s %s %s %s", a.Kind, a.Key, a.Target, a.Outcome))
		}
		got = append(got, fmt.Sprintf("%s %s %s %s %d %d %v %v", d.Class, d.EffectKey, d.Provider, d.Currency, d.ExpectedMinor, d.ObservedMinor, d.Transactions, acts))
	}
	sort.Strings(got)
	want := []string{
		"duplicated run_1:charge:1 stripe EUR 2000 4000 [ch_1a ch_1b] [compensate run_1:charge:1:compensate:ch_1b ch_1b planned]",
		"escalated run_1:charge:1:compensate:ch_old stripe EUR 2000 0 [] [escalate run_1:charge:1:compensate:ch_old:escalate:escalated run_1:charge:1:compensate:ch_old planned]",
		"mismatched run_1:charge:4 stripe EUR 4000 4500 [ch_4] [escalate run_1:charge:4:escalate:mismatched run_1:charge:4 planned]",
		"missing run_1:charge:2 stripe EUR 3000 0 [] [redeliver run_1:charge:2 run_1:charge:2 planned]",
		"pending run_1:charge:3 stripe EUR 500 0 [] []",
		"unexpected  stripe EUR 0 9900 [ch_u] []",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("discrepancies (-want +got):\n%s", diff)
	}
	if len(r.Inputs) != 1 || r.Inputs[0].Rows != 8 || r.Inputs[0].Evidence != 7 || r.Inputs[0].Rejected != 1 {
		t.Errorf("inputs = %+v", r.Inputs)
	}
	if len(r.Rejected) != 1 || r.Rejected[0].Line != 7 || r.Rejected[0].URI != path {
		t.Errorf("rejected = %+v; want line 7 of %s", r.Rejected, path)
	}

	ctx := context.Background()
	store, _, err := openLedger(ctx, ledger, ledgerdb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e, err := store.EffectGet(ctx, "run_1:charge:0")
	if err != nil || e.Status != "confirmed" || e.ExternalID != "pi_0" {
		t.Errorf("run_1:charge:0 after the run = %+v, %v; want confirmed as pi_0", e, err)
	}
	findings, err := store.FindingListByRun(ctx, r.RunID)
	if err != nil || len(findings) != 6 {
		t.Errorf("recorded findings = %d, %v; want 6", len(findings), err)
	}

	// The same inputs again: what is still open is reported again, the
	// same; nothing is new (no confirmation, no unexpected money), and
	// nothing new is in the ledger.
	code, again, _ := runJSON(t, "--ledger", ledger, path)
	if code != exitPerson {
		t.Errorf("second run exit %d", code)
	}
	if again.RunID == r.RunID || !again.Inputs[0].AlreadyIngested {
		t.Errorf("second run: run id %s (first %s), input %+v", again.RunID, r.RunID, again.Inputs[0])
	}
	again.RunID, r.RunID = "", ""
	again.Inputs[0].AlreadyIngested = false
	r.Counts["confirmed"], r.Counts["unexpected"] = 0, 0
	open := r.Discrepancies[:0]
	for _, d := range r.Discrepancies {
		if d.Class != "unexpected" {
			open = append(open, d)
		}
	}
	r.Discrepancies = open
	if diff := cmp.Diff(r, again); diff != "" {
		t.Errorf("second run on the same inputs differs (-first +second):\n%s", diff)
	}
	if srcs, err := store.SourceList(ctx); err != nil || len(srcs) != 1 {
		t.Errorf("sources after two runs = %d, %v; want 1", len(srcs), err)
	}
}

func TestRunClassifiesAndPlansOnSQLite(t *testing.T) {
	t.Parallel()
	testRunClassifiesAndPlans(t, migratedSQLite(t))
}

func TestRunClassifiesAndPlansOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	if code, _, errOut := reconcileCmd(t, "migrate", "--ledger", url); code != 0 {
		t.Fatal(errOut)
	}
	testRunClassifiesAndPlans(t, url)
}

// An input that cannot be read stops the run before it changes anything:
// the readable inputs beside it are not ingested either, whether the
// unreadable one is read first to check it (a smaller one) or written first
// (the larger, in a transaction its failure rolls back), and on PostgreSQL
// whatever the others wrote meanwhile is rolled back too. Between them, a
// gzip of many rows, smaller than the largest input but read for much
// longer, is found cut short only after the largest has been read whole.
func testRunWithAnUnreadableInputChangesNothing(t *testing.T, migrated func(*testing.T) string) {
	gzipped := func(b []byte) string {
		var out bytes.Buffer
		zw := gzip.NewWriter(&out)
		zw.Write(b)
		zw.Close()
		return out.String()
	}
	noise := make([]byte, 16<<10) // what does not compress, so that the gzip is the larger input
	rand.NewChaCha8([32]byte{}).Read(noise)
	big := gzipped(noise)
	rows := func(prefix string, n int) string {
		b := []byte(settlement[:strings.IndexByte(settlement, '\n')+1])
		for i := range n {
			b = fmt.Appendf(b, "txn_%s%d,2026-11-01 09:00:00,eur,10.00,0.30,9.70,charge,ch_%[1]s%[2]d,ch_%[1]s%[2]d,pi_%[1]s%[2]d,,\n", prefix, i)
		}
		return string(b)
	}
	long := gzipped([]byte(rows("b", 300_000)))
	for name, c := range map[string]struct{ bad, other string }{
		"smaller": {"\x1f\x8b\x08\x00garbage", strings.Replace(settlement, "ch_", "ch_other_", -1)},
		"larger":  {big[:len(big)-20], strings.Replace(settlement, "ch_", "ch_other_", -1)}, // truncated
		"between": {long[:len(long)-20], rows("o", 40_000)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ledger := migrated(t)
			seedLedger(t, ledger)
			good := writeFile(t, "good.itemized.csv", settlement)
			other := writeFile(t, "other.itemized.csv", c.other)
			bad := writeFile(t, "bad.csv.gz", c.bad)
			if name == "larger" && len(settlement) >= len(big) {
				t.Fatalf("the truncated gzip (%d bytes) is not the larger input", len(big))
			}
			if name == "between" && !(len(settlement) < len(c.bad) && len(c.bad) < len(c.other)) {
				t.Fatalf("the truncated gzip (%d bytes) is not between the others (%d and %d)", len(c.bad), len(settlement), len(c.other))
			}
			code, _, errOut := reconcileCmd(t, "run", "--ledger", ledger, good, bad, other)
			if code != exitUsage || !strings.Contains(errOut, bad) {
				t.Errorf("exit %d, stderr %q; want %d naming %s", code, errOut, exitUsage, bad)
			}
			store, _, err := openLedger(context.Background(), ledger, ledgerdb.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			if srcs, err := store.SourceList(context.Background()); err != nil || len(srcs) != 0 {
				t.Errorf("sources after a refused run = %+v, %v; want none", srcs, err)
			}
		})
	}
}

// The same content under two names in one run is ingested once, as the
// first input named (the second is reported as already ingested, with the
// first's account), and matched as its one copy would be.
func testRunReadsTheSameContentOnce(t *testing.T, migrated func(*testing.T) string) {
	for range 3 { // which copy is written must not depend on which is read faster
		ledger := migrated(t)
		seedLedger(t, ledger)
		first := writeFile(t, "a.itemized.csv", settlement)
		copied := writeFile(t, "b.itemized.csv", settlement)
		code, r, errOut := runJSON(t, "--ledger", ledger, first, copied)
		if code != exitPerson {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if len(r.Inputs) != 2 || r.Inputs[0].URI != first || r.Inputs[0].AlreadyIngested || !r.Inputs[1].AlreadyIngested ||
			r.Inputs[0].Evidence == 0 || r.Inputs[1].Evidence != r.Inputs[0].Evidence {
			t.Fatalf("inputs %+v: want the first written, the copy found in the manifest with the first's account", r.Inputs)
		}
		want := map[string]int{"confirmed": 2, "duplicated": 1, "missing": 1, "pending": 1, "mismatched": 1, "unexpected": 1, "deferred": 0, "escalated": 1}
		if diff := cmp.Diff(want, r.Counts); diff != "" {
			t.Fatalf("counts (-one copy's +got):\n%s", diff)
		}
	}
}

func TestRunReadsTheSameContentOnce(t *testing.T) {
	t.Parallel()
	testRunReadsTheSameContentOnce(t, migratedSQLite)
}

func TestRunReadsTheSameContentOnceOnPostgres(t *testing.T) {
	t.Parallel()
	testRunReadsTheSameContentOnce(t, migratedPostgres)
}

// A file written into the ledger by "reconcile ingest" is new to the first
// run given it, which reports all it holds, as a run that reads it itself
// does; the next run given it again reports nothing new.
func testARunReportsWhatAnIngestAloneWrote(t *testing.T, migrated func(*testing.T) string) {
	ledger := migrated(t)
	seedLedger(t, ledger)
	path := writeFile(t, "night.itemized.csv", settlement)
	if code, out, errOut := reconcileCmd(t, "ingest", "--ledger", ledger, path); code != 0 {
		t.Fatalf("ingest exited %d: %s%s", code, out, errOut)
	}
	code, r, errOut := runJSON(t, "--ledger", ledger, path)
	if code != exitPerson || len(r.Inputs) != 1 || !r.Inputs[0].AlreadyIngested {
		t.Fatalf("exit %d, inputs %+v: %s", code, r.Inputs, errOut)
	}
	want := map[string]int{"confirmed": 2, "duplicated": 1, "missing": 1, "pending": 1, "mismatched": 1, "unexpected": 1, "deferred": 0, "escalated": 1}
	if diff := cmp.Diff(want, r.Counts); diff != "" {
		t.Errorf("counts (-as a run that reads the file +after the ingest):\n%s", diff)
	}
	if _, r, errOut := runJSON(t, "--ledger", ledger, path); r.Counts["unexpected"] != 0 || r.Counts["confirmed"] != 0 {
		t.Errorf("the next run over the same file: counts %v, want nothing new: %s", r.Counts, errOut)
	}
}

func TestARunReportsWhatAnIngestAloneWrote(t *testing.T) {
	t.Parallel()
	testARunReportsWhatAnIngestAloneWrote(t, migratedSQLite)
}

func TestARunReportsWhatAnIngestAloneWroteOnPostgres(t *testing.T) {
	t.Parallel()
	testARunReportsWhatAnIngestAloneWrote(t, migratedPostgres)
}

func TestRunWithAnUnreadableInputChangesNothing(t *testing.T) {
	t.Parallel()
	testRunWithAnUnreadableInputChangesNothing(t, migratedSQLite)
}

func TestRunWithAnUnreadableInputChangesNothingOnPostgres(t *testing.T) {
	t.Parallel()
	testRunWithAnUnreadableInputChangesNothing(t, migratedPostgres)
}

// Without anything for a person, a run exits 0, even with planned repairs.
func TestRunExitsZeroWhenNothingNeedsAPerson(t *testing.T) {
	t.Parallel()
	ledger := migratedSQLite(t)
	seedLedger(t, ledger)
	lines := strings.Split(settlement, "\n")
	clean := strings.Join([]string{lines[0], lines[1], lines[2], lines[3], lines[8]}, "\n") + "\n"
	code, r, errOut := runJSON(t, "--ledger", ledger, "--as-of", "2026-11-03", writeFile(t, "clean.csv", clean))
	if code != 0 {
		t.Errorf("exit %d, want 0: %s", code, errOut)
	}
	if r.Counts["duplicated"] != 1 || r.Counts["missing"] != 2 || r.Counts["mismatched"] != 0 || r.OutOfScope != 3 {
		t.Errorf("counts = %v", r.Counts)
	}
	if code, _, _ := reconcileCmd(t, "run", "--apply", "--ledger", ledger, writeFile(t, "x.csv", clean)); code != exitUsage {
		t.Errorf("--apply in this release: exit %d, want %d", code, exitUsage)
	}
}

// A generated world of a few thousand effects, which the classification was
// not tuned for, is classified as it was built, on both ledgers.
func testGeneratedWorld(t *testing.T, ledger string) {
	code, out, errOut := reconcileCmd(t, "bench", "--effects", "3000", "--seed", "7", "--ledger", ledger, "--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("bench exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "DIFFERS") || strings.Count(out, " ok\n") != 6 {
		t.Errorf("the run did not find the world as built:\n%s", out)
	}
}

func TestGeneratedWorldOnSQLite(t *testing.T) {
	t.Parallel()
	testGeneratedWorld(t, migratedSQLite(t))
}

func TestGeneratedWorldOnPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	if code, _, errOut := reconcileCmd(t, "migrate", "--ledger", url); code != 0 {
		t.Fatal(errOut)
	}
	testGeneratedWorld(t, url)
}

// A run writes the finance spreadsheet and the metrics file it is asked
// for, and `export` writes the same run's spreadsheet again later.
func TestRunWritesSpreadsheetMetricsAndExport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger := migratedSQLite(t)
	seedLedger(t, ledger)
	xlsx, metrics := filepath.Join(dir, "run.xlsx"), filepath.Join(dir, "reconcile.prom")
	code, r, errOut := runJSON(t, "--ledger", ledger, "--xlsx", xlsx, "--metrics-file", metrics, writeFile(t, "2026-11-01.itemized.csv", settlement))
	if code != exitPerson {
		t.Fatalf("run = %d: %s", code, errOut)
	}
	sheets := func(path string) []string {
		f, err := excelize.OpenFile(path)
		if err != nil {
			t.Fatalf("spreadsheet %s: %v", path, err)
		}
		defer f.Close()
		cell, _ := f.GetCellValue("Summary", "B1")
		all, _ := f.GetRows("Summary")
		if !strings.Contains(fmt.Sprint(all), r.RunID) {
			t.Errorf("the Summary of %s does not name run %s (B1 %q)", path, r.RunID, cell)
		}
		return f.GetSheetList()
	}
	got := sheets(xlsx)
	if got[0] != "Summary" || !slices.Contains(got, "Duplicated") || !slices.Contains(got, "Rejected rows") {
		t.Errorf("sheets = %v, want Summary first, then the classes found and the rejected rows", got)
	}
	prom, err := os.ReadFile(metrics)
	if err != nil || !strings.Contains(string(prom), `reconcile_findings{class="duplicated"} 1`) || !strings.Contains(string(prom), "reconcile_last_success_timestamp_seconds") {
		t.Errorf("metrics file (%v):\n%s", err, prom)
	}
	again := filepath.Join(dir, "export.xlsx")
	if code, _, errOut := reconcileCmd(t, "export", "--run", r.RunID, "--xlsx", again, "--ledger", ledger); code != 0 {
		t.Fatalf("export = %d: %s", code, errOut)
	}
	if diff := cmp.Diff(got, sheets(again)); diff != "" {
		t.Errorf("export's sheets differ from the run's (-run +export):\n%s", diff)
	}
	if code, _, _ := reconcileCmd(t, "export", "--run", "rec_nope", "--xlsx", again, "--ledger", ledger); code != exitUsage {
		t.Errorf("export of an unknown run = %d, want %d", code, exitUsage)
	}
}

// A run writes its own CPU profile where RECONCILE_CPUPROFILE says: how
// bench --cpuprofile profiles the run's process rather than its own.
func TestRunWritesItsCPUProfileWhereTold(t *testing.T) {
	ledger := migratedSQLite(t)
	seedLedger(t, ledger)
	path := filepath.Join(t.TempDir(), "run.prof")
	t.Setenv(cpuProfileEnv, path)
	if code, _, errOut := runJSON(t, "--ledger", ledger, "--as-of", "2026-11-03", writeFile(t, "s.csv", settlement)); code != 0 && code != exitPerson {
		t.Fatalf("run exit %d: %s", code, errOut)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no profile: %v", err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f) // a profile is a gzipped protocol buffer
	if err != nil {
		t.Fatalf("the profile is not one: %v", err)
	}
	if b, err := io.ReadAll(z); err != nil || len(b) == 0 {
		t.Errorf("the profile holds %d bytes, %v", len(b), err)
	}
}
