package main

// Money moves on the provider's word, never on a file's. Each test here is
// a way that a hostile or merely unlucky input could make `run --apply`
// move the wrong money; each runs the real binary against the project's
// Stripe sandbox over HTTP, on both ledgers, and asserts the sandbox's own
// record of what was made.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/stripeapi/sandbox"
)

// hostile is a ledger, the sandbox the application charged through, and
// the files a run reads.
type hostile struct {
	t   *testing.T
	l   *ledgerdbtest.Ledger
	sb  *sandbox.Server
	url string
	dir string
	// rewrite, when set, changes the sandbox's answers on their way to
	// the job: a provider that answers for something else.
	rewrite func(path string, body []byte) []byte
	pages   string // the pager's address: a receiver that takes every page
	ledger  ledgerdb.Store
	env     []string // more of the runs' environment
	mu      sync.Mutex
	paged   []string // the bodies of the pages it took
}

// pagedAbout counts the pages that name s.
func (h *hostile) pagedAbout(s string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, p := range h.paged {
		if strings.Contains(p, s) {
			n++
		}
	}
	return n
}

func newHostile(t *testing.T, l *ledgerdbtest.Ledger) *hostile {
	h := &hostile{t: t, l: l, sb: sandbox.New(sandbox.Options{}), dir: t.TempDir()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.rewrite == nil || r.Header.Get("Authorization") != "Bearer sk_test_job" {
			h.sb.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.sb.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		body := h.rewrite(r.URL.Path, rec.Body.Bytes())
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(rec.Code)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	pager := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.paged = append(h.paged, string(b))
		h.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(pager.Close)
	h.pages = pager.URL
	return h
}

// post sends an application's request to the sandbox and decodes the answer.
func (h *hostile) post(path, idem string, form url.Values) map[string]any {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Authorization", "Bearer sk_test_app")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		h.t.Fatalf("POST %s: HTTP %d %v %v", path, resp.StatusCode, out, err)
	}
	return out
}

// charge makes a payment as the application does, and returns its payment
// intent and charge ids.
func (h *hostile) charge(idem, effectKey string, amount int64) (pi, ch string) {
	out := h.post("/v1/payment_intents", idem, url.Values{"amount": {fmt.Sprint(amount)}, "currency": {"eur"}, "confirm": {"true"},
		"payment_method": {"pm_card_visa"}, "customer": {"cus_" + effectKey}, "metadata[effect_key]": {effectKey}, "metadata[order]": {"o-" + effectKey}})
	return out["id"].(string), out["latest_charge"].(string)
}

// refund refunds a charge as the application (or a person) does; no
// effect key when effectKey is empty.
func (h *hostile) refund(idem, effectKey, charge string, amount int64) string {
	f := url.Values{"charge": {charge}, "amount": {fmt.Sprint(amount)}}
	if effectKey != "" {
		f.Set("metadata[effect_key]", effectKey)
	}
	return h.post("/v1/refunds", idem, f)["id"].(string)
}

// effect writes an application's row.
func (h *hostile) effect(key, step string, status reconcile.Status, extID string, created time.Time, request string) {
	h.t.Helper()
	e := reconcile.Effect{Key: key, RunID: "app", Step: step, Provider: "stripe", Status: status, ExternalID: extID,
		Request: json.RawMessage(request), CreatedAt: created.UTC()}
	if status == reconcile.StatusConfirmed {
		e.ConfirmedAt = e.CreatedAt
	}
	if err := h.store().EffectLoad(context.Background(), []reconcile.Effect{e}); err != nil {
		h.t.Fatal(err)
	}
}

func chargeReq(key string, amount int64) string {
	return fmt.Sprintf(`{"amount": %d, "currency": "eur", "customer": "cus_%s", "payment_method": "pm_card_visa", "metadata": {"effect_key": %q, "order": "o-%s"}}`,
		amount, key, key, key)
}

// report writes the sandbox's itemized report, changed by edit, as a file.
func (h *hostile) report(name string, edit func(string) string) string {
	h.t.Helper()
	var buf bytes.Buffer
	if err := h.sb.ExportItemized(&buf); err != nil {
		h.t.Fatal(err)
	}
	s := buf.String()
	if edit != nil {
		s = edit(s)
	}
	return h.write(name, s)
}

func (h *hostile) write(name, content string) string {
	h.t.Helper()
	path := filepath.Join(h.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return path
}

// event is a webhook event line for a charge, as a hostile line in a dump.
func event(id, charge, pi, effectKey string, amount int64, created time.Time, livemode bool) string {
	return fmt.Sprintf(`{"id":%q,"object":"event","api_version":"2025-08-27.basil","created":%d,"livemode":%v,"type":"charge.succeeded",`+
		`"data":{"object":{"id":%q,"object":"charge","amount":%d,"amount_captured":%d,"amount_refunded":0,"captured":true,"created":%d,"currency":"eur",`+
		`"livemode":%v,"metadata":{"effect_key":%q},"paid":true,"payment_intent":%q,"refunded":false,"status":"succeeded"}},`+
		`"pending_webhooks":1,"request":{"id":null,"idempotency_key":null}}`+"\n",
		id, created.Unix(), livemode, charge, amount, amount, created.Unix(), livemode, effectKey, pi)
}

// hostileResult is what these tests read of a run's JSON result.
type hostileResult struct {
	RunID         string         `json:"run_id"`
	Counts        map[string]int `json:"counts"`
	Discrepancies []struct {
		Class        string   `json:"class"`
		EffectKey    string   `json:"effect_key"`
		Reason       string   `json:"reason"`
		Transactions []string `json:"transactions"`
		Related      []string `json:"related"`
		Actions      []struct {
			Kind    string `json:"kind"`
			Key     string `json:"key"`
			Target  string `json:"target"`
			Outcome string `json:"outcome"`
			Made    string `json:"made"`
			Note    string `json:"note"`
		} `json:"actions"`
	} `json:"discrepancies"`
	Rejected []struct {
		Line   int    `json:"line"`
		Reason string `json:"reason"`
	} `json:"rejected"`
}

// run runs `reconcile run --apply` over inputs and returns its exit status,
// its result (nil when it wrote none) and its standard error.
func (h *hostile) run(inputs []string, extra ...string) (int, *hostileResult, string) {
	h.t.Helper()
	args := append([]string{"run", "--apply", "--ledger", h.l.URL, "--provider-url", h.url, "--provider-timeout", "5s", "--json", "-",
		"--pager-webhook", h.pages}, extra...)
	cmd := exec.Command(os.Args[0], append(args, inputs...)...)
	cmd.Env = append(append(os.Environ(), mainEnv+"=1", "STRIPE_API_KEY=sk_test_job"), h.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		h.t.Fatal(err)
	}
	if stdout.Len() == 0 {
		return cmd.ProcessState.ExitCode(), nil, stderr.String()
	}
	var r hostileResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		h.t.Fatalf("no JSON result (%v): %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	return cmd.ProcessState.ExitCode(), &r, stderr.String()
}

// finding returns the result's finding for an effect, or fails.
func (h *hostile) finding(r *hostileResult, key string) (class, reason string, outcomes []string) {
	h.t.Helper()
	for _, d := range r.Discrepancies {
		if d.EffectKey == key {
			for _, x := range d.Actions {
				outcomes = append(outcomes, x.Kind+":"+x.Outcome)
			}
			return d.Class, d.Reason, outcomes
		}
	}
	return "", "", nil
}

// money asserts the sandbox's own record: how many refunds and payments
// exist in all.
func (h *hostile) money(refunds, payments int) {
	h.t.Helper()
	if n := len(h.sb.Refunds()); n != refunds {
		h.t.Errorf("the sandbox holds %d refunds, want %d: %+v", n, refunds, h.sb.Refunds())
	}
	if n := len(h.sb.Payments()); n != payments {
		h.t.Errorf("the sandbox holds %d payments, want %d", n, payments)
	}
}

// store is the test's one handle on the ledger, opened when first used.
func (h *hostile) store() ledgerdb.Store {
	if h.ledger == nil {
		h.ledger = h.l.Open(h.t, nil)
	}
	return h.ledger
}

func (h *hostile) status(key string) (reconcile.Status, string) {
	h.t.Helper()
	e, err := h.store().EffectGet(context.Background(), key)
	if err != nil {
		h.t.Fatal(err)
	}
	return e.Status, e.ExternalID
}

var dayAgo = time.Now().Add(-26 * time.Hour)

// Case 1: a charge.succeeded line for customer B's charge, carrying A's
// effect key and 0.01, must not refund B's 500.00.
func TestAddedWebhookLineRefundsNoOtherCustomer(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		piA, _ := h.charge("a", "shop:charge:a", 50000)
		piB, chB := h.charge("b", "shop:charge:b", 50000)
		h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, piA, dayAgo, chargeReq("shop:charge:a", 50000))
		h.effect("shop:charge:b", "charge", reconcile.StatusConfirmed, piB, dayAgo, chargeReq("shop:charge:b", 50000))
		report := h.report("itemized.csv", nil)
		dump := h.write("events.jsonl", event("evt_hostile", chB, piB, "shop:charge:a", 1, dayAgo, true))
		code, r, errOut := h.run([]string{report, dump}, "--max-refund", "EUR=100.00")
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		h.money(0, 2)
		for _, key := range []string{"shop:charge:a", "shop:charge:b"} {
			if class, reason, _ := h.finding(r, key); class != "deferred" || !strings.Contains(reason, chB) {
				t.Errorf("%s: %s (%s), want deferred, naming %s", key, class, reason, chB)
			}
		}
		if code != exitPerson || r.Counts["unexpected"] != 1 {
			t.Errorf("exit %d, counts %v: want 3 and the conflicting charge reported", code, r.Counts)
		}
	})
}

