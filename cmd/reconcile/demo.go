package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"reconcile/ledgerdb"
	"reconcile/ledgerdb/sqlite"
	"reconcile/stripeapi"
	"reconcile/stripeapi/sandbox"
)

// demoOrders is how many orders the demo's shop takes.
const demoOrders = 300

func (a *app) demoCommand() *cobra.Command {
	var (
		dir  string
		keep bool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch the whole loop: a shop with faults, reconciliation with repairs, a page, the spreadsheet",
		Long: `demo runs everything on this machine, in a folder of its own, in a few seconds: the embedded
SQLite ledger and the Stripe sandbox (in this process).

A shop takes ` + fmt.Sprint(demoOrders) + ` orders through the sandbox and records each charge in the ledger, with
the faults real applications have: crashes between the call and the ledger write, retries, a
worker that outlived its lease, a provider that forgot a key, a price changed after it was
recorded, a charge made by hand in the dashboard. The sandbox writes its itemized report and
webhook dump, and reconcile runs with --apply: it refunds the duplicate charges, redelivers the
missing ones, and pages (into pages.log) for a refund the provider keeps failing, and for the
moved price. It writes discrepancies.xlsx for finance. A person resolves the pages; a second
round on the provider's report of the new period confirms every repair and finds nothing to do,
and writes discrepancies-round-2.xlsx.

With --keep the sandbox keeps running after the second round, the shop takes another day's
orders (with the same faults), and the demo prints the three uses to try by hand against them:
an ad hoc run on the day's settlement file, the nightly run with --apply, and the export of a
run's workbook for finance. Ctrl-C stops it.

Example:
  reconcile demo                 # files in ./reconcile-demo
  reconcile demo --dir /tmp/demo
  reconcile demo --keep          # then try the commands it prints; Ctrl-C to stop`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.demo(cmd.Context(), dir, keep) },
	}
	cmd.Flags().StringVar(&dir, "dir", "reconcile-demo", "folder for the demo's files (a previous demo's files there are replaced)")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the sandbox running on a new day's orders, print the commands to try against it, and stop on Ctrl-C")
	return cmd
}

