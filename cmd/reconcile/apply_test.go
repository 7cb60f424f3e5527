package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"reconcile"
	"reconcile/job"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/report"
	"reconcile/stripeapi"
	"reconcile/stripeapi/sandbox"
)

// mainEnv makes the test binary run the command line instead of the tests:
// the crash tests need a real process to kill.
const mainEnv = "RECONCILE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(runMain())
	}
	os.Exit(m.Run())
}

// applyWorld is an application's ledger and the Stripe sandbox it charged
// through: normal charges, charges duplicated by a retry under a fresh key
// (the bug reconciliation exists for), and effects recorded but never sent
// (a crash before the call). The sandbox's own report is the input.
type applyWorld struct {
	t        *testing.T
	l        *ledgerdbtest.Ledger
	sb       *sandbox.Server
	url      string
	calls    atomic.Int64 // every HTTP request the sandbox served
	report   string
	dups     []string // effect keys charged twice
	missing  []string // effect keys never sent
	payments int      // payments the application made
	// later is how far ahead of the machine's clock the runs' clock is:
	// moved past a killed run's leases instead of waiting for them.
	later time.Duration
}

func newApplyWorld(t *testing.T, l *ledgerdbtest.Ledger) *applyWorld {
	w := &applyWorld{t: t, l: l, sb: sandbox.New(sandbox.Options{})}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			w.calls.Add(1)
		}
		w.sb.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	w.url = srv.URL
	ctx := context.Background()
	client := stripeapi.New(stripeapi.Config{BaseURL: w.url, APIKey: "sk_test_app"})
	created := time.Now().Add(-time.Hour).UTC()
	var effects []reconcile.Effect
	for i := range 8 {
		key := fmt.Sprintf("app_1:charge:%d", i)
		req := json.RawMessage(fmt.Sprintf(`{"amount": %d, "currency": "eur", "customer": "cus_%d", "payment_method": "pm_card_visa", "metadata": {"effect_key": %q}}`,
			1000+i*100, i, key))
		e := reconcile.Effect{Key: key, RunID: "app_1", Step: "charge", Provider: "stripe", Request: req, CreatedAt: created, Status: reconcile.StatusAttempted}
		if i >= 6 { // recorded, then the application crashed before the call
			w.missing = append(w.missing, key)
			effects = append(effects, e)
			continue
		}
		made, err := client.CreatePaymentIntent(ctx, key, req)
		if err != nil {
			t.Fatal(err)
		}
		w.payments++
		e.Status, e.ExternalID, e.ConfirmedAt = reconcile.StatusConfirmed, made.ID, created
		if i >= 4 { // the application retried under a fresh key: a second charge
			w.retryWithFreshKey(key, 1000+i*100)
			w.dups = append(w.dups, key)
		}
		effects = append(effects, e)
	}
	store := l.Open(t, nil)
	if err := store.EffectLoad(ctx, effects); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := w.sb.ExportItemized(&buf); err != nil {
		t.Fatal(err)
	}
	w.report = filepath.Join(t.TempDir(), "balance_change_from_activity.itemized.csv")
	if err := os.WriteFile(w.report, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// retryWithFreshKey charges again as a careless application would: same
// metadata, a new idempotency key.
func (w *applyWorld) retryWithFreshKey(key string, amount int) {
	form := url.Values{"amount": {fmt.Sprint(amount)}, "currency": {"eur"}, "confirm": {"true"}, "payment_method": {"pm_card_visa"},
		"metadata[effect_key]": {key}}
	req, _ := http.NewRequest(http.MethodPost, w.url+"/v1/payment_intents", strings.NewReader(form.Encode()))
	req.Header.Set("Authorization", "Bearer sk_test_app")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", "retry-"+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		w.t.Fatalf("retry charge: %v %v", resp, err)
	}
	resp.Body.Close()
	w.payments++
}