// Case 2: a report read while it is still being written, its last line
// cut inside the effect-key column, must not link B's charge to A.
func TestReportCutInTheEffectKeyMovesNoMoney(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		piA, _ := h.charge("a", "shop:charge:12", 50000)
		piB, _ := h.charge("b", "shop:charge:123", 50000)
		h.effect("shop:charge:12", "charge", reconcile.StatusConfirmed, piA, dayAgo, chargeReq("shop:charge:12", 50000))
		h.effect("shop:charge:123", "charge", reconcile.StatusConfirmed, piB, dayAgo, chargeReq("shop:charge:123", 50000))
		report := h.report("itemized.csv", func(s string) string {
			s = strings.TrimSuffix(s, "\n")
			return s[:strings.LastIndex(s, "shop:charge:123")+len("shop:charge:12")]
		})
		code, r, errOut := h.run([]string{report})
		h.money(0, 2)
		if code != exitUsage || r != nil || !strings.Contains(errOut, "may still be being written") {
			t.Errorf("exit %d, result %v: want 2 and no result, saying the file may still be being written; stderr: %s", code, r, errOut)
		}
	})
}

// Case 3: an invented charge dated before the real one, for an effect with
// no external id, must not be kept while the real one is refunded.
func TestInventedEarlierChargeIsNotKept(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, _ := h.charge("a", "shop:charge:a", 50000)
		h.effect("shop:charge:a", "charge", reconcile.StatusAttempted, "", dayAgo, chargeReq("shop:charge:a", 50000))
		report := h.report("itemized.csv", nil)
		dump := h.write("events.jsonl", event("evt_fake", "ch_invented000000000001", pi, "shop:charge:a", 50000, dayAgo.Add(-time.Hour), true))
		code, r, errOut := h.run([]string{report, dump})
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		h.money(0, 1)
		if class, _, outcomes := h.finding(r, "shop:charge:a"); class != "duplicated" || len(outcomes) != 1 || outcomes[0] != "compensate:escalated" {
			t.Errorf("shop:charge:a: %s %v, want duplicated with its compensation escalated", class, outcomes)
		}
	})
}

