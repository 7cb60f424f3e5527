package escalate_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"reconcile"
	"reconcile/escalate"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
)

// Secrets of the pagers in these tests: a PagerDuty routing key, and a
// webhook's token in its path (Slack's shape) and in its query.
const (
	routingKey  = "R0UTINGKEY0123456789abcdef"
	pathToken   = "XXXXSECRET"
	queryToken  = "QUERYSECRET42"
	webhookPath = "/services/T000/B000/" + pathToken
)

// echoServer answers every request 400 with a body that echoes what it was
// sent, URL and JSON alike, as some pagers and proxies do.
func echoServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"invalid event","url":"`+req.URL.String()+`","request":`+string(body)+`}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// leaked names the secrets that s shows.
func leaked(s string) []string {
	var out []string
	for _, secret := range []string{routingKey, pathToken, queryToken} {
		if strings.Contains(s, secret) {
			out = append(out, secret)
		}
	}
	return out
}

func TestPagerErrorsHideTheRequestsSecrets(t *testing.T) {
	srv := echoServer(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens there: the request itself fails
	esc := &reconcile.Escalation{Key: "k:escalate:mismatched", Subject: "k", Class: reconcile.ClassMismatched, Reason: "moved price"}
	tests := []struct {
		name  string
		pager escalate.Pager
	}{
		{"pagerduty", &escalate.PagerDuty{URL: srv.URL + "/v2/enqueue?token=" + queryToken, RoutingKey: routingKey}},
		{"webhook", &escalate.Webhook{URL: srv.URL + webhookPath + "?token=" + queryToken}},
		{"webhook unreachable", &escalate.Webhook{URL: closed.URL + webhookPath + "?token=" + queryToken}},
		{"pagerduty unreachable", &escalate.PagerDuty{URL: closed.URL + "/v2/enqueue?token=" + queryToken, RoutingKey: routingKey}},
	}
	ctx := context.Background()
	for _, tc := range tests {
		trigger := func(ctx context.Context, e *reconcile.Escalation) error {
			return tc.pager.Trigger(ctx, &escalate.Page{Escalation: e})
		}
		for name, call := range map[string]func(context.Context, *reconcile.Escalation) error{
			"Trigger": trigger, "Acknowledge": tc.pager.Acknowledge, "Resolve": tc.pager.Resolve,
		} {
			err := call(ctx, esc)
			if err == nil {
				t.Fatalf("%s %s = nil, want an error", tc.name, name)
			}
			if s := leaked(err.Error()); s != nil {
				t.Errorf("%s %s error = %q, shows %q", tc.name, name, err, s)
			}
		}
	}
}

func TestFailedPageKeepsSecretsOutOfLogAndLedger(t *testing.T) {
	srv := echoServer(t)
	pagers := map[string]escalate.Pager{
		"pagerduty": &escalate.PagerDuty{URL: srv.URL + "/v2/enqueue?token=" + queryToken, RoutingKey: routingKey, Source: "host-1"},
		"webhook":   &escalate.Webhook{URL: srv.URL + webhookPath + "?token=" + queryToken},
	}
	for name, pager := range pagers {
		t.Run(name, func(t *testing.T) {
			ledgerdbtest.Each(t, func(t *testing.T, l *ledgerdbtest.Ledger) {
				store := l.Open(t, nil)
				ctx := context.Background()
				var logs bytes.Buffer
				r := &escalate.Raiser{Store: store, Pager: pager, Owner: "test", Log: slog.New(slog.NewTextHandler(&logs, nil))}
				if _, err := r.Raise(ctx, params("rec_1")); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(logs.String(), "page failed") || !strings.Contains(logs.String(), "400") {
					t.Fatalf("log = %q, want the failed page with its status", logs.String())
				}
				if s := leaked(logs.String()); s != nil {
					t.Errorf("log = %q, shows %q", logs.String(), s)
				}
				claims, err := store.ClaimListByEffect(ctx, "page")
				if err != nil || len(claims) != 1 || claims[0].Error == "" {
					t.Fatalf("ClaimListByEffect(page) = %+v, %v; want the failed page's claim with its error", claims, err)
				}
				if s := leaked(claims[0].Error + string(claims[0].Result)); s != nil {
					t.Errorf("the page's claim records %q, showing %q", claims[0].Error, s)
				}
				es, err := store.EscalationList(ctx, &ledgerdb.EscalationsParams{})
				if err != nil || len(es) != 1 {
					t.Fatalf("Escalations = %v, %v; want the one raised", es, err)
				}
				if s := leaked(es[0].Reason + es[0].Note); s != nil {
					t.Errorf("the escalation row records %q, showing %q", es[0].Reason, s)
				}
			})
		})
	}
}
