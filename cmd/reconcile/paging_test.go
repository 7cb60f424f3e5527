package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"reconcile/escalate"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/report"
)

// testRoutingKey is the PagerDuty routing key of these tests: a secret
// that no output may show.
const testRoutingKey = "R0UTE0123456789abcdefROUTE"

// shortPageRetry makes the runs of a test retry their pages at once. The
// tests that use it are not parallel: parallel tests start only after
// every sequential one has ended, so none reads it while it changes.
func shortPageRetry(t *testing.T) {
	saved := pageRetry
	pageRetry = escalate.Retry{Attempts: 3, Wait: time.Millisecond, Total: 10 * time.Second}
	t.Cleanup(func() { pageRetry = saved })
}

// eventsReceiver is a local PagerDuty Events API v2 endpoint. It answers
// each request with the next of its statuses (the last one from then on),
// checks each event against the Events v2 schema, and keeps those it takes.
type eventsReceiver struct {
	t        *testing.T
	mu       sync.Mutex
	statuses []int
	requests int
	taken    []map[string]any
	url      string
}

func newEventsReceiver(t *testing.T, statuses ...int) *eventsReceiver {
	r := &eventsReceiver{t: t, statuses: statuses}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		status := r.statuses[min(r.requests, len(r.statuses)-1)]
		r.requests++
		r.mu.Unlock()
		var ev map[string]any
		if err := json.Unmarshal(body, &ev); err != nil || req.URL.Path != "/v2/enqueue" || req.Header.Get("Content-Type") != "application/json" {
			t.Errorf("the pager got %s %s %q: not a JSON event (%v)", req.Method, req.URL.Path, body, err)
		} else if problem := eventsV2Problem(ev); problem != "" {
			t.Errorf("event %s breaks the Events v2 schema: %s", body, problem)
		}
		w.WriteHeader(status)
		if status/100 != 2 {
			// PagerDuty's answer to a wrong routing key, which echoes it.
			io.WriteString(w, `{"status":"invalid event","message":"Event object is invalid","errors":["routing_key `+testRoutingKey+` is not a valid integration key"]}`)
			return
		}
		r.mu.Lock()
		r.taken = append(r.taken, ev)
		r.mu.Unlock()
		io.WriteString(w, `{"status":"success","message":"Event processed","dedup_key":"`+ev["dedup_key"].(string)+`"}`)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/v2/enqueue"
	return r
}

func (r *eventsReceiver) counts() (requests int, taken []map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, append([]map[string]any(nil), r.taken...)
}

// eventsV2Problem says how a trigger event differs from PagerDuty's Events
// API v2 schema (developer.pagerduty.com, "Send an Alert Event"); "" when
// it does not.
func eventsV2Problem(ev map[string]any) string {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	payload, _ := ev["payload"].(map[string]any)
	switch {
	case str(ev, "routing_key") == "":
		return "no routing_key"
	case str(ev, "event_action") != "trigger":
		return "event_action is not trigger"
	case str(ev, "dedup_key") == "" || len(str(ev, "dedup_key")) > 255:
		return "dedup_key empty or longer than 255"
	case payload == nil:
		return "no payload"
	case str(payload, "summary") == "" || len(str(payload, "summary")) > 1024:
		return "payload.summary empty or longer than 1024"
	case str(payload, "source") == "":
		return "no payload.source"
	case !strings.Contains(" critical error warning info ", " "+str(payload, "severity")+" "):
		return "payload.severity is not critical, error, warning or info"
	}
	if _, err := time.Parse(time.RFC3339, str(payload, "timestamp")); err != nil {
		return "payload.timestamp is not RFC 3339: " + err.Error()
	}
	for k := range ev {
		if !strings.Contains(" routing_key event_action dedup_key payload client client_url links images ", " "+k+" ") {
			return "unknown member " + k
		}
	}
	return ""
}