// Case 4: a refund the application recorded and never made is redelivered
// as the refund it is, never as a charge.
func TestMissingRefundIsRedeliveredAsARefund(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, ch := h.charge("a", "shop:charge:a", 10000)
		h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, pi, dayAgo, chargeReq("shop:charge:a", 10000))
		pi2, ch2 := h.charge("b", "shop:charge:b", 4000)
		h.effect("shop:charge:b", "charge", reconcile.StatusConfirmed, pi2, dayAgo, chargeReq("shop:charge:b", 4000))
		re := h.refund("shop:refund:b", "shop:refund:b", ch2, 4000) // a refund made as recorded: refunds are reported
		h.effect("shop:refund:b", "refund", reconcile.StatusConfirmed, re, dayAgo, fmt.Sprintf(`{"charge": %q, "amount": 4000, "currency": "eur", "metadata": {"effect_key": "shop:refund:b"}}`, ch2))
		h.effect("shop:refund:a", "refund", reconcile.StatusAttempted, "", dayAgo,
			fmt.Sprintf(`{"charge": %q, "amount": 1000, "currency": "eur", "reason": "requested_by_customer", "metadata": {"effect_key": "shop:refund:a"}}`, ch))
		code, r, errOut := h.run([]string{h.report("itemized.csv", nil)})
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		h.money(2, 2)
		var made *sandbox.Refund
		for _, rf := range h.sb.Refunds() {
			if rf.Metadata["effect_key"] == "shop:refund:a" {
				made = &rf
			}
		}
		if made == nil || made.Charge != ch || made.Amount != 1000 || made.Key != "shop:refund:a" || made.Reason != "requested_by_customer" {
			t.Errorf("the sandbox's refund for shop:refund:a = %+v, want 1000 of %s under its own key, as recorded", made, ch)
		}
		if st, id := h.status("shop:refund:a"); st != reconcile.StatusConfirmed || made == nil || id != made.ID {
			t.Errorf("shop:refund:a is %s %s, want confirmed with the refund", st, id)
		}
	})
}

