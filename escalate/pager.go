// Package escalate hands to a person what the job must not decide alone:
// it records each escalation in the ledger and pages through PagerDuty
// Events API v2, a plain webhook, or a log. Paging is deduplicated by the
// escalation's key, so re-runs and replicas page once.
package escalate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"reconcile/report"
	"sync"
	"time"

	"reconcile"
)

// Pager delivers pages. Its errors are *SendError when the pager did not
// take the page, so that the Raiser can tell a pager that is down (tried
// again) from one that refuses the page (not tried again in vain).
type Pager interface {
	// Trigger pages a person about p.Escalation. The page's dedup key is
	// the escalation's key.
	Trigger(ctx context.Context, p *Page) error
	// Acknowledge tells the pager that someone took e in hand.
	Acknowledge(ctx context.Context, e *reconcile.Escalation) error
	// Resolve tells the pager that e was resolved.
	Resolve(ctx context.Context, e *reconcile.Escalation) error
}

// Severity is how urgent a page is, in PagerDuty's terms.
type Severity string

// The severities a page is sent with.
const (
	SeverityCritical Severity = "critical"
	SeverityError    Severity = "error"
)

// Page is one trigger: the escalation, how urgent it is, and the money it
// is about when the run knows it (Money.Currency empty when not).
type Page struct {
	Escalation *reconcile.Escalation
	Severity   Severity // empty: error
	Money      reconcile.Money
}

func (p *Page) severity() Severity {
	if p.Severity == "" {
		return SeverityError
	}
	return p.Severity
}

// SendError is a page, an acknowledgement or a resolution that the pager
// did not take. Its text shows neither the URL's secrets nor the routing
// key. Temporary says whether trying again may help: an answer 429 or 5xx,
// a timeout, a connection that failed. Any other answer (400: a wrong
// routing key or an event the pager cannot read) is not.
type SendError struct {
	Status    int // the HTTP status; 0 when no answer came
	Temporary bool
	msg       string
}

func (e *SendError) Error() string { return e.msg }

// PagerDuty sends Events API v2 events to url (https://events.pagerduty.com/v2/enqueue)
// with the service's routing key.
type PagerDuty struct {
	URL        string
	RoutingKey string
	Source     string // the payload's source: the host the job runs on
	// ClientURL is the event's client_url: the runbook or dashboard the
	// incident links to ("View in reconcile"). Empty: no link.
	ClientURL string
	Client    *http.Client
}

// event is a PagerDuty Events API v2 event.
type event struct {
	RoutingKey  string        `json:"routing_key"`
	EventAction string        `json:"event_action"` // trigger | acknowledge | resolve
	DedupKey    string        `json:"dedup_key"`
	Client      string        `json:"client,omitempty"`     // trigger only
	ClientURL   string        `json:"client_url,omitempty"` // trigger only
	Payload     *eventPayload `json:"payload,omitempty"`
}

