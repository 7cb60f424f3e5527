package report

import (
	"context"
	"errors"
	"fmt"
	"math"
	neturl "net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"

	"reconcile"
)

// Metrics builds the run's metrics, in a registry of their own: what it
// read, what it found per class, the money at risk per currency, the
// actions by kind and outcome, the escalations, the pages the pager did
// not take and the orphans, how long it
// took and, when it succeeded, when. A run succeeded when it finished:
// FinishedAt is set.
func Metrics(r *Result) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, v float64) {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "reconcile_" + name, Help: help})
		g.Set(v)
		reg.MustRegister(g)
	}
	vec := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "reconcile_" + name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}

	var in Input
	for _, x := range r.Inputs {
		in.Rows, in.Evidence, in.Rejected, in.Ignored = in.Rows+x.Rows, in.Evidence+x.Evidence, in.Rejected+x.Rejected, in.Ignored+x.Ignored
	}
	gauge("rows_ingested", "Rows the last run read from its inputs.", float64(in.Rows))
	gauge("evidence_rows", "Rows of the last run's inputs that were evidence.", float64(in.Evidence))
	gauge("rejected_rows", "Rows of the last run's inputs that were rejected.", float64(in.Rejected))
	gauge("ignored_rows", "Rows of the last run's inputs that were ignored with a reason.", float64(in.Ignored))

	classes := vec("findings", "Findings of the last run per class: effects, or provider transactions for unexpected.", "class")
	for _, c := range reconcile.Classes {
		classes.WithLabelValues(string(c)).Set(float64(r.Counts[string(c)]))
	}

	// Major units add up per currency even where providers disagree on a
	// currency's decimals; minor units are MoneyAtRisk's, as in the JSON.
	atRisk := vec("money_at_risk", "Money at risk after the last run, per currency, in major units.", "currency")
	atRiskMinor := vec("money_at_risk_minor", "Money at risk after the last run, per currency, in minor units as in the JSON result.", "currency")
	for cur, v := range r.MoneyAtRisk() {
		atRiskMinor.WithLabelValues(cur).Set(float64(v))
		atRisk.WithLabelValues(cur)
	}
	for u, v := range sumUp(r, exponent).atRisk {
		atRisk.WithLabelValues(u.cur).Add(float64(v) / math.Pow10(u.exp))
	}

	actions := vec("actions", "Actions of the last run by kind and outcome.", "kind", "outcome")
	escalations := 0
	for _, d := range r.Discrepancies {
		for _, x := range d.Actions {
			actions.WithLabelValues(string(x.Kind), string(x.Outcome)).Inc()
			if x.Kind == reconcile.ActionEscalate {
				escalations++
			}
		}
	}
	gauge("escalations", "Escalate actions of the last run: findings handed to a person, paged or not (see reconcile_pages_failed).", float64(escalations))
	gauge("pages_failed", "Pages the pager did not take in the last run, after retries: the next run sends them again.", float64(len(r.PagesFailed)))
	gauge("orphans", "Effects made by an owner that had lost its claim, found by the last run.", float64(len(r.Orphans)))
	applied := 0.0
	if r.Applied {
		applied = 1
	}
	gauge("run_applied", "1 when the last run made its actions, 0 when it only planned them.", applied)
	if !r.FinishedAt.IsZero() {
		if !r.StartedAt.IsZero() {
			gauge("run_duration_seconds", "How long the last run took.", r.FinishedAt.Sub(r.StartedAt).Seconds())
		}
		gauge("last_success_timestamp_seconds", "When the last successful run finished, in Unix seconds.",
			float64(r.FinishedAt.UnixNano())/1e9)
	}
	return reg
}

// exponent is the decimals of a provider's minor units of cur, as the
// spreadsheet takes them.
func exponent(provider, cur string) int {
	e, err := reconcile.Exponent(provider, cur)
	if err != nil {
		return 2
	}
	return e
}

// WriteMetricsFile writes the run's metrics for node_exporter's textfile
// collector: to a temporary file beside path, renamed over path when it is
// complete, so that the collector never reads half a file. (The temporary
// name does not end in .prom, so the collector ignores it.)
func WriteMetricsFile(path string, r *Result) error {
	if err := prometheus.WriteToTextfile(path, Metrics(r)); err != nil {
		return fmt.Errorf("write metrics to %s: %w", path, err)
	}
	return nil
}

// PushMetrics pushes the run's metrics to the Prometheus Pushgateway at
// url, in the group of job. A successful run replaces the group (PUT), so
// nothing of an earlier run lingers; an unfinished one only replaces the
// metrics it has (POST), so the group keeps the last success's timestamp.
// A user and password in url are sent as basic auth; its errors show url
// as reconcile.RedactURL does, and never its secrets.
func PushMetrics(ctx context.Context, url, job string, r *Result) error {
	if !strings.Contains(url, "://") {
		url = "http://" + url // as push.New reads host:port
	}
	where, secrets := reconcile.RedactURL(url), reconcile.URLSecrets(url)
	gateway, user, pass := url, "", ""
	if u, err := neturl.Parse(url); err == nil && u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
		u.User = nil
		gateway = u.String()
	}
	p := push.New(gateway, job).Gatherer(Metrics(r))
	if user != "" || pass != "" {
		p = p.BasicAuth(user, pass)
	}
	var err error
	if r.FinishedAt.IsZero() {
		err = p.AddContext(ctx)
	} else {
		err = p.PushContext(ctx)
	}
	if err != nil {
		// A *url.Error quotes the whole URL: keep only what went wrong.
		var uerr *neturl.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("push metrics to %s: %s", where, reconcile.Scrub(err.Error(), secrets...))
	}
	return nil
}