// Case 5: a refund made twice is never "compensated" by more refunds.
func TestDuplicatedRefundGoesToAPerson(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, ch := h.charge("a", "shop:charge:a", 10000)
		h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, pi, dayAgo, chargeReq("shop:charge:a", 10000))
		re := h.refund("shop:refund:a", "shop:refund:a", ch, 3000)
		h.refund("shop:refund:a-retry", "shop:refund:a", ch, 3000)
		h.effect("shop:refund:a", "refund", reconcile.StatusConfirmed, re, dayAgo, fmt.Sprintf(`{"charge": %q, "amount": 3000, "currency": "eur"}`, ch))
		code, r, errOut := h.run([]string{h.report("itemized.csv", nil)})
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		h.money(2, 1)
		if class, _, outcomes := h.finding(r, "shop:refund:a"); class != "duplicated" || len(outcomes) != 1 || outcomes[0] != "escalate:escalated" {
			t.Errorf("shop:refund:a: %s %v, want duplicated and escalated to a person", class, outcomes)
		}
		if code != exitPerson {
			t.Errorf("exit %d, want %d: a person must look", code, exitPerson)
		}
	})
}

// Case 6: an invented event, or a test-mode one, does not mark an unpaid
// order paid in the application's own row.
func TestInventedEventDoesNotMarkAnOrderPaid(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, _ := h.charge("a", "shop:charge:a", 10000)
		h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, pi, dayAgo, chargeReq("shop:charge:a", 10000))
		recent := time.Now().Add(-time.Hour)
		h.effect("shop:charge:unpaid", "charge", reconcile.StatusAttempted, "", recent, chargeReq("shop:charge:unpaid", 2500))
		h.effect("shop:charge:test", "charge", reconcile.StatusAttempted, "", recent, chargeReq("shop:charge:test", 2500))
		dump := h.write("events.jsonl", event("evt_1", "ch_invented000000000002", "pi_invented000000000002", "shop:charge:unpaid", 2500, recent, true)+
			event("evt_2", "ch_testmode00000000003", "pi_testmode00000000003", "shop:charge:test", 2500, recent, false))
		code, r, errOut := h.run([]string{h.report("itemized.csv", nil), dump})
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		for _, key := range []string{"shop:charge:unpaid", "shop:charge:test"} {
			if st, id := h.status(key); st != reconcile.StatusAttempted || id != "" {
				t.Errorf("%s is %s %q, want still attempted with no id: no provider said it was paid", key, st, id)
			}
		}
		h.money(0, 1)
	})
}

// Case 7: a lookup that finds a payment of another amount does not
// confirm the effect.
func TestLookupOfAnotherAmountDoesNotConfirm(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, _ := h.charge("a", "shop:charge:a", 10000)
		h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, pi, dayAgo, chargeReq("shop:charge:a", 10000))
		h.effect("shop:charge:m", "charge", reconcile.StatusAttempted, "", dayAgo.Add(-24*time.Hour), chargeReq("shop:charge:m", 50000))
		report := h.report("itemized.csv", nil)
		h.charge("other", "shop:charge:m", 1) // after the report: only the lookup sees it
		code, r, errOut := h.run([]string{report})
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		if st, _ := h.status("shop:charge:m"); st != reconcile.StatusAttempted {
			t.Errorf("shop:charge:m is %s, want attempted: 0.01 found is not the 500.00 asked for", st)
		}
		if _, _, outcomes := h.finding(r, "shop:charge:m"); len(outcomes) != 1 || outcomes[0] != "redeliver:escalated" {
			t.Errorf("shop:charge:m: %v, want its redelivery escalated", outcomes)
		}
		h.money(0, 2)
		if code != exitPerson {
			t.Errorf("exit %d, want %d", code, exitPerson)
		}
	})
}

