package escalate_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/escalate"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
)

// quick retries a page at once: the tests do not wait out real backoff.
var quick = escalate.Retry{Attempts: 3, Wait: time.Millisecond, Total: 5 * time.Second}

// statusReceiver answers each page with the next status of answers (the
// last one from then on) and counts the requests.
func statusReceiver(t *testing.T, answers ...int) (url string, requests *atomic.Int32, bodies func() []map[string]any) {
	var n atomic.Int32
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		i := int(n.Add(1)) - 1
		status := answers[min(i, len(answers)-1)]
		var ev map[string]any
		json.NewDecoder(req.Body).Decode(&ev)
		if status/100 == 2 {
			got = append(got, ev)
		}
		w.WriteHeader(status)
		io.WriteString(w, `{"status":"invalid event","message":"Event object is invalid","errors":["'routing_key' invalid"]}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v2/enqueue", &n, func() []map[string]any { return got }
}

func pagerDuty(url string) *escalate.PagerDuty {
	return &escalate.PagerDuty{URL: url, RoutingKey: routingKey, Source: "host-1", ClientURL: "https://runbooks.example.org/reconcile"}
}

// A pager that answers 500 twice and then takes the page is paged within
// the run: the escalation is marked paged, once.
func TestPageIsRetriedWithinTheRun(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		url, requests, bodies := statusReceiver(t, 500, 500, 202)
		store := l.Open(t, nil)
		r := &escalate.Raiser{Store: store, Pager: pagerDuty(url), Owner: "test", Retry: quick}
		esc, err := r.Raise(context.Background(), params("rec_1"))
		if err != nil {
			t.Fatal(err)
		}
		if esc.PagedAt.IsZero() || len(bodies()) != 1 || requests.Load() != 3 {
			t.Errorf("Raise after 500, 500, 202: paged at %v, %d pages taken in %d requests; want paged, 1 page in 3 requests",
				esc.PagedAt, len(bodies()), requests.Load())
		}
	})
}

// A page the pager refuses (400: a wrong routing key) is not retried in
// vain; PageOpen reports it failed with the pager's words and no secret,
// the ledger keeps it unpaged with its error, and the next run sends it.
func TestRefusedPageIsReportedAndSentByTheNextRun(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		ctx := context.Background()
		url, requests, _ := statusReceiver(t, 400)
		store := l.Open(t, nil)
		r := &escalate.Raiser{Store: store, Pager: pagerDuty(url), Owner: "test", Retry: quick, Hold: true}
		if _, err := r.Raise(ctx, params("rec_1")); err != nil {
			t.Fatal(err)
		}
		if requests.Load() != 0 {
			t.Fatalf("Raise under Hold sent %d requests, want none before PageOpen", requests.Load())
		}
		paged, err := r.PageOpen(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(paged.Failed) != 1 || len(paged.Sent) != 0 || requests.Load() != 1 {
			t.Fatalf("PageOpen against a 400 = %+v in %d requests; want one failure, after one request", paged, requests.Load())
		}
		msg := paged.Failed[0].Err.Error()
		if !strings.Contains(msg, "HTTP 400") || leaked(msg) != nil {
			t.Errorf("failure = %q, want the 400 without the routing key", msg)
		}
		es, err := store.EscalationList(ctx, &ledgerdb.EscalationsParams{Open: true})
		if err != nil || len(es) != 1 || !es[0].PagedAt.IsZero() {
			t.Fatalf("Escalations = %+v, %v; want the escalation open and not paged", es, err)
		}
		failed, err := escalate.PageErrors(ctx, store, es)
		if err != nil || !strings.Contains(failed[es[0].Key], "HTTP 400") {
			t.Errorf("PageErrors = %v, %v; want the 400 under %s", failed, err, es[0].Key)
		}

		goodURL, _, bodies := statusReceiver(t, 202)
		next := &escalate.Raiser{Store: l.Open(t, nil), Pager: pagerDuty(goodURL), Owner: "test", Retry: quick, Hold: true}
		paged, err = next.PageOpen(ctx, nil)
		if err != nil || len(paged.Sent) != 1 || len(paged.Failed) != 0 || len(bodies()) != 1 {
			t.Fatalf("the next run's PageOpen = %+v, %v with %d pages taken; want the page sent", paged, err, len(bodies()))
		}
		if failed, err := escalate.PageErrors(ctx, store, es); err != nil || len(failed) != 0 {
			t.Errorf("after the page went through, PageErrors = %v, %v; want none", failed, err)
		}
		if paged, err := next.PageOpen(ctx, nil); err != nil || len(paged.Sent)+len(paged.Failed) != 0 || len(bodies()) != 1 {
			t.Errorf("a third PageOpen = %+v, %v; want nothing sent again", paged, err)
		}
	})
}

// When the pager is down, the first page gets its retries and the rest one
// try each: a run with many escalations is not held up for minutes.
func TestPagerDownIsRetriedForTheFirstPageOnly(t *testing.T) {
	ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
		ctx := context.Background()
		url, requests, _ := statusReceiver(t, 503)
		r := &escalate.Raiser{Store: l.Open(t, nil), Pager: pagerDuty(url), Owner: "test", Retry: quick, Hold: true}
		for _, key := range []string{"a", "b", "c"} {
			if _, err := r.Raise(ctx, &ledgerdb.EscalateParams{Key: key + ":escalate:mismatched", Subject: key, Class: reconcile.ClassMismatched, Reason: "x", RunID: "rec_1"}); err != nil {
				t.Fatal(err)
			}
		}
		paged, err := r.PageOpen(ctx, nil)
		if err != nil || len(paged.Failed) != 3 {
			t.Fatalf("PageOpen = %+v, %v; want three failures", paged, err)
		}
		if got := requests.Load(); got != 3+1+1 {
			t.Errorf("a pager answering 503 got %d requests for 3 pages, want 5 (3 tries, then 1 each)", got)
		}
	})
}

// A pager that never answers costs a page at most Retry.Total.
func TestHangingPagerIsBoundedInTime(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		select {
		case <-req.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: the handler ends, then the server
	l := ledgerdbtest.New(t, "sqlite")
	r := &escalate.Raiser{Store: l.Open(t, nil), Pager: pagerDuty(srv.URL), Owner: "test", Hold: true,
		Retry: escalate.Retry{Attempts: 3, Wait: time.Millisecond, Total: 200 * time.Millisecond}}
	ctx := context.Background()
	if _, err := r.Raise(ctx, params("rec_1")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	paged, err := r.PageOpen(ctx, nil)
	if took := time.Since(start); err != nil || len(paged.Failed) != 1 || took > 5*time.Second {
		t.Errorf("PageOpen against a pager that never answers = %+v, %v after %s; want one failure within the total", paged, err, took)
	}
}

// The trigger carries what PagerDuty's Events API v2 schema asks for, and
// a severity by the money it is about.
func TestTriggerFollowsTheEventsV2Schema(t *testing.T) {
	opened := time.Date(2026, 11, 29, 4, 30, 0, 0, time.UTC)
	tests := []struct {
		name  string
		money reconcile.Money
		want  string
	}{
		{"above the limit", reconcile.Money{Minor: 500000, Currency: "EUR"}, "critical"},
		{"at the limit", reconcile.Money{Minor: 100000, Currency: "EUR"}, "critical"},
		{"below the limit", reconcile.Money{Minor: 99999, Currency: "EUR"}, "error"},
		{"a currency with no limit", reconcile.Money{Minor: 90000000, Currency: "JPY"}, "error"},
		{"money unknown", reconcile.Money{}, "error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url, _, bodies := statusReceiver(t, 202)
			r := &escalate.Raiser{Pager: pagerDuty(url), Critical: map[string]int64{"EUR": 100000}}
			esc := &reconcile.Escalation{Key: "k:escalate:mismatched", Subject: "k", Class: reconcile.ClassMismatched, Reason: "moved price",
				RunID: "rec_1", OpenedAt: opened}
			if err := r.Pager.Trigger(context.Background(), r.NewPage(esc, tc.money)); err != nil {
				t.Fatal(err)
			}
			ev := bodies()[0]
			payload, _ := ev["payload"].(map[string]any)
			got := map[string]any{"routing_key": ev["routing_key"], "event_action": ev["event_action"], "dedup_key": ev["dedup_key"],
				"client": ev["client"], "client_url": ev["client_url"], "source": payload["source"], "severity": payload["severity"],
				"timestamp": payload["timestamp"], "has_summary": payload["summary"] != ""}
			want := map[string]any{"routing_key": routingKey, "event_action": "trigger", "dedup_key": esc.Key,
				"client": "reconcile", "client_url": "https://runbooks.example.org/reconcile", "source": "host-1", "severity": tc.want,
				"timestamp": "2026-11-29T04:30:00Z", "has_summary": true}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Trigger(%v) event differs (-want +got):\n%s", tc.money, diff)
			}
			if _, err := time.Parse(time.RFC3339, payload["timestamp"].(string)); err != nil {
				t.Errorf("payload.timestamp %v is not RFC 3339: %v", payload["timestamp"], err)
			}
			if n := len(payload["summary"].(string)); n > 1024 {
				t.Errorf("summary of %d characters, PagerDuty takes at most 1024", n)
			}
		})
	}
}