// pagedWorld is applyWorld with a charge no effect of ours made (unexpected
// money, paged with --page-unexpected), and the provider's report of it.
func pagedWorld(t *testing.T) *applyWorld {
	w := newApplyWorld(t, ledgerdbtest.New(t, "sqlite"))
	w.retryWithFreshKey("shop_9:charge:0", 5000)
	var buf bytes.Buffer
	if err := w.sb.ExportItemized(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.report, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STRIPE_API_KEY", "sk_test_job")
	t.Setenv("RECONCILE_PAGER_ROUTING_KEY", testRoutingKey)
	return w
}

// pagedRun runs `reconcile run --apply` in-process against the receiver
// and returns the exit status, the JSON result and stderr.
func (w *applyWorld) pagedRun(pagerURL, jsonPath string, extra ...string) (int, *report.Result, string) {
	w.t.Helper()
	args := append([]string{"run", "--apply", "--lag", "0", "--ledger", w.l.URL, "--provider-url", w.url, "--lease", "30s",
		"--provider-timeout", "5s", "--pager-url", pagerURL, "--page-unexpected", "EUR=10.00", "--json", jsonPath}, extra...)
	code, _, errOut := reconcileCmd(w.t, append(args, w.report)...)
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		w.t.Fatalf("run = %d, no JSON result: %v\n%s", code, err, errOut)
	}
	if err := report.CheckContract(bytes.NewReader(b)); err != nil {
		w.t.Errorf("the JSON result breaks the contract: %v", err)
	}
	var res report.Result
	if err := json.Unmarshal(b, &res); err != nil {
		w.t.Fatal(err)
	}
	return code, &res, errOut
}

func hasNote(res *report.Result, key, text string) bool {
	for _, d := range res.Discrepancies {
		for _, x := range d.Actions {
			if x.Key == key && strings.Contains(x.Note, text) {
				return true
			}
		}
	}
	return false
}

// A pager that answers 500 twice takes the page on the third try, within
// the run: the run exits 3 as any run that needs a person, and nothing is
// left failed. The trigger carries the Events v2 fields, the runbook link,
// and severity critical above --page-critical.
func TestPageRetriedWithinTheRunGoesThrough(t *testing.T) {
	shortPageRetry(t)
	w := pagedWorld(t)
	pd := newEventsReceiver(t, 500, 500, 202)
	code, res, errOut := w.pagedRun(pd.url, filepath.Join(t.TempDir(), "result.json"),
		"--client-url", "https://runbooks.example.org/reconcile", "--page-critical", "EUR=40.00")
	requests, taken := pd.counts()
	if code != exitPerson || len(res.PagesFailed) != 0 {
		t.Fatalf("run against 500, 500, 202 = exit %d, pages failed %v; want exit 3 and none failed\n%s", code, res.PagesFailed, errOut)
	}
	if requests != 3 || len(taken) != 1 {
		t.Fatalf("the pager got %d requests and took %d pages, want 3 and 1", requests, len(taken))
	}
	ev := taken[0]
	payload := ev["payload"].(map[string]any)
	if ev["routing_key"] != testRoutingKey || ev["client"] != "reconcile" || ev["client_url"] != "https://runbooks.example.org/reconcile" ||
		payload["severity"] != "critical" || !strings.Contains(ev["dedup_key"].(string), "escalate") {
		t.Errorf("trigger = %v; want the routing key, client reconcile, the runbook link, severity critical (EUR 50.00 at risk, limit 40.00)", ev)
	}
	w.check()
	code, out, _ := reconcileCmd(t, "escalations", "--json", "-", "--ledger", w.l.URL)
	es := onCallEscalations(t, out)
	if code != 0 || len(es) != 1 || es[0].PagedAt == nil || es[0].PageFailed {
		t.Errorf("escalations --json = %d, %s; want one escalation, paged", code, out)
	}
}

