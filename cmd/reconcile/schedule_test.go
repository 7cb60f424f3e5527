package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgertest"
)

// slotsRun returns the slot of every run recorded in a PostgreSQL ledger.
func slotsRun(t *testing.T, url string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT args FROM run ORDER BY started_at`)
	if err != nil {
		t.Fatal(err)
	}
	args, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		t.Fatal(err)
	}
	var slots []string
	for _, a := range args {
		var v struct{ Slot string }
		json.Unmarshal(a, &v)
		slots = append(slots, v.Slot)
	}
	return slots
}

// Two scheduler processes on one PostgreSQL ledger, on an every-second
// spec, make exactly one run per slot.
func TestTwoSchedulersMakeOneRunPerSlot(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t, "postgres")
	report := writeFile(t, "s.itemized.csv", settlement)
	var procs []*exec.Cmd
	var logs []*bytes.Buffer
	for range 2 {
		// Without the run lease, only the slot claims keep the replicas apart.
		cmd := exec.Command(os.Args[0], "schedule", "--cron", "* * * * * *", "--run-lease=false", "--ledger", l.URL, report)
		cmd.Env = append(os.Environ(), mainEnv+"=1")
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs, logs = append(procs, cmd), append(logs, &errOut)
	}
	// Until two slots have run (a loaded machine may take a few seconds a
	// run, and overrun slots are skipped), then a little longer.
	for deadline := time.Now().Add(30 * time.Second); len(slotsRun(t, l.URL)) < 2 && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(time.Second)
	for i, cmd := range procs {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("scheduler %d: %v\n%s", i, err, logs[i])
		}
	}
	slots := slotsRun(t, l.URL)
	seen := map[string]bool{}
	for _, s := range slots {
		if s == "" || seen[s] {
			t.Errorf("slot %q ran twice, or a run has no slot: %v", s, slots)
		}
		seen[s] = true
	}
	if len(slots) < 2 {
		t.Errorf("%d runs in 30 s of an every-second schedule, want at least 2\n%s\n%s", len(slots), logs[0], logs[1])
	}
}

// While a run holds the ledger's run lease, another run skips and changes
// nothing.
func TestRunSkipsWhileAnotherHoldsTheLease(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t, "sqlite")
	store := l.Open(t, nil)
	ctx := context.Background()
	if _, err := store.Claim(ctx, &ledgerdb.ClaimParams{Key: runLeaseKey, Owner: "cron-host:42", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := reconcileCmd(t, "run", "--ledger", l.URL, writeFile(t, "s.itemized.csv", settlement))
	if code != 0 || out != "" || !strings.Contains(errOut, "this run is skipped") || !strings.Contains(errOut, "cron-host:42") {
		t.Errorf("run = %d, %q, %q; want a skip naming the holder", code, out, errOut)
	}
	if srcs, _ := store.Sources(ctx); len(srcs) != 0 {
		t.Errorf("a skipped run ingested %d sources", len(srcs))
	}
	// Without the lease, the run goes ahead and gives the lease back.
	if code, _, errOut := reconcileCmd(t, "run", "--ledger", l.URL, "--run-lease=false", writeFile(t, "s.itemized.csv", settlement)); code != exitPerson {
		t.Errorf("run without the lease = %d: %s", code, errOut)
	}
}

// SIGTERM stops the schedule: the run in progress ends, the run lease is
// released, and the process exits 0.
func TestScheduleStopsCleanlyOnSIGTERM(t *testing.T) {
	t.Parallel()
	l := ledgertest.New(t, "sqlite")
	cmd := exec.Command(os.Args[0], "schedule", "--cron", "* * * * * *", "--ledger", l.URL, writeFile(t, "s.itemized.csv", settlement))
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	store := l.Open(t, nil)
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := store.ClaimOf(ctx, runLeaseKey); err == nil && c.Fence >= 1 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no run started in 10 s: %s", errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if err != nil {
		t.Fatalf("schedule after SIGTERM: %v\n%s", err, errOut.String())
	}
	c, err := store.ClaimOf(ctx, runLeaseKey)
	if err != nil || c.State == reconcile.ClaimHeld {
		t.Errorf("run lease after SIGTERM = %+v, %v; want released", c, err)
	}
	if !strings.Contains(errOut.String(), "schedule stopped") {
		t.Errorf("stderr lacks the stop: %s", errOut.String())
	}
}
