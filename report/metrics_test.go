package report

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// flatten turns metric families into "name{label="value",…}" → value.
func flatten(families []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			key := mf.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			out[key] = m.GetGauge().GetValue()
		}
	}
	return out
}

// wantMetrics are the metrics of sampleResult.
func wantMetrics(r *Result) map[string]float64 {
	return map[string]float64{
		"reconcile_rows_ingested": 150, "reconcile_evidence_rows": 141, "reconcile_rejected_rows": 3, "reconcile_ignored_rows": 6,
		`reconcile_findings{class="confirmed"}`: 120, `reconcile_findings{class="duplicated"}`: 2, `reconcile_findings{class="missing"}`: 2,
		`reconcile_findings{class="pending"}`: 1, `reconcile_findings{class="mismatched"}`: 2, `reconcile_findings{class="unexpected"}`: 2,
		`reconcile_findings{class="deferred"}`: 1, `reconcile_findings{class="escalated"}`: 1,
		// EUR: 19.99 - 14.20 + 1,234,567,890,123.46 - 0.05 + 0.01 + 42.00; JPY: 10,000 + 777; KWD: 12.345 + 0.999.
		`reconcile_money_at_risk{currency="EUR"}`: 56.27, `reconcile_money_at_risk_minor{currency="EUR"}`: 5627,
		`reconcile_money_at_risk{currency="JPY"}`: 5777, `reconcile_money_at_risk_minor{currency="JPY"}`: 5777,
		`reconcile_money_at_risk{currency="KWD"}`: 0.001, `reconcile_money_at_risk_minor{currency="KWD"}`: 1,
		`reconcile_actions{kind="compensate",outcome="applied"}`: 2, `reconcile_actions{kind="compensate",outcome="refused"}`: 1,
		`reconcile_actions{kind="redeliver",outcome="applied"}`: 1, `reconcile_actions{kind="redeliver",outcome="planned"}`: 1,
		`reconcile_actions{kind="redeliver",outcome="deferred"}`: 1, `reconcile_actions{kind="escalate",outcome="escalated"}`: 2,
		"reconcile_escalations": 2, "reconcile_pages_failed": 0, "reconcile_orphans": 1, "reconcile_run_applied": 1,
		"reconcile_run_duration_seconds": 83.25, "reconcile_last_success_timestamp_seconds": float64(r.FinishedAt.UnixNano()) / 1e9,
	}
}

// unfinished is sampleResult as a run that did not finish.
func unfinished() *Result {
	r := sampleResult()
	r.FinishedAt = time.Time{}
	return r
}

func TestWriteMetricsFileIsReadBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *Result
		drop []string // metrics of sampleResult this run has not
	}{
		{"finished", sampleResult(), nil},
		{"unfinished", unfinished(), []string{"reconcile_run_duration_seconds", "reconcile_last_success_timestamp_seconds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "reconcile.prom")
			if err := os.WriteFile(path, []byte("reconcile_stale 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := WriteMetricsFile(path, tc.r); err != nil {
				t.Fatalf("WriteMetricsFile: %v", err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			p := expfmt.NewTextParser(model.UTF8Validation)
			families, err := p.TextToMetricFamilies(f)
			if err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			var list []*dto.MetricFamily
			for _, mf := range families {
				if mf.GetType() != dto.MetricType_GAUGE {
					t.Errorf("%s is a %v, want a gauge", mf.GetName(), mf.GetType())
				}
				list = append(list, mf)
			}
			want := wantMetrics(sampleResult())
			for _, name := range tc.drop {
				delete(want, name)
			}
			if diff := cmp.Diff(want, flatten(list)); diff != "" {
				t.Errorf("metrics in the textfile (-want +got):\n%s", diff)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("the directory holds %d files, want only %s", len(entries), path)
			}
			if fi, _ := f.Stat(); fi.Mode().Perm() != 0o644 {
				t.Errorf("%s has mode %v, want it readable by the collector (0644)", path, fi.Mode().Perm())
			}
		})
	}
}

func TestWriteMetricsFileFailsForAMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no such dir", "reconcile.prom")
	if err := WriteMetricsFile(path, sampleResult()); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("WriteMetricsFile(%s) = %v, want an error naming the file", path, err)
	}
}

// TestPushMetrics pushes to a local receiver that records the request, as
// a Pushgateway would receive it (no Pushgateway binary is available here:
// the test checks the request, not the gateway's handling of it).
func TestPushMetrics(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      *Result
		method string
		drop   []string
	}{
		{"a finished run replaces its group", sampleResult(), http.MethodPut, nil},
		{"an unfinished run keeps the last success", unfinished(), http.MethodPost,
			[]string{"reconcile_run_duration_seconds", "reconcile_last_success_timestamp_seconds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var method, path string
			var header http.Header
			var body []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				method, path, header = req.Method, req.URL.EscapedPath(), req.Header
				body, _ = io.ReadAll(req.Body)
				w.WriteHeader(http.StatusOK)
			}))
			defer srv.Close()
			if err := PushMetrics(context.Background(), srv.URL+"/", "reconcile-nightly", tc.r); err != nil {
				t.Fatalf("PushMetrics: %v", err)
			}
			if method != tc.method || path != "/metrics/job/reconcile-nightly" {
				t.Errorf("pushed with %s %s, want %s /metrics/job/reconcile-nightly", method, path, tc.method)
			}
			dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.ResponseFormat(header))
			var list []*dto.MetricFamily
			for {
				var mf dto.MetricFamily
				if err := dec.Decode(&mf); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("decode the pushed body (%s): %v", header.Get("Content-Type"), err)
				}
				list = append(list, &mf)
			}
			want := wantMetrics(sampleResult())
			for _, name := range tc.drop {
				delete(want, name)
			}
			if diff := cmp.Diff(want, flatten(list)); diff != "" {
				t.Errorf("pushed metrics (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPushMetricsReportsARefusal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "pushed metrics are invalid or inconsistent", http.StatusBadRequest)
	}))
	defer srv.Close()
	err := PushMetrics(context.Background(), srv.URL, "reconcile", sampleResult())
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("PushMetrics to a gateway that refuses = %v, want an error with the status and the URL", err)
	}
}