// Case 8: the provider's answer is compared with the request: a refund
// answered for another amount, or a redelivery answered with another
// payment, is not applied.
func TestProviderAnswerIsChecked(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, _ := h.charge("a", "shop:charge:a", 10000)
		h.charge("a-retry", "shop:charge:a", 10000)
		h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, pi, dayAgo, chargeReq("shop:charge:a", 10000))
		h.effect("shop:charge:m", "charge", reconcile.StatusAttempted, "", dayAgo, chargeReq("shop:charge:m", 2000))
		h.rewrite = func(path string, body []byte) []byte {
			var o map[string]any
			if json.Unmarshal(body, &o) != nil {
				return body
			}
			switch path {
			case "/v1/refunds":
				if o["object"] == "refund" {
					o["amount"] = 10 // answered for another amount
				}
			case "/v1/payment_intents":
				o["metadata"] = map[string]any{"effect_key": "shop:charge:someone-else"}
			}
			b, _ := json.Marshal(o)
			return b
		}
		code, r, errOut := h.run([]string{h.report("itemized.csv", nil)})
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		for _, key := range []string{"shop:charge:a", "shop:charge:m"} {
			if _, _, outcomes := h.finding(r, key); len(outcomes) != 1 || !strings.HasSuffix(outcomes[0], ":escalated") {
				t.Errorf("%s: %v, want its action escalated, not applied", key, outcomes)
			}
		}
		if st, _ := h.status("shop:charge:m"); st != reconcile.StatusAttempted {
			t.Errorf("shop:charge:m is %s, want attempted: the answer named another effect", st)
		}
		if code != exitPerson {
			t.Errorf("exit %d, want %d", code, exitPerson)
		}
	})
}

// Case 9: one row dated 2100 does not move the end of coverage, and so
// does not turn every pending effect into a charge.
func TestRowFromTheFutureDoesNotMoveCoverage(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, _ := h.charge("a", "shop:charge:a", 10000)
		h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, pi, dayAgo, chargeReq("shop:charge:a", 10000))
		h.effect("shop:charge:new", "charge", reconcile.StatusAttempted, "", time.Now().Add(-time.Hour), chargeReq("shop:charge:new", 700))
		report := h.report("itemized.csv", func(s string) string {
			lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
			last := strings.Split(lines[len(lines)-1], ",")
			last[0], last[1], last[2], last[3], last[4] = "txn_future", "2100-01-01 00:00:00", "ch_future", "pi_future", "ch_future"
			return s + strings.Join(last, ",") + "\n"
		})
		code, r, errOut := h.run([]string{report})
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		h.money(0, 1)
		if class, _, _ := h.finding(r, "shop:charge:new"); class != "pending" {
			t.Errorf("shop:charge:new is %q, want pending", class)
		}
		if len(r.Rejected) != 1 || r.Rejected[0].Line != 3 || !strings.Contains(r.Rejected[0].Reason, "2100") {
			t.Errorf("rejected = %+v, want line 3, dated 2100", r.Rejected)
		}
	})
}

// Case 10: a compensation row already in the ledger that is in doubt is
// escalated, never sent again; an extra charge a person refunded already
// needs nothing more: the provider shows it refunded, the action is skipped.
func TestCompensationInDoubtIsNotSentAgain(t *testing.T) {
	for _, c := range []struct {
		name    string
		prepare func(h *hostile, ch string)
		refunds int
		outcome string
	}{
		{"an older row with no refund past the cutoff", func(h *hostile, ch string) {
			h.effect("shop:charge:a:compensate:"+ch, "compensate", reconcile.StatusAttempted, "", dayAgo.Add(-48*time.Hour),
				fmt.Sprintf(`{"charge": %q, "amount": 10000, "currency": "eur", "metadata": {"effect_key": "shop:charge:a:compensate:%s", "compensates": "shop:charge:a"}}`, ch, ch))
		}, 0, "compensate:escalated"},
		{"a row refunded for another amount", func(h *hostile, ch string) {
			key := "shop:charge:a:compensate:" + ch
			h.refund(key, key, ch, 100)
			h.effect(key, "compensate", reconcile.StatusAttempted, "", dayAgo.Add(-48*time.Hour),
				fmt.Sprintf(`{"charge": %q, "amount": 10000, "currency": "eur", "metadata": {"effect_key": %q, "compensates": "shop:charge:a"}}`, ch, key))
		}, 1, "compensate:escalated"},
		{"a charge a person refunded in the dashboard: the provider shows it, nothing is sent", func(h *hostile, ch string) {
			h.refund("", "", ch, 10000)
		}, 1, "compensate:skipped"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
				h := newHostile(t, l)
				pi, _ := h.charge("a", "shop:charge:a", 10000)
				_, ch := h.charge("a-retry", "shop:charge:a", 10000)
				h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, pi, dayAgo.Add(-72*time.Hour), chargeReq("shop:charge:a", 10000))
				c.prepare(h, ch)
				code, r, errOut := h.run([]string{h.report("itemized.csv", nil)})
				if r == nil {
					t.Fatalf("run exited %d with no result: %s", code, errOut)
				}
				h.money(c.refunds, 2)
				if _, _, outcomes := h.finding(r, "shop:charge:a"); strings.Join(outcomes, " ") != c.outcome {
					t.Errorf("shop:charge:a: %v, want %q", outcomes, c.outcome)
				}
				escalated := strings.HasSuffix(c.outcome, ":escalated")
				if n := h.pagedAbout(":compensate:" + ch); escalated != (n > 0) {
					t.Errorf("%d pages about the compensation of %s, for an action %q", n, ch, c.outcome)
				}
				if !escalated && code != 0 {
					t.Errorf("exit %d, want 0: a refund a person made is no discrepancy: %s", code, errOut)
				}
			})
		})
	}
}

