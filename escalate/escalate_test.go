package escalate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"reconcile"
	"reconcile/escalate"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
)

// receiver is a local stand-in for PagerDuty's Events API: it records the
// events it accepts. The real service cannot be reached from tests.
type receiver struct {
	mu     sync.Mutex
	events []map[string]any
	fail   atomic.Int32 // answer this many requests with 500 first
	srv    *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v2/enqueue" || req.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request shape", http.StatusBadRequest)
			return
		}
		if r.fail.Add(-1) >= 0 {
			http.Error(w, "try later", http.StatusInternalServerError)
			return
		}
		var ev map[string]any
		if err := json.NewDecoder(req.Body).Decode(&ev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"status":"success","message":"Event processed","dedup_key":"`+ev["dedup_key"].(string)+`"}`)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) got() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.events...)
}

func raiser(t *testing.T, store ledgerdb.Store, r *receiver) *escalate.Raiser {
	return &escalate.Raiser{Store: store, Owner: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Pager: &escalate.PagerDuty{URL: r.srv.URL + "/v2/enqueue", RoutingKey: "R0UTING", Source: "host-1"}, Retry: quick}
}

func params(run string) *ledgerdb.EscalateParams {
	return &ledgerdb.EscalateParams{Key: "r:charge:0:compensate:ch_b:escalate:escalated", Subject: "r:charge:0:compensate:ch_b",
		Class: reconcile.ClassEscalated, Reason: "refund in doubt past its grace period", RunID: run}
}

func TestRaisePagesOnceAcrossRuns(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		r := newReceiver(t)
		ctx := context.Background()
		for _, run := range []string{"rec_1", "rec_2", "rec_3"} { // three nightly runs, each with its own handle
			if _, err := raiser(t, l.Open(t, nil), r).Raise(ctx, params(run)); err != nil {
				t.Fatal(err)
			}
		}
		events := r.got()
		if len(events) != 1 {
			t.Fatalf("three runs sent %d pages, want 1: %v", len(events), events)
		}
		ev := events[0]
		payload, _ := ev["payload"].(map[string]any)
		if ev["event_action"] != "trigger" || ev["routing_key"] != "R0UTING" || ev["dedup_key"] != params("").Key ||
			payload["severity"] != "error" || payload["source"] != "host-1" || !strings.Contains(payload["summary"].(string), "in doubt") {
			t.Errorf("page = %v, want a trigger with the routing key, the escalation key as dedup key, and a summary", ev)
		}
		if d, _ := payload["custom_details"].(map[string]any); d["subject"] != params("").Subject || d["run_id"] != "rec_1" {
			t.Errorf("custom_details = %v", payload["custom_details"])
		}
	})
}

func TestConcurrentReplicasPageOnce(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		r := newReceiver(t)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := raiser(t, l.Open(t, nil), r).Raise(context.Background(), params("rec_"+string(rune('a'+i)))); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := len(r.got()); n != 1 {
			t.Fatalf("8 replicas sent %d pages, want 1", n)
		}
	})
}

func TestFailedPageIsRetriedByTheNextRun(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		r := newReceiver(t)
		r.fail.Store(int32(quick.Attempts)) // every try of the first run
		store := l.Open(t, nil)
		ctx := context.Background()
		esc, err := raiser(t, store, r).Raise(ctx, params("rec_1"))
		if err != nil {
			t.Fatal(err)
		}
		if !esc.PagedAt.IsZero() || len(r.got()) != 0 {
			t.Fatalf("a page that failed is marked paged (%v) or was received (%d)", esc.PagedAt, len(r.got()))
		}
		open, err := store.EscalationList(ctx, &ledgerdb.EscalationsParams{Open: true})
		if err != nil || len(open) != 1 {
			t.Fatalf("the escalation was not recorded when its page failed: %v, %v", open, err)
		}
		for _, run := range []string{"rec_2", "rec_3"} {
			if _, err := raiser(t, store, r).Raise(ctx, params(run)); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(r.got()); n != 1 {
			t.Errorf("after a failed page and two more runs, %d pages were received, want 1", n)
		}
	})
}

func TestAcknowledgeAndResolveReachThePage(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		r := newReceiver(t)
		store := l.Open(t, nil)
		ctx := context.Background()
		if _, err := store.EffectRecord(ctx, &ledgerdb.RecordParams{Key: "r:charge:0", RunID: "r", Step: "charge", Provider: "stripe",
			Request: json.RawMessage(`{"amount": 100, "currency": "eur"}`)}); err != nil {
			t.Fatal(err)
		}
		rs := raiser(t, store, r)
		if _, err := rs.Raise(ctx, params("rec_1")); err != nil {
			t.Fatal(err)
		}
		acked, err := store.EscalationAcknowledge(ctx, &ledgerdb.AcknowledgeParams{Key: params("").Key, By: "ana"})
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.Acknowledged(ctx, acked); err != nil {
			t.Fatal(err)
		}
		res, err := store.EffectResolve(ctx, &ledgerdb.ResolveParams{EffectKey: "r:charge:0", As: reconcile.ResolutionCompensated, Note: "refunded by hand", By: "ana"})
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.Resolved(ctx, res.Closed); err != nil {
			t.Fatal(err)
		}
		events := r.got()
		if len(events) != 3 || events[1]["event_action"] != "acknowledge" || events[2]["event_action"] != "resolve" ||
			events[1]["dedup_key"] != params("").Key || events[2]["dedup_key"] != params("").Key {
			t.Errorf("events = %v, want a trigger, an acknowledge and a resolve with the same dedup key", events)
		}
	})
}

func TestWebhookAndLogPagers(t *testing.T) {
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		got, _ = io.ReadAll(req.Body)
	}))
	defer srv.Close()
	esc := &reconcile.Escalation{Key: "k:escalate:mismatched", Subject: "k", Class: reconcile.ClassMismatched, Reason: "moved price", Status: reconcile.EscalationStatusOpen}
	if err := (&escalate.Webhook{URL: srv.URL}).Trigger(context.Background(), &escalate.Page{Escalation: esc}); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Event      string `json:"event"`
		Escalation struct {
			Key, Class, Reason string
		} `json:"escalation"`
	}
	if err := json.Unmarshal(got, &body); err != nil || body.Event != "trigger" || body.Escalation.Key != esc.Key || body.Escalation.Class != "mismatched" {
		t.Errorf("webhook body %s (%v), want a trigger of %s", got, err, esc.Key)
	}
	var buf bytes.Buffer
	if err := (&escalate.Log{W: &buf}).Trigger(context.Background(), &escalate.Page{Escalation: esc}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"key":"k:escalate:mismatched"`) || !strings.HasSuffix(buf.String(), "\n") {
		t.Errorf("log pager wrote %q", buf.String())
	}
}

func TestPagerErrorsDoNotLeakTheURLSecret(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { http.Error(w, "nope", http.StatusForbidden) }))
	defer srv.Close()
	err := (&escalate.Webhook{URL: srv.URL + "/hook?token=s3cret"}).Trigger(context.Background(), &escalate.Page{Escalation: &reconcile.Escalation{Key: "k"}})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "403") {
		t.Errorf("err = %v, want the 403 without the token", err)
	}
}