// reconcile runs `reconcile run --apply` in a child process; crashAt names
// the point where it kills itself. It returns the exit status (-1 when
// killed) and the JSON result when there is one.
func (w *applyWorld) reconcile(crashAt string, extra ...string) (int, *runResult, string) {
	args := append([]string{"run", "--apply", "--lag", "0", "--ledger", w.l.URL, "--provider-url", w.url,
		"--lease", "1s", "--provider-timeout", "500ms", "--json", "-"}, extra...)
	cmd := exec.Command(os.Args[0], append(args, w.report)...)
	cmd.Env = append(os.Environ(), mainEnv+"=1", "STRIPE_API_KEY=sk_test_job", "RECONCILE_TEST_CRASH_AT="+crashAt,
		"RECONCILE_TEST_CLOCK_OFFSET="+w.later.String())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -1, nil, stderr.String()
		}
		if ee.ExitCode() != exitPerson {
			return ee.ExitCode(), nil, stderr.String()
		}
	} else if err != nil {
		w.t.Fatal(err)
	}
	if stdout.Len() == 0 && strings.Contains(stderr.String(), "this run is skipped") {
		return 0, nil, stderr.String() // a killed run's lease is still live
	}
	var r runResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		w.t.Fatalf("no JSON result (%v): %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if err := report.CheckContract(bytes.NewReader(stdout.Bytes())); err != nil {
		w.t.Errorf("the JSON result breaks the contract: %v", err)
	}
	return cmd.ProcessState.ExitCode(), &r, stderr.String()
}

// converge runs until no run is skipped and no action is left deferred by
// the live leases of a killed run. Instead of waiting for those leases to
// run out, each next run starts with its clock (and its ledger's) a lease
// later: the crash matrix's binary reads RECONCILE_TEST_CLOCK_OFFSET.
func (w *applyWorld) converge() *runResult {
	for range 5 {
		code, r, errOut := w.reconcile("")
		if r == nil && code != 0 {
			w.t.Fatalf("run exited %d: %s", code, errOut)
		}
		if r != nil && !hasOutcome(r, "deferred") {
			return r
		}
		w.later += 1100 * time.Millisecond // past the killed run's leases
	}
	w.t.Fatal("actions stayed deferred after five runs")
	return nil
}

func hasOutcome(r *runResult, o string) bool {
	for _, d := range r.Discrepancies {
		for _, x := range d.Actions {
			if x.Outcome == o {
				return true
			}
		}
	}
	return false
}

// check asserts the sandbox's own record: one refund per extra charge, one
// payment per missing effect, nothing else; and that the ledger agrees.
func (w *applyWorld) check() {
	w.t.Helper()
	refunds := map[string]int{}
	for _, r := range w.sb.Refunds() {
		refunds[r.Metadata["compensates"]]++
	}
	for _, key := range w.dups {
		if refunds[key] != 1 {
			w.t.Errorf("%s: %d refunds at the provider, want exactly 1", key, refunds[key])
		}
	}
	if len(w.sb.Refunds()) != len(w.dups) {
		w.t.Errorf("%d refunds at the provider, want %d", len(w.sb.Refunds()), len(w.dups))
	}
	byKey := map[string][]string{}
	for _, p := range w.sb.Payments() {
		byKey[p.Metadata["effect_key"]] = append(byKey[p.Metadata["effect_key"]], p.ID)
	}
	if got, want := len(w.sb.Payments()), w.payments+len(w.missing); got != want {
		w.t.Errorf("%d payments at the provider, want %d", got, want)
	}
	ctx := context.Background()
	store := w.l.Open(w.t, nil)
	for _, key := range w.missing {
		e, err := store.EffectGet(ctx, key)
		if err != nil {
			w.t.Fatal(err)
		}
		if len(byKey[key]) != 1 || e.Status != reconcile.StatusConfirmed || e.ExternalID != byKey[key][0] {
			w.t.Errorf("%s: provider has %v, ledger says %s %q; want one payment, confirmed with its id", key, byKey[key], e.Status, e.ExternalID)
		}
	}
	for _, r := range w.sb.Refunds() {
		e, err := store.EffectGet(ctx, r.Metadata["effect_key"])
		if err != nil {
			w.t.Fatalf("refund %s has no compensation row: %v", r.ID, err)
		}
		if e.Status != reconcile.StatusConfirmed || e.ExternalID != r.ID || e.Depth != 1 || e.ParentKey != r.Metadata["compensates"] {
			w.t.Errorf("compensation %s: %s %q depth %d parent %s; want confirmed %s at depth 1", e.Key, e.Status, e.ExternalID, e.Depth, e.ParentKey, r.ID)
		}
		if c, err := store.ClaimGet(ctx, e.Key); err != nil || c.State != reconcile.ClaimStateDone {
			w.t.Errorf("claim of %s = %+v, %v; want done", e.Key, c, err)
		}
	}
}