// A pager that refuses the page (400: a wrong routing key) fails the run
// with exit 1: the JSON result, the metrics and `reconcile escalations`
// show the page failed, with the pager's answer and without the routing
// key. The refunds and redeliveries decided are made all the same, and the
// next run, with a pager that takes it, sends the page (though reading the
// same report again finds nothing new) and makes no action again.
func TestUndeliveredPageFailsTheRunAndTheNextRunSendsIt(t *testing.T) {
	shortPageRetry(t)
	w := pagedWorld(t)
	dir := t.TempDir()
	bad := newEventsReceiver(t, 400)
	metrics := filepath.Join(dir, "reconcile.prom")
	code, res, errOut := w.pagedRun(bad.url, filepath.Join(dir, "night1.json"), "--metrics-file", metrics)
	if code != exitFailure {
		t.Fatalf("run against a pager answering 400 = exit %d, want 1\n%s", code, errOut)
	}
	if requests, _ := bad.counts(); requests != 1 {
		t.Errorf("a page refused with 400 was sent %d times, want once: a 400 does not pass", requests)
	}
	if len(res.PagesFailed) != 1 || !strings.Contains(res.PagesFailed[0].Error, "HTTP 400") || !strings.Contains(res.PagesFailed[0].Key, "escalate") {
		t.Fatalf("pages_failed = %+v, want the unexpected money's page with the pager's 400", res.PagesFailed)
	}
	key := res.PagesFailed[0].Key
	if !hasNote(res, key, "page failed") {
		t.Errorf("the escalate action %s does not say its page failed: %+v", key, res.Discrepancies)
	}
	if prom, _ := os.ReadFile(metrics); !strings.Contains(string(prom), "reconcile_pages_failed 1") {
		t.Errorf("metrics lack reconcile_pages_failed 1:\n%s", prom)
	}
	if !strings.Contains(errOut, "not delivered") {
		t.Errorf("stderr does not say the page was not delivered:\n%s", errOut)
	}
	w.check() // the money moved as decided, once
	code, out, _ := reconcileCmd(t, "escalations", "--ledger", w.l.URL)
	if code != 0 || !strings.Contains(out, "FAILED") || !strings.Contains(out, "HTTP 400") {
		t.Errorf("escalations = %d:\n%s\nwant the page shown FAILED with the pager's 400", code, out)
	}
	code, out, _ = reconcileCmd(t, "escalations", "--json", "-", "--ledger", w.l.URL)
	es := onCallEscalations(t, out)
	if code != 0 || len(es) != 1 || es[0].PagedAt != nil || !es[0].PageFailed ||
		!strings.Contains(es[0].PageError, "HTTP 400") {
		t.Errorf("escalations --json = %d, %s; want the escalation unpaged, its page failed with the 400", code, out)
	}
	for name, text := range map[string]string{"stderr": errOut, "escalations": out, "pages_failed": res.PagesFailed[0].Error} {
		if strings.Contains(text, testRoutingKey) {
			t.Errorf("%s shows the routing key: %s", name, text)
		}
	}

	payments, refunds := len(w.sb.Payments()), len(w.sb.Refunds())
	good := newEventsReceiver(t, 202)
	code, res, errOut = w.pagedRun(good.url, filepath.Join(dir, "night2.json"))
	// The same report read again is earlier evidence: nothing new is found
	// (exit 0), but the escalation is open and not paged, so it is paged.
	if _, taken := good.counts(); code != exitOK || len(res.PagesFailed) != 0 || len(taken) != 1 || taken[0]["dedup_key"] != key {
		t.Fatalf("the next run = exit %d, pages failed %v, pages taken %v; want exit 0 and the page of %s sent\n%s", code, res.PagesFailed, taken, key, errOut)
	}
	if len(w.sb.Payments()) != payments || len(w.sb.Refunds()) != refunds {
		t.Errorf("the next run made %d payments and %d refunds, want none: a failed page must not make actions twice",
			len(w.sb.Payments())-payments, len(w.sb.Refunds())-refunds)
	}
	w.check()
	if _, out, _ := reconcileCmd(t, "escalations", "--ledger", w.l.URL); strings.Contains(out, "FAILED") {
		t.Errorf("after the page went through, escalations still shows it failed:\n%s", out)
	}
}

// onCallEscalations reads `escalations --json -`.
func onCallEscalations(t *testing.T, out string) []report.Escalation {
	t.Helper()
	var r struct {
		Escalations []report.Escalation `json:"escalations"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("escalations --json - is not JSON (%v): %s", err, out)
	}
	return r.Escalations
}