// An order the application abandoned after its charge failed (a SEPA debit
// the bank returned: the report shows the charge and its failure) is not
// missing: nothing is charged again for it.
func TestAFailedChargeOfAnAbandonedOrderIsNotChargedAgain(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, _ := h.charge("a", "shop:charge:a", 3000)
		h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, pi, dayAgo, chargeReq("shop:charge:a", 3000))
		h.effect("shop:charge:sepa", "charge", reconcile.StatusAbandoned, "", dayAgo, chargeReq("shop:charge:sepa", 2500))
		report := h.report("itemized.csv", func(s string) string {
			lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
			header, row := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
			set := func(f []string, col, v string) {
				i := slices.Index(header, col)
				if i < 0 {
					t.Fatalf("no column %s in %s", col, lines[0])
				}
				f[i] = v
			}
			for _, c := range []struct{ txn, category, gross string }{{"txn_sepa1", "charge", "25.00"}, {"txn_sepa2", "charge_failure", "-25.00"}} {
				f := slices.Clone(row)
				set(f, "balance_transaction_id", c.txn)
				for _, col := range []string{"charge_id", "source_id"} {
					set(f, col, "py_sepa0000000000000001")
				}
				set(f, "payment_intent_id", "pi_sepa0000000000000001")
				set(f, "reporting_category", c.category)
				set(f, "gross", c.gross)
				set(f, "net", c.gross)
				set(f, "payment_metadata[effect_key]", "shop:charge:sepa")
				lines = append(lines, strings.Join(f, ","))
			}
			return strings.Join(lines, "\n") + "\n"
		})
		code, r, errOut := h.run([]string{report})
		if r == nil {
			t.Fatalf("run exited %d with no result: %s", code, errOut)
		}
		h.money(0, 1)
		if class, reason, outcomes := h.finding(r, "shop:charge:sepa"); class != "" || code != 0 {
			t.Errorf("exit %d, shop:charge:sepa %s %v (%s); want 0 and no finding: the order was abandoned", code, class, outcomes, reason)
		}
	})
}

// A missing charge whose redelivery the provider answers with a payment
// that is not made (the card wants its holder to authenticate: the intent
// requires an action) is not confirmed: the order is not paid, and a
// person decides; the next run does not send it again.
func TestARedeliveryThatIsNotPaidConfirmsNothing(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		h := newHostile(t, l)
		pi, _ := h.charge("a", "shop:charge:a", 3000)
		h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, pi, dayAgo, chargeReq("shop:charge:a", 3000))
		h.effect("shop:charge:3ds", "charge", reconcile.StatusAttempted, "", dayAgo,
			`{"amount": 4200, "currency": "eur", "customer": "cus_3ds", "payment_method": "pm_card_authenticationRequired", "metadata": {"effect_key": "shop:charge:3ds"}}`)
		report := h.report("itemized.csv", nil)
		for run := range 2 {
			code, r, errOut := h.run([]string{report})
			if r == nil {
				t.Fatalf("run %d exited %d with no result: %s", run+1, code, errOut)
			}
			_, reason, outcomes := h.finding(r, "shop:charge:3ds")
			if st, id := h.status("shop:charge:3ds"); st != reconcile.StatusAttempted || id != "" || code != exitPerson {
				t.Errorf("run %d: exit %d, shop:charge:3ds %v (%s) is %s %q; want %d and still attempted", run+1, code, outcomes, reason, st, id, exitPerson)
			}
		}
		h.money(0, 2)
		if n := h.pagedAbout("shop:charge:3ds"); n != 1 {
			t.Errorf("%d pages about shop:charge:3ds, want one", n)
		}
	})
}

