package ledgerdbtest

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/google/go-cmp/cmp"

	"reconcile"
	"reconcile/ledgerdb"
)

func testRuns(e *env) {
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_1", Args: json.RawMessage(`{"inputs":["a.csv"]}`)}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: "run_1"}); err == nil {
		e.t.Errorf("starting run_1 twice succeeded, want an error")
	}
	e.clock.Advance(time.Minute)
	r, err := e.store.RunFinish(e.ctx, &ledgerdb.FinishRunParams{ID: "run_1", Status: reconcile.RunStatusSucceeded, Result: json.RawMessage(`{"counts":{}}`)})
	if err != nil {
		e.t.Fatal(err)
	}
	if r.Status != reconcile.RunStatusSucceeded || !r.FinishedAt.Equal(e.clock.Now()) || !r.StartedAt.Equal(e.clock.Now().Add(-time.Minute)) {
		e.t.Errorf("RunFinish = %+v", r)
	}
	if _, err := e.store.RunFinish(e.ctx, &ledgerdb.FinishRunParams{ID: "run_1", Status: reconcile.RunStatusFailed}); !errors.Is(err, reconcile.ErrInvalidTransition) {
		e.t.Errorf("finishing run_1 twice: error %v, want ErrInvalidTransition", err)
	}
	got, err := e.store.RunGet(e.ctx, "run_1")
	if err != nil || got.Status != reconcile.RunStatusSucceeded {
		e.t.Errorf("Run(run_1) = %+v, %v", got, err)
	}
	jsonEqual(e.t, got.Args, `{"inputs":["a.csv"]}`)
	if _, err := e.store.RunGet(e.ctx, "run_2"); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("Run(unknown) error = %v, want ErrNotFound", err)
	}
	if _, err := e.store.RunFinish(e.ctx, &ledgerdb.FinishRunParams{ID: "run_2", Status: reconcile.RunStatusFailed}); !errors.Is(err, reconcile.ErrNotFound) {
		e.t.Errorf("RunFinish(unknown) error = %v, want ErrNotFound", err)
	}
}

// Runs lists the runs newest first, as many as asked, of the status asked,
// without their results.
func testRunsListed(e *env) {
	if runs, err := e.store.RunList(e.ctx, &ledgerdb.RunsParams{}); err != nil || len(runs) != 0 {
		e.t.Fatalf("Runs of an empty ledger = %v, %v; want none", runs, err)
	}
	for _, r := range []struct {
		id     string
		status reconcile.RunStatus
	}{{"run_a", reconcile.RunStatusSucceeded}, {"run_b", reconcile.RunStatusFailed}, {"run_c", reconcile.RunStatusSucceeded}, {"run_d", reconcile.RunStatusRunning}} {
		if _, err := e.store.RunStart(e.ctx, &ledgerdb.StartRunParams{ID: r.id, Args: json.RawMessage(`{"apply":true}`)}); err != nil {
			e.t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		if r.status != reconcile.RunStatusRunning {
			if _, err := e.store.RunFinish(e.ctx, &ledgerdb.FinishRunParams{ID: r.id, Status: r.status, Result: json.RawMessage(`{"run_id":"` + r.id + `"}`)}); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	ids := func(p *ledgerdb.RunsParams) []string {
		runs, err := e.store.RunList(e.ctx, p)
		if err != nil {
			e.t.Fatalf("Runs(%+v): %v", p, err)
		}
		var out []string
		for _, r := range runs {
			if len(r.Result) != 0 {
				e.t.Errorf("Runs gives %s with its result %s, want it left out", r.ID, r.Result)
			}
			out = append(out, r.ID+" "+string(r.Status))
		}
		return out
	}
	for _, tc := range []struct {
		p    ledgerdb.RunsParams
		want []string
	}{
		{ledgerdb.RunsParams{}, []string{"run_d running", "run_c succeeded", "run_b failed", "run_a succeeded"}},
		{ledgerdb.RunsParams{Limit: 2}, []string{"run_d running", "run_c succeeded"}},
		{ledgerdb.RunsParams{Status: reconcile.RunStatusSucceeded, Limit: 1}, []string{"run_c succeeded"}},
		{ledgerdb.RunsParams{Status: reconcile.RunStatusFailed}, []string{"run_b failed"}},
	} {
		if diff := cmp.Diff(tc.want, ids(&tc.p)); diff != "" {
			e.t.Errorf("Runs(%+v) (-want +got):\n%s", tc.p, diff)
		}
	}
	runs, _ := e.store.RunList(e.ctx, &ledgerdb.RunsParams{Limit: 1})
	if len(runs) != 1 || !runs[0].StartedAt.Equal(e.clock.Now().Add(-time.Minute)) || !runs[0].FinishedAt.IsZero() {
		e.t.Errorf("Runs(limit 1) = %+v; want run_d, started a minute ago, not finished", runs)
	}
	jsonEqual(e.t, runs[0].Args, `{"apply":true}`)
}