func (a *app) demo(ctx context.Context, dir string, keep bool) error {
	if err := demoFolder(dir); err != nil {
		return err
	}
	out := a.stdout
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	sb := sandbox.New(sandbox.Options{})
	provSrv := httptest.NewServer(sb)
	defer provSrv.Close()
	pages := &pageFile{path: filepath.Join(dir, "pages.log")}
	pagerSrv := httptest.NewServer(pages)
	defer pagerSrv.Close()

	// The shop's day: its effects are recorded two hours before the
	// reconciliation, so that the settlement lag (one hour) has passed.
	ledgerPath := filepath.Join(dir, "ledger.db")
	dayStart := time.Now().Add(-2 * time.Hour).UTC()
	store, err := sqlite.Open(ctx, ledgerPath, ledgerdb.Config{Now: func() time.Time { return dayStart }})
	if err != nil {
		return err
	}
	defer store.Close()
	if _, err := store.SchemaMigrate(ctx); err != nil {
		return err
	}
	s := &shop{store: store, sb: sb, url: provSrv.URL, happened: map[string]int{},
		client: stripeapi.New(stripeapi.Config{BaseURL: provSrv.URL, APIKey: "sk_test_shop", Timeout: 5 * time.Second})}
	say("1. A shop takes %d orders through the Stripe sandbox (%s) and records them in the ledger (sqlite:%s).", demoOrders, provSrv.URL, ledgerPath)
	for i := range demoOrders {
		if err := s.order(ctx, i); err != nil {
			return fmt.Errorf("order %d: %w", i, err)
		}
	}
	if _, err := s.charge(ctx, "dashboard:1", 4200, "eur", ""); err != nil {
		return err
	}
	s.happened[faultDashboard]++
	say("   Along the way the shop\n%s", s.faults())
	report1, events := filepath.Join(dir, "stripe-day-1.itemized.csv"), filepath.Join(dir, "stripe-events.jsonl")
	if err := writeExport(report1, sb.ExportItemized); err != nil {
		return err
	}
	if err := writeExport(events, sb.ExportEvents); err != nil {
		return err
	}
	say("   The provider's own account of the day: %s and %s.", report1, events)

	// The nested commands log errors only: what they page is shown from
	// pages.log, and their summaries on stdout.
	quiet := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	// The provider fails one refund, whatever is tried: a compensation in doubt.
	sb.Inject(sandbox.Fault{Op: sandbox.OpRefund, Key: s.inDoubt, Kind: sandbox.FaultError500})
	round := func(n int, inputs ...string) error {
		f := &runFlags{lag: time.Hour, apply: true, runLease: true}
		f.in.stripeTZ = "UTC"
		f.in.livemode = false // the sandbox is Stripe's test mode
		f.act = actionFlags{apiKey: "sk_test_reconcile", providerURL: provSrv.URL, providerTimeout: 5 * time.Second, pagerWebhook: pagerSrv.URL,
			lease: time.Minute, grace: 0, deferredPage: 72 * time.Hour, maxActions: 1000}
		f.out.jsonPath = filepath.Join(dir, fmt.Sprintf("round-%d.json", n))
		f.out.xlsxPath = filepath.Join(dir, roundWorkbook(n))
		say("\n   reconcile run --apply --lag 1h --grace 0 --ledger sqlite:%s --json %s --xlsx %s %s\n", ledgerPath, f.out.jsonPath, f.out.xlsxPath, strings.Join(inputs, " "))
		run := &app{stdout: &indent{w: out}, stderr: a.stderr, log: quiet, ledgerURL: "sqlite:" + ledgerPath, clock: a.clock}
		err := run.run(ctx, f, inputs)
		if err != nil && !needsPersonOnly(err) {
			return err
		}
		return nil
	}
	say("\n2. Reconciliation, with --apply: refund the duplicates, redeliver the missing, page for what a person decides.")
	round1Start := time.Now().UTC()
	if err := round(1, report1, events); err != nil {
		return err
	}
	say("\n   The pager got (pages.log):\n%s", pages.read())
	say("\n3. The person on call looks at the escalations, fixes them, and resolves them.")
	sb.ClearFaults()
	extraCharge := s.inDoubt[strings.LastIndex(s.inDoubt, ":")+1:]
	refund, err := s.refundByHand(ctx, s.inDoubt, extraCharge)
	if err != nil {
		return err
	}
	person := &app{stdout: &indent{w: out}, stderr: a.stderr, clock: a.clock}
	pager := []string{"--pager-webhook", pagerSrv.URL}
	for _, args := range [][]string{
		{"escalations"},
		{"resolve", s.inDoubt, "--as", "compensated", "--note", "refunded by hand in the dashboard: " + refund, "--by", "on-call"},
		{"resolve", s.moved, "--as", "confirmed", "--note", "the customer accepted the new price", "--by", "on-call"},
	} {
		say("\n   reconcile %s", quoteArgs(args))
		cmd := person.rootCommand()
		args = append(args, "--ledger", "sqlite:"+ledgerPath)
		if args[0] == "resolve" {
			args = append(args, pager...)
		}
		cmd.SetArgs(args)
		if err := cmd.ExecuteContext(ctx); err != nil {
			return err
		}
	}

	say("\n4. The next day's report from the provider: the refunds and redeliveries, and nothing left to do.")
	report2 := filepath.Join(dir, "stripe-day-2.itemized.csv")
	if err := writeExport(report2, func(w io.Writer) error { return sb.ExportItemizedSince(w, round1Start) }); err != nil {
		return err
	}
	if err := round(2, report2); err != nil {
		return err
	}
	say("\nThe demo's files are in %s:", dir)
	for _, f := range []string{"ledger.db", "stripe-day-1.itemized.csv", "stripe-events.jsonl", "round-1.json", "discrepancies.xlsx",
		"pages.log", "stripe-day-2.itemized.csv", "round-2.json", "discrepancies-round-2.xlsx"} {
		say("  %s", filepath.Join(dir, f))
	}
	say("\nTry:\n  go run ./cmd/reconcile show %s --ledger sqlite:%s\n  go run ./cmd/reconcile escalations --all --ledger sqlite:%s",
		s.inDoubt, ledgerPath, ledgerPath)
	if !keep {
		return nil
	}
	return s.keep(ctx, say, dir, pagerSrv.URL, readRunID(filepath.Join(dir, "round-1.json")))
}

// roundWorkbook is the file name of round n's workbook.
func roundWorkbook(n int) string {
	if n == 1 {
		return "discrepancies.xlsx"
	}
	return fmt.Sprintf("discrepancies-round-%d.xlsx", n)
}

// faults lists what went wrong in the shop, one line per fault.
func (s *shop) faults() string {
	var faults []string
	for f, n := range s.happened {
		faults = append(faults, fmt.Sprintf("   %2d × %s", n, f))
	}
	sort.Strings(faults)
	return strings.Join(faults, "\n")
}

// readRunID is the run id of a JSON result, or "RUN_ID" if it cannot be
// read.
func readRunID(path string) string {
	var r struct {
		RunID string `json:"run_id"`
	}
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil || r.RunID == "" {
		return "RUN_ID"
	}
	return r.RunID
}