// The job is killed at every boundary of an action, and before the run is
// recorded; run again, it makes exactly one refund per extra charge and one
// charge per missing effect, and the ledger agrees with the provider.
func TestCrashAtEveryBoundaryMakesEachActionOnce(t *testing.T) {
	requireFailpoints(t)
	points := []string{"compensate:claimed", "compensate:called", "compensate:settled",
		"redeliver:claimed", "redeliver:called", "redeliver:settled", "run:acted"}
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		for _, point := range points {
			t.Run(point, func(t *testing.T) {
				w := newApplyWorld(t, ledgerdbtest.New(t, l.Driver))
				if code, _, errOut := w.reconcile(point); code != -1 {
					t.Fatalf("the run was not killed at %s: exit %d\n%s", point, code, errOut)
				}
				w.converge()
				w.check()
			})
		}
	})
}

// Killed after the provider made the payment, and the provider forgets the
// key before the next run (its 24 hours passed): the next run looks the
// payment up before acting again, and does not charge twice.
func TestCrashAfterCallThenKeyForgottenLooksUpFirst(t *testing.T) {
	requireFailpoints(t)
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newApplyWorld(t, l)
		if code, _, errOut := w.reconcile("redeliver:called"); code != -1 {
			t.Fatalf("the run was not killed: exit %d\n%s", code, errOut)
		}
		w.sb.ForgetKeys()
		w.converge()
		w.check()
	})
}

// Two `reconcile run --apply` processes at once on the same inputs make
// every action once. The run lease is off, so that both runs act and the
// claims alone keep each action single.
func TestTwoRunsAtOnceMakeEachActionOnce(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newApplyWorld(t, l)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				if code, _, errOut := w.reconcile("", "--run-lease=false"); code != 0 {
					t.Errorf("run exited %d: %s", code, errOut)
				}
			})
		}
		wg.Wait()
		w.converge()
		w.check()
	})
}

// A second run on the same inputs makes no provider call and reports the
// same findings, with the actions skipped.
func TestSecondRunMakesNoProviderCall(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newApplyWorld(t, l)
		code, first, errOut := w.reconcile("")
		if code != 0 || first == nil {
			t.Fatalf("first run exited %d: %s", code, errOut)
		}
		if first.Counts["duplicated"] != len(w.dups) || first.Counts["missing"] != len(w.missing) || !first.Applied {
			t.Errorf("first run counts %v, applied %v; want %d duplicated, %d missing, applied", first.Counts, first.Applied, len(w.dups), len(w.missing))
		}
		for _, d := range first.Discrepancies {
			for _, x := range d.Actions {
				if x.Outcome != "applied" {
					t.Errorf("first run: %s %s is %s, want applied", x.Kind, x.Key, x.Outcome)
				}
			}
		}
		before := w.calls.Load()
		code, second, errOut := w.reconcile("")
		if code != 0 || second == nil {
			t.Fatalf("second run exited %d: %s", code, errOut)
		}
		if n := w.calls.Load() - before; n != 0 {
			t.Errorf("the second run made %d provider calls, want none", n)
		}
		// What the first run repaired is not found again from the same
		// report; the redeliveries stay missing until a report shows them.
		if second.Counts["missing"] != len(w.missing) || second.Counts["duplicated"] != 0 || second.Counts["unexpected"] != 0 {
			t.Errorf("second run counts %v, want the %d missing effects awaiting the provider's report, and nothing else", second.Counts, len(w.missing))
		}
		for _, d := range second.Discrepancies {
			for _, x := range d.Actions {
				if x.Outcome != "skipped" {
					t.Errorf("second run: %s %s is %s, want skipped", x.Kind, x.Key, x.Outcome)
				}
			}
		}
		w.check()
	})
}

