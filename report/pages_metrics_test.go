package report

import (
	"testing"
)

// A page the pager did not take is counted apart from the escalations, so
// that an alert can fire on it; a run whose pages all went through reads 0.
func TestPagesFailedAreCounted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		failed []PageFailure
		want   float64
	}{
		{"all taken", nil, 0},
		{"two failed", []PageFailure{{Key: "a:escalate:mismatched", Error: "page https://events.example/v2/enqueue: HTTP 400: invalid"},
			{Key: "b:escalate:escalated", Error: "page https://events.example/v2/enqueue: HTTP 503"}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleResult()
			r.PagesFailed = tc.failed
			families, err := Metrics(r).Gather()
			if err != nil {
				t.Fatal(err)
			}
			got, ok := flatten(families)["reconcile_pages_failed"]
			if !ok || got != tc.want {
				t.Errorf("Metrics(%d pages failed): reconcile_pages_failed = %v (present %v), want %v", len(tc.failed), got, ok, tc.want)
			}
		})
	}
}