// keep is demo --keep: the shop takes a third day's orders through the
// sandbox, which keeps serving, and the demo prints the three uses to try
// against them, until ctx ends (Ctrl-C).
func (s *shop) keep(ctx context.Context, say func(string, ...any), dir, pagerURL, firstRun string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	day3 := time.Now().UTC()
	s.happened = map[string]int{}
	const more = demoOrders / 3
	for i := demoOrders; i < demoOrders+more; i++ {
		if err := s.order(ctx, i); err != nil {
			return fmt.Errorf("order %d: %w", i, err)
		}
	}
	report := filepath.Join(abs, "stripe-day-3.itemized.csv")
	if err := writeExport(report, func(w io.Writer) error { return s.sb.ExportItemizedSince(w, day3) }); err != nil {
		return err
	}
	ledger := "sqlite:" + filepath.Join(abs, "ledger.db")
	say("\n5. --keep: the sandbox keeps running at %s, and the shop takes %d more orders. Along the way it\n%s", s.url, more, s.faults())
	say("   The provider's report of the day: %s.", report)
	say(`
Try the three uses for real, from the repository (or with reconcile for go run ./cmd/reconcile once it is
installed); --lag 1h because the shop's day is only two hours old:

  An ad hoc run against one settlement file: the plan, nothing changes outside the ledger
    go run ./cmd/reconcile run --lag 1h --ledger %[1]s %[2]s

  The nightly run: make the repairs, page for the rest, write the workbook and the metrics
    STRIPE_API_KEY=sk_test_demo go run ./cmd/reconcile run --apply --lag 1h --ledger %[1]s --provider-url %[3]s --pager-webhook %[4]s --json %[5]s --xlsx %[6]s --metrics-file %[7]s %[2]s

  The discrepancy spreadsheet for finance, from any earlier run (here the first round)
    go run ./cmd/reconcile export --run %[8]s --xlsx %[9]s --ledger %[1]s

The sandbox's own record of what it did: curl %[3]s/_sandbox/export/itemized
Pages are appended to %[10]s.
The sandbox runs until Ctrl-C.`,
		shellWord(ledger), shellWord(report), s.url, pagerURL, shellWord(filepath.Join(abs, "round-3.json")),
		shellWord(filepath.Join(abs, "discrepancies-round-3.xlsx")), shellWord(filepath.Join(abs, "reconcile.prom")), firstRun,
		shellWord(filepath.Join(abs, "for-finance.xlsx")), filepath.Join(abs, "pages.log"))
	<-ctx.Done()
	say("\nStopped: the sandbox is gone; the ledger and the files stay in %s.", dir)
	return nil
}

// quoteArgs writes a command line as a shell would read it.
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.ContainsAny(a, " :'") && !strings.HasPrefix(a, "shop_") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// shellWord is s as one word of a shell command line: as it is when it
// holds nothing a shell reads otherwise, else single-quoted.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+,-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// demoFolder makes dir, and removes a previous demo's files from it.
func demoFolder(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"ledger.db", "ledger.db-wal", "ledger.db-shm", "stripe-day-1.itemized.csv", "stripe-events.jsonl",
		"stripe-day-2.itemized.csv", "round-1.json", "round-2.json", "discrepancies.xlsx", "pages.log", "discrepancies-round-2.xlsx",
		"stripe-day-3.itemized.csv", "round-3.json", "discrepancies-round-3.xlsx", "reconcile.prom", "for-finance.xlsx"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func writeExport(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pageFile is the demo's pager: a webhook receiver that appends each page
// to a file.
type pageFile struct {
	mu   sync.Mutex
	path string
}

func (p *pageFile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", time.Now().UTC().Format(time.RFC3339), body)
}

func (p *pageFile) read() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.Open(p.path)
	if err != nil {
		return "   (none)"
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		_, body, _ := strings.Cut(sc.Text(), " ")
		var page struct {
			Event      string
			Escalation struct{ Key, Reason string }
		}
		json.Unmarshal([]byte(body), &page)
		lines = append(lines, fmt.Sprintf("   %-8s %s\n            %s", page.Event, page.Escalation.Key, page.Escalation.Reason))
	}
	return strings.Join(lines, "\n")
}

// indent indents what a nested command prints, so the demo reads as a story.
type indent struct {
	w       io.Writer
	midLine bool
}

func (in *indent) Write(p []byte) (int, error) {
	var b strings.Builder
	for _, c := range string(p) {
		if !in.midLine && c != '\n' {
			b.WriteString("   ")
		}
		b.WriteRune(c)
		in.midLine = c != '\n'
	}
	if _, err := io.WriteString(in.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}