// The provider's own report after the repairs: the refunds and the
// redeliveries are confirmed, and nothing is left to do.
func TestSecondRoundOnTheProvidersNewReportConfirmsTheRepairs(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		w := newApplyWorld(t, l)
		if code, _, errOut := w.reconcile(""); code != 0 {
			t.Fatalf("first run exited %d: %s", code, errOut)
		}
		var buf bytes.Buffer
		if err := w.sb.ExportItemized(&buf); err != nil {
			t.Fatal(err)
		}
		w.report = filepath.Join(t.TempDir(), "after.itemized.csv")
		os.WriteFile(w.report, buf.Bytes(), 0o644)
		code, r, errOut := w.reconcile("")
		if code != 0 || r == nil {
			t.Fatalf("second round exited %d: %s", code, errOut)
		}
		if r.Counts["missing"] != 0 || r.Counts["escalated"] != 0 || r.Counts["unexpected"] != 0 {
			t.Errorf("second round counts %v: want nothing missing, escalated or unexpected", r.Counts)
		}
		if hasOutcome(r, "applied") || hasOutcome(r, "planned") || hasOutcome(r, "deferred") {
			t.Errorf("second round still acts: %+v", r.Discrepancies)
		}
		store := l.Open(t, nil)
		states, err := store.EffectStateGetMany(context.Background(), append(append([]string{}, w.missing...), compensationKeys(t, w)...))
		if err != nil {
			t.Fatal(err)
		}
		for k, st := range states {
			if st.Class != reconcile.ClassConfirmed || !st.Final {
				t.Errorf("%s after the second round: %s (final %v), want confirmed", k, st.Class, st.Final)
			}
		}
		if len(states) != len(w.missing)+len(w.dups) {
			t.Errorf("%d states, want %d", len(states), len(w.missing)+len(w.dups))
		}
	})
}

func compensationKeys(t *testing.T, w *applyWorld) []string {
	var keys []string
	for _, r := range w.sb.Refunds() {
		keys = append(keys, r.Metadata["effect_key"])
	}
	return keys
}

// Without STRIPE_API_KEY, --apply is a usage error and nothing runs.
func TestApplyNeedsTheProviderKey(t *testing.T) {
	l := ledgerdbtest.New(t, "sqlite")
	t.Setenv("STRIPE_API_KEY", "")
	code, _, errOut := reconcileCmd(t, "run", "--apply", "--ledger", l.URL, writeFile(t, "x.itemized.csv", settlement))
	if code != exitUsage || !strings.Contains(errOut, "STRIPE_API_KEY") {
		t.Errorf("exit %d, %q; want a usage error naming STRIPE_API_KEY", code, errOut)
	}
	store := l.Open(t, nil)
	if srcs, _ := store.SourceList(context.Background()); len(srcs) != 0 {
		t.Errorf("a refused run ingested %d sources", len(srcs))
	}
}

