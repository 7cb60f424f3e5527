package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"reconcile/fixtures"
	"reconcile/ledgerdb/ledgerdbtest"
)

// startWorkers starts n `reconcile worker` processes on the ledger at url,
// stopped (SIGTERM, as a deployment stops them) when t ends.
func startWorkers(t *testing.T, url string, n int) {
	t.Helper()
	for i := range n {
		cmd := workerCmd(url, "2")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Errorf("worker %d: %v\n%s", i, err, stderr.String())
			}
		})
	}
}

func workerCmd(url, workers string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "--log-level", "warn", "worker", "--ledger", url, "--workers", workers)
	cmd.Env = append(append(os.Environ(), mainEnv+"=1"), env...)
	return cmd
}

var runIDs = regexp.MustCompile(`rec_\d{8}T\d{6}Z_[0-9a-f]{6}`)

// normalized is runs' JSON results without what differs between two
// series of runs of the same ledgers and inputs: the runs' ids and times.
// When a finding was first found is replaced by the run that found it:
// the one whose start and finish it falls between.
func normalized(t *testing.T, results ...[]byte) string {
	t.Helper()
	rs := make([]map[string]any, len(results))
	type span struct{ from, to time.Time }
	spans := make([]span, len(results))
	at := func(v any) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, v.(string))
		if err != nil {
			t.Fatalf("result: %v", err)
		}
		return tm
	}
	for i, b := range results {
		if err := json.Unmarshal(b, &rs[i]); err != nil {
			t.Fatalf("result: %v", err)
		}
		spans[i] = span{at(rs[i]["started_at"]), at(rs[i]["finished_at"])}
		for _, k := range []string{"run_id", "started_at", "finished_at"} {
			delete(rs[i], k)
		}
	}
	for _, r := range rs {
		ds, _ := r["discrepancies"].([]any)
		for _, d := range ds {
			d := d.(map[string]any)
			found := at(d["first_found"])
			d["first_found"] = "before the first run"
			for i, s := range spans {
				if !found.Before(s.from) && !found.After(s.to) {
					d["first_found"] = fmt.Sprintf("by run %d", i+1)
				}
			}
		}
	}
	b, err := json.MarshalIndent(rs, "", " ") // map keys sorted
	if err != nil {
		t.Fatal(err)
	}
	return runIDs.ReplaceAllString(string(b), "RUN")
}