// A charge the application made under an idempotency key of its own, and
// that a line added to the report says failed, is paid at the provider:
// the job asks before it charges again, whatever the effect's age, and
// charges nothing. It finds the payment by the provider's search by effect
// key or, when search has not indexed it yet (Stripe's search lags the
// writes) or the application sent no effect key, by the payment the ledger
// names. A payment the ledger names that carries another effect's key is a
// person's.
func TestAFailureLineDoesNotChargeAPaidOrderAgain(t *testing.T) {
	for _, c := range []struct {
		name       string
		searchLags bool
		metadata   string // the application's payment's metadata[effect_key]
		paged      bool
	}{
		{"found by search", false, "shop:charge:b", false},
		{"search lags: the ledger's payment is retrieved", true, "shop:charge:b", false},
		{"sent without an effect key: the ledger's payment is retrieved", false, "", false},
		{"the ledger's payment carries another key: a person decides", false, "shop:charge:other", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
				h := newHostile(t, l)
				if c.searchLags {
					h.sb = sandbox.New(sandbox.Options{SearchLag: time.Hour})
				}
				pi, _ := h.charge("a", "shop:charge:a", 3000)
				h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, pi, dayAgo, chargeReq("shop:charge:a", 3000))
				form := url.Values{"amount": {"2500"}, "currency": {"eur"}, "confirm": {"true"}, "payment_method": {"pm_card_visa"}, "customer": {"cus_b"}}
				if c.metadata != "" {
					form.Set("metadata[effect_key]", c.metadata)
				}
				out := h.post("/v1/payment_intents", "order-b-attempt-1", form)
				paid, ch := out["id"].(string), out["latest_charge"].(string)
				h.effect("shop:charge:b", "charge", reconcile.StatusConfirmed, paid, time.Now().Add(-2*time.Hour), chargeReq("shop:charge:b", 2500))
				report := h.report("itemized.csv", func(s string) string {
					for _, line := range strings.Split(s, "\n") {
						if strings.Contains(line, ch) {
							forged := strings.Replace(strings.ReplaceAll(line, "25.00", "-25.00"), ",charge,", ",charge_failure,", 1)
							forged = strings.Replace(forged, "txn_", "txn_forged", 1)
							return s + forged + "\n"
						}
					}
					t.Fatalf("no line for %s in %s", ch, s)
					return ""
				})
				code, r, errOut := h.run([]string{report}, "--lag", "1h")
				if r == nil {
					t.Fatalf("run exited %d with no result: %s", code, errOut)
				}
				h.money(0, 2)
				class, reason, outcomes := h.finding(r, "shop:charge:b")
				if st, id := h.status("shop:charge:b"); st != reconcile.StatusConfirmed || id != paid || slices.Contains(outcomes, "redeliver:applied") {
					t.Errorf("shop:charge:b %s %v (%s) is %s %q; want still confirmed as %s, nothing made", class, outcomes, reason, st, id, paid)
				}
				if n := h.pagedAbout("shop:charge:b"); c.paged != (n == 1) || n > 1 {
					t.Errorf("%d pages about shop:charge:b (%s %v: %s)", n, class, outcomes, reason)
				}
			})
		})
	}
}

// What the job redelivers can fail later: a missing charge redelivered as
// a bank debit is processing when it is made, and the bank returns it; a
// missing refund is made, and the customer's bank cannot take it. The
// report then shows it and its failure: the customer has not paid, or has
// not been paid back. The job does not say "made by an earlier run" night
// after night while nobody looks, and makes nothing again on its own: the
// provider shows it failed, and a person decides, paged once.
func TestARedeliveryThatFailsLaterIsAPersons(t *testing.T) {
	for _, c := range []struct {
		name, key, request string
		fail               func(h *hostile) error
		refunds, payments  int
	}{
		{"a bank debit returned", "shop:charge:sepa",
			`{"amount": 4200, "currency": "eur", "customer": "cus_sepa", "payment_method": "pm_sepa_debit", "metadata": {"effect_key": "shop:charge:sepa"}}`,
			func(h *hostile) error { return h.sb.Return(h.sb.Payments()[1].ID) }, 1, 2},
		{"a refund that fails", "shop:refund:a", `{"charge": "CHARGE", "amount": 1000, "metadata": {"effect_key": "shop:refund:a"}}`,
			func(h *hostile) error { return h.sb.FailRefund(h.sb.Refunds()[1].ID) }, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
				h := newHostile(t, l)
				var later atomic.Int64 // how far the bank's day is ahead of the job's
				h.sb = sandbox.New(sandbox.Options{Now: func() time.Time { return time.Now().Add(time.Duration(later.Load())) }})
				pi, ch := h.charge("a", "shop:charge:a", 3000)
				h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, pi, dayAgo, chargeReq("shop:charge:a", 3000))
				made := h.refund("shop:refund:first", "shop:refund:first", ch, 500) // so that the report covers refunds
				h.effect("shop:refund:first", "refund", reconcile.StatusConfirmed, made, dayAgo,
					fmt.Sprintf(`{"charge": %q, "amount": 500, "metadata": {"effect_key": "shop:refund:first"}}`, ch))
				step, _, _ := strings.Cut(strings.TrimPrefix(c.key, "shop:"), ":")
				h.effect(c.key, step, reconcile.StatusAttempted, "", dayAgo, strings.Replace(c.request, "CHARGE", ch, 1))
				code, r, errOut := h.run([]string{h.report("night1.csv", nil)})
				if r == nil {
					t.Fatalf("run 1 exited %d with no result: %s", code, errOut)
				}
				if _, reason, outcomes := h.finding(r, c.key); !slices.Equal(outcomes, []string{"redeliver:applied"}) {
					t.Fatalf("run 1: %s %v (%s), want redelivered", c.key, outcomes, reason)
				}
				later.Store(int64(time.Hour)) // it fails an hour later, and the next runs run later still
				if err := c.fail(h); err != nil {
					t.Fatal(err)
				}
				h.env = []string{"RECONCILE_TEST_CLOCK_OFFSET=2h"}
				report := h.report("night2.csv", nil)
				for run := 2; run <= 3; run++ {
					code, r, errOut := h.run([]string{report})
					if r == nil {
						t.Fatalf("run %d exited %d with no result: %s", run, code, errOut)
					}
					class, reason, outcomes := h.finding(r, c.key)
					if code != exitPerson || class != string(reconcile.ClassMissing) || !slices.Equal(outcomes, []string{"redeliver:escalated"}) {
						t.Errorf("run %d: exit %d, %s %s %v (%s); want %d, missing and a person's", run, code, c.key, class, outcomes, reason, exitPerson)
					}
				}
				h.money(c.refunds, c.payments)
				if n := h.pagedAbout(c.key); n != 1 {
					t.Errorf("%d pages about %s, want one", n, c.key)
				}
			})
		})
	}
}