type eventPayload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`            // critical | error | warning | info
	Timestamp     string         `json:"timestamp,omitempty"` // RFC 3339: when the job found it
	Component     string         `json:"component,omitempty"`
	Group         string         `json:"group,omitempty"`
	Class         string         `json:"class,omitempty"`
	CustomDetails map[string]any `json:"custom_details,omitempty"`
}

// Trigger implements Pager. The payload's timestamp is when the
// escalation was opened, so a page that a later run sends again still says
// when the job found it.
func (p *PagerDuty) Trigger(ctx context.Context, pg *Page) error {
	e := pg.Escalation
	at := e.OpenedAt
	if at.IsZero() {
		at = time.Now()
	}
	details := map[string]any{
		"subject": e.Subject, "class": e.Class, "reason": e.Reason, "run_id": e.RunID,
		"opened_at": at.UTC().Format(time.RFC3339), "see": "reconcile show " + e.Subject,
	}
	if pg.Money.Currency != "" {
		details["amount"] = pg.Money.String()
	}
	return p.send(ctx, &event{RoutingKey: p.RoutingKey, EventAction: "trigger", DedupKey: e.Key, Client: "reconcile", ClientURL: p.ClientURL,
		Payload: &eventPayload{
			Summary:       truncate(fmt.Sprintf("reconcile: %s %s: %s", e.Class, e.Subject, e.Reason), 1024),
			Source:        p.Source,
			Severity:      string(pg.severity()),
			Timestamp:     at.UTC().Format(time.RFC3339),
			Component:     "reconcile",
			Class:         string(e.Class),
			CustomDetails: details,
		}})
}

// Acknowledge implements Pager.
func (p *PagerDuty) Acknowledge(ctx context.Context, e *reconcile.Escalation) error {
	return p.send(ctx, &event{RoutingKey: p.RoutingKey, EventAction: "acknowledge", DedupKey: e.Key})
}

// Resolve implements Pager.
func (p *PagerDuty) Resolve(ctx context.Context, e *reconcile.Escalation) error {
	return p.send(ctx, &event{RoutingKey: p.RoutingKey, EventAction: "resolve", DedupKey: e.Key})
}

func (p *PagerDuty) send(ctx context.Context, ev *event) error {
	return postJSON(ctx, p.Client, p.URL, ev, p.RoutingKey)
}

// Webhook posts each page as JSON to a URL: {"event": "trigger"|"acknowledge"|"resolve",
// "escalation": {...}}, for chat rooms and in-house tools.
type Webhook struct {
	URL    string
	Client *http.Client
}

type webhookBody struct {
	Event      string             `json:"event"`
	Escalation *report.Escalation `json:"escalation"`
	Severity   Severity           `json:"severity,omitempty"` // trigger only
	Amount     string             `json:"amount,omitempty"`   // trigger only, when known
}

func triggerBody(p *Page) *webhookBody {
	b := &webhookBody{Event: "trigger", Escalation: view(p.Escalation), Severity: p.severity()}
	if p.Money.Currency != "" {
		b.Amount = p.Money.String()
	}
	return b
}

// view is e as the webhook's body shows it: the shape of every output.
func view(e *reconcile.Escalation) *report.Escalation {
	v := report.EscalationOf(e)
	return &v
}

// Trigger implements Pager.
func (w *Webhook) Trigger(ctx context.Context, p *Page) error {
	return postJSON(ctx, w.Client, w.URL, triggerBody(p))
}

// Acknowledge implements Pager.
func (w *Webhook) Acknowledge(ctx context.Context, e *reconcile.Escalation) error {
	return postJSON(ctx, w.Client, w.URL, &webhookBody{Event: "acknowledge", Escalation: view(e)})
}

// Resolve implements Pager.
func (w *Webhook) Resolve(ctx context.Context, e *reconcile.Escalation) error {
	return postJSON(ctx, w.Client, w.URL, &webhookBody{Event: "resolve", Escalation: view(e)})
}

// Log writes each page as one JSON line to W: the pager of the demo, and of
// a job with no pager configured (then W is standard error).
type Log struct {
	mu sync.Mutex
	W  io.Writer
}

// Trigger implements Pager.
func (l *Log) Trigger(_ context.Context, p *Page) error { return l.write(triggerBody(p)) }

// Acknowledge implements Pager.
func (l *Log) Acknowledge(_ context.Context, e *reconcile.Escalation) error {
	return l.write(&webhookBody{Event: "acknowledge", Escalation: view(e)})
}

// Resolve implements Pager.
func (l *Log) Resolve(_ context.Context, e *reconcile.Escalation) error {
	return l.write(&webhookBody{Event: "resolve", Escalation: view(e)})
}

func (l *Log) write(body *webhookBody) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.W.Write(append(b, '\n'))
	return err
}

// postJSON posts v and wants a 2xx answer; anything else is a *SendError.
// Its errors are logged and stored in the ledger, so they never show the
// URL's secrets nor the others the request carried (a routing key), even
// where the server's answer echoes the request.
func postJSON(ctx context.Context, client *http.Client, url string, v any, secrets ...string) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	where := reconcile.RedactURL(url)
	secrets = append(reconcile.URLSecrets(url), secrets...)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return &SendError{msg: fmt.Sprintf("page %s: %s", where, reconcile.Scrub(err.Error(), secrets...))}
	}
	req.Header.Set("Content-Type", "application/json")
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		// A *url.Error quotes the whole URL: keep only what went wrong.
		var uerr *neturl.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return &SendError{Temporary: true, msg: fmt.Sprintf("page %s: %s", where, reconcile.Scrub(err.Error(), secrets...))}
	}
	defer resp.Body.Close()
	// The whole answer is scrubbed before it is cut, so that the cut
	// cannot leave a secret's first half, which no longer matches.
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		msg := reconcile.Scrub(string(bytes.TrimSpace(msg)), secrets...)
		return &SendError{Status: resp.StatusCode, Temporary: resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500,
			msg: fmt.Sprintf("page %s: HTTP %d: %s", where, resp.StatusCode, truncate(msg, 1024))}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