// effectStates is what the runs leave in the ledger of each effect.
func effectStates(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT e.key, e.status, coalesce(e.external_id, ''), coalesce(s.class, ''), coalesce(s.final, false)
		FROM effect e LEFT JOIN effect_state s ON s.key = e.key ORDER BY e.key COLLATE "C"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out strings.Builder
	for rows.Next() {
		var key, status, id, class string
		var final bool
		if err := rows.Scan(&key, &status, &id, &class, &final); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&out, key, status, id, class, final)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

var (
	partitionsLogged = regexp.MustCompile(`msg="partitions matched".* partitions=(\d+)`)
	recordedBy       = regexp.MustCompile(`msg="partitions recorded".* by="?(map\[[^]]*\])`)
)

// A night's partitions matched by 1, 2 and 4 `reconcile worker` processes
// give the result, byte for byte, and the ledger that the run gives matching
// them alone, over a world of duplicates, missing, mismatched, pending and
// unexpected effects, refunds and a webhook dump, cut into 13 partitions;
// and so does the next night on the same inputs, whose findings were first
// found by the night before.
func TestDistributedRunMatchesOneProcess(t *testing.T) {
	world := fixtures.NewWorld(3000, fixtures.DefaultRates, 11)
	dir := t.TempDir()
	report, events := filepath.Join(dir, "world.itemized.csv"), filepath.Join(dir, "world.events.jsonl")
	for path, write := range map[string]func(w *bytes.Buffer) error{
		report: func(w *bytes.Buffer) error { return world.WriteItemized(w) },
		events: func(w *bytes.Buffer) error { return world.WriteEvents(w) },
	} {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// nights runs the world's night, and the same inputs again the next
	// night (the effects left open, with what the first night found of
	// them), with their partitions matched by processes worker processes
	// (0: the run alone); before, when it is set, while the first run waits.
	nights := func(t *testing.T, processes int, before func(url string)) (result, state string) {
		l := ledgerdbtest.New(t, "postgres")
		if err := l.Open(t, nil).EffectLoad(context.Background(), world.Effects); err != nil {
			t.Fatal(err)
		}
		first := runNight(t, l.URL, processes > 0, "250", func() {
			if before != nil {
				before(l.URL)
			}
			startWorkers(t, l.URL, processes)
		}, report, events)
		second := runNight(t, l.URL, processes > 0, "20", func() {}, report, events) // the same workers
		return normalized(t, first, second), effectStates(t, l.URL)
	}
	alone, aloneState := nights(t, 0, nil)

	same := func(t *testing.T, result, state string) {
		if result != alone {
			t.Errorf("the result differs from one process's:\n%s", firstDifference(alone, result))
		}
		if state != aloneState {
			t.Errorf("the ledger differs from one process's:\n%s", firstDifference(aloneState, state))
		}
	}
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d processes", n), func(t *testing.T) {
			result, state := nights(t, n, nil)
			same(t, result, state)
		})
	}
	// A worker killed (SIGKILL) after matching a partition and before
	// recording it leaves its job running; River's rescuer makes such a job
	// available again once it has run for 15 minutes. The test does what
	// the rescuer does, at once, instead of waiting: the one part of this
	// test that is not the real thing. Another worker then matches the
	// partition, and the night is the one a single process gives.
	t.Run("a worker killed mid-partition", func(t *testing.T) {
		requireFailpoints(t)
		result, state := nights(t, 1, func(url string) {
			killed := workerCmd(url, "1", "RECONCILE_TEST_CRASH_AT=worker:matched")
			err := killed.Run()
			if ws, ok := killed.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
				t.Fatalf("the worker was not killed at worker:matched: %v", err)
			}
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			tag, err := conn.Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now() WHERE state = 'running'`)
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("rescue: %v, %d jobs; want the killed worker's one", err, tag.RowsAffected())
			}
		})
		same(t, result, state)
	})
}

// Workers share a PostgreSQL ledger: on SQLite, --distribute and `reconcile
// worker` are refused before anything is read or written.
func TestDistributingNeedsPostgreSQL(t *testing.T) {
	l := ledgerdbtest.New(t, "sqlite")
	report := writeFile(t, "2026-11-01.itemized.csv", settlement)
	for _, args := range [][]string{{"run", "--distribute", "--ledger", l.URL, report}, {"worker", "--ledger", l.URL}} {
		code, _, errOut := reconcileCmd(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "is not PostgreSQL; workers share a PostgreSQL ledger") {
			t.Errorf("%v = %d, %q; want 2 and the reason", args, code, errOut)
		}
	}
	srcs, err := l.Open(t, nil).SourceList(context.Background())
	if err != nil || len(srcs) != 0 {
		t.Errorf("sources after refusing = %v, %v; want none", srcs, err)
	}
}

// firstDifference shows where two texts part.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range min(len(w), len(g)) {
		if w[i] != g[i] {
			return fmt.Sprintf("line %d: want %q\n          got  %q", i+1, w[i], g[i])
		}
	}
	return fmt.Sprintf("want %d lines, got %d", len(w), len(g))
}

// With --apply, a run whose partitions are matched by 1, 2 and 4 processes
// makes each refund and redelivery exactly once, and the ledger agrees with
// the provider: the actions stay the run's own, however the matching is
// shared.
func TestDistributedRunMakesEachActionOnce(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d processes", n), func(t *testing.T) {
			w := newApplyWorld(t, ledgerdbtest.New(t, "postgres"))
			startWorkers(t, w.l.URL, n-1)
			code, r, errOut := w.reconcile("", "--distribute", "--partition-size", "2")
			if code != 0 || r == nil {
				t.Fatalf("run exited %d: %s", code, errOut)
			}
			if r.Counts["duplicated"] != len(w.dups) || r.Counts["missing"] != len(w.missing) {
				t.Errorf("counts %v; want %d duplicated, %d missing", r.Counts, len(w.dups), len(w.missing))
			}
			w.check()
		})
	}
	// Two distributed runs at once, without the run lease, share the
	// staged tables and the workers: each partition is its own run's, and
	// each action is still made once.
	t.Run("two runs at once", func(t *testing.T) {
		w := newApplyWorld(t, ledgerdbtest.New(t, "postgres"))
		startWorkers(t, w.l.URL, 2)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				if code, _, errOut := w.reconcile("", "--distribute", "--partition-size", "2", "--run-lease=false"); code != 0 {
					t.Errorf("run exited %d: %s", code, errOut)
				}
			})
		}
		wg.Wait()
		w.converge()
		w.check()
	})
}

// runNight runs a night on the ledger at url, its partitions of about size
// effects matched by worker processes when distribute is set, else by the
// run alone; meanwhile is called while the run works. It returns the
// JSON result.
func runNight(t *testing.T, url string, distribute bool, size string, meanwhile func(), inputs ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "result.json")
	args := []string{"--log-level", "debug", "run", "--ledger", url, "--lag", "3h", "--stripe-tz", "UTC", "--partition-size", size,
		"--json", out}
	if distribute { // the run only waits: every partition is a worker process's
		args = append(args, "--distribute", "--workers", "0")
	}
	type ran struct {
		code   int
		errOut string
	}
	done := make(chan ran)
	go func() {
		code, _, errOut := reconcileCmd(t, append(args, inputs...)...)
		done <- ran{code, errOut}
	}()
	meanwhile()
	r := <-done
	code, errOut := r.code, r.errOut
	if code != exitPerson {
		t.Fatalf("run exited %d, want 3 (findings for a person): %s", code, errOut)
	}
	m := partitionsLogged.FindStringSubmatch(errOut)
	if m == nil || m[1] == "1" {
		t.Fatalf("the run was not cut into partitions: %v", m)
	}
	if by := recordedBy.FindStringSubmatch(errOut); distribute && (by == nil || strings.Contains(by[1], fmt.Sprintf(":%d:", os.Getpid()))) {
		t.Errorf("partitions recorded by %v; want worker processes alone", by)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