// A refund that keeps failing in doubt is escalated and paged once; a
// person finds it with `escalations` and `show`, and closes it with
// `resolve`, which resolves the page too.
func TestOnCallFindsShowsAndResolvesAnEscalation(t *testing.T) {
	l := ledgerdbtest.New(t, "sqlite")
	w := newApplyWorld(t, l)
	w.sb.Inject(sandbox.Fault{Op: sandbox.OpRefund, Key: "", Kind: sandbox.FaultError500})
	var mu sync.Mutex
	var pages []string
	hook := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var body struct {
			Event      string
			Escalation struct{ Key string }
		}
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		pages = append(pages, body.Event+" "+body.Escalation.Key)
		mu.Unlock()
	}))
	defer hook.Close()
	for range 2 {
		code, r, errOut := w.reconcile("", "--grace", "0", "--pager-webhook", hook.URL)
		if code != exitPerson || r == nil || r.Counts["escalated"] != len(w.dups) {
			t.Fatalf("run = %d, %+v; want exit 3 with %d escalated\n%s", code, r, len(w.dups), errOut)
		}
	}
	if len(pages) != len(w.dups) {
		t.Errorf("two runs sent %d pages for %d compensations in doubt, want one each: %v", len(pages), len(w.dups), pages)
	}
	code, out, _ := reconcileCmd(t, "escalations", "--ledger", l.URL)
	if code != 0 || strings.Count(out, "escalated") != len(w.dups) || !strings.Contains(out, w.dups[0]+":compensate:") {
		t.Fatalf("escalations = %d:\n%s", code, out)
	}
	var comp string
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, w.dups[0]+":compensate:") {
			comp = f
		}
	}
	code, out, _ = reconcileCmd(t, "show", comp, "--ledger", l.URL)
	for _, want := range []string{"step compensate at stripe, attempted", "compensates " + w.dups[0] + " (depth 1)", "escalations:", "history:"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("show %s lacks %q:\n%s", comp, want, out)
		}
	}
	code, out, _ = reconcileCmd(t, "show", w.dups[0], "--ledger", l.URL)
	if code != 0 || !strings.Contains(out, comp) || !strings.Contains(out, "duplicated") {
		t.Errorf("show %s does not name its compensation and finding:\n%s", w.dups[0], out)
	}
	code, out, errOut := reconcileCmd(t, "escalations", "--ack", comp+":escalate:escalated", "--by", "ana", "--ledger", l.URL, "--pager-webhook", hook.URL)
	if code != 0 || !strings.Contains(out, "acknowledged by ana") || pages[len(pages)-1] != "acknowledge "+comp+":escalate:escalated" {
		t.Errorf("escalations --ack = %d, %q, %q; pages %v", code, out, errOut, pages)
	}
	if _, out, _ := reconcileCmd(t, "escalations", "--ledger", l.URL); !strings.Contains(out, "acknowledged by ana") {
		t.Errorf("the acknowledged escalation is not listed as such:\n%s", out)
	}
	code, out, errOut = reconcileCmd(t, "resolve", comp, "--as", "compensated", "--note", "refunded by hand", "--by", "ana",
		"--ledger", l.URL, "--pager-webhook", hook.URL)
	if code != 0 || !strings.Contains(out, "closed escalation "+comp+":escalate:escalated") {
		t.Fatalf("resolve = %d, %q, %q", code, out, errOut)
	}
	if last := pages[len(pages)-1]; last != "resolve "+comp+":escalate:escalated" {
		t.Errorf("the page was not resolved: %v", pages)
	}
	code, out, _ = reconcileCmd(t, "escalations", "--ledger", l.URL)
	if code != 0 || strings.Count(out, ":compensate:") != len(w.dups)-1 {
		t.Errorf("after resolving one, escalations =\n%s", out)
	}
	if code, _, _ := reconcileCmd(t, "resolve", comp, "--as", "maybe", "--note", "x", "--ledger", l.URL); code != exitUsage {
		t.Errorf("resolve --as maybe = %d, want a usage error", code)
	}
}

// requireFailpoints skips a crash test in a binary built without
// -tags failpoints (scripts/test builds with it), or fails it when
// RECONCILE_REQUIRE_TOOLS=1.
func requireFailpoints(t *testing.T) {
	t.Helper()
	if job.Failpoints {
		return
	}
	msg := "the crash points are only in a binary built with -tags failpoints: go test -tags failpoints ./cmd/reconcile (scripts/test does)"
	if os.Getenv("RECONCILE_REQUIRE_TOOLS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