// A record that says a charge failed is a file's word. Beside another
// charge of the effect that stands, it could hide a second charge of the
// customer (a line added to the report): the job asks the provider, and
// refunds the charge when it stands there. When it did fail (a bank debit
// returned, paid again by card), nothing is refunded, nobody is paged, and
// the refund limits, which count what would be refunded, are not tripped
// by it.
func TestAFailureRecordBesideAStandingChargeIsAskedAbout(t *testing.T) {
	for _, c := range []struct {
		name    string
		refunds int
	}{{"a line says the retry failed, the provider says not", 1}, {"a debit returned, paid again by card", 0}} {
		t.Run(c.name, func(t *testing.T) {
			ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
				h := newHostile(t, l)
				var first, ch, kept string
				if c.refunds == 1 {
					kept, _ = h.charge("order-a", "shop:charge:a", 3000)
					_, ch = h.charge("order-a-retry", "shop:charge:a", 3000)
				} else {
					out := h.post("/v1/payment_intents", "order-a", url.Values{"amount": {"3000"}, "currency": {"eur"}, "confirm": {"true"},
						"payment_method": {"pm_sepa_debit"}, "metadata[effect_key]": {"shop:charge:a"}})
					first, ch = out["id"].(string), out["latest_charge"].(string)
					if err := h.sb.Return(first); err != nil {
						t.Fatal(err)
					}
					kept, _ = h.charge("order-a-card", "shop:charge:a", 3000)
				}
				h.effect("shop:charge:a", "charge", reconcile.StatusConfirmed, kept, dayAgo, chargeReq("shop:charge:a", 3000))
				report := h.report("itemized.csv", func(s string) string {
					if c.refunds == 0 {
						return s // the provider's own failure line
					}
					for _, line := range strings.Split(s, "\n") {
						if strings.Contains(line, ch) {
							forged := strings.Replace(strings.ReplaceAll(line, "30.00", "-30.00"), ",charge,", ",charge_failure,", 1)
							return s + strings.Replace(forged, "txn_", "txn_forged", 1) + "\n"
						}
					}
					t.Fatalf("no line for %s in %s", ch, s)
					return ""
				})
				var limit []string // a refund limit that any refund planned trips
				if c.refunds == 0 {
					limit = []string{"--max-refund", "EUR=1.00"}
				}
				code, r, errOut := h.run([]string{report}, limit...)
				if r == nil {
					t.Fatalf("run exited %d with no result: %s", code, errOut)
				}
				class, reason, outcomes := h.finding(r, "shop:charge:a")
				if n := len(h.sb.Refunds()); n != c.refunds {
					t.Errorf("%d refunds, want %d: shop:charge:a %s %v (%s)", n, c.refunds, class, outcomes, reason)
				}
				if c.refunds == 0 && (code != 0 || len(h.paged) > 0 || class != "") {
					t.Errorf("exit %d, %d pages, shop:charge:a %s %v (%s); want 0, none and confirmed", code, len(h.paged), class, outcomes, reason)
				}
			})
		})
	}
}
