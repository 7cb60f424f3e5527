package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"reconcile/job"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
)

// While a run holds the ledger's run lease, another run skips and changes
// nothing.
func TestRunSkipsWhileAnotherHoldsTheLease(t *testing.T) {
	t.Parallel()
	l := ledgerdbtest.New(t, "sqlite")
	store := l.Open(t, nil)
	ctx := context.Background()
	if _, err := store.ClaimAcquire(ctx, &ledgerdb.ClaimParams{Key: job.RunLeaseKey, Owner: "cron-host:42", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := reconcileCmd(t, "run", "--ledger", l.URL, writeFile(t, "s.itemized.csv", settlement))
	if code != 0 || out != "" || !strings.Contains(errOut, "this run is skipped") || !strings.Contains(errOut, "cron-host:42") {
		t.Errorf("run = %d, %q, %q; want a skip naming the holder", code, out, errOut)
	}
	if srcs, _ := store.SourceList(ctx); len(srcs) != 0 {
		t.Errorf("a skipped run ingested %d sources", len(srcs))
	}
	// Without the lease, the run goes ahead and gives the lease back.
	if code, _, errOut := reconcileCmd(t, "run", "--ledger", l.URL, "--run-lease=false", writeFile(t, "s.itemized.csv", settlement)); code != exitPerson {
		t.Errorf("run without the lease = %d: %s", code, errOut)
	}
}

// SIGTERM stops the schedule: the process says so and exits 0. (That a
// run in progress then ends and gives the run lease back is tested in
// package job, on a fake clock.)
func TestScheduleStopsCleanlyOnSIGTERM(t *testing.T) {
	t.Parallel()
	l := ledgerdbtest.New(t, "sqlite")
	cmd := exec.Command(os.Args[0], "schedule", "--cron", "0 4 1 1 *", "--ledger", l.URL, writeFile(t, "s.itemized.csv", settlement))
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	lines := bufio.NewScanner(io.TeeReader(stderr, &errOut))
	for lines.Scan() && !strings.Contains(lines.Text(), "schedule started") {
	}
	cmd.Process.Signal(syscall.SIGTERM)
	io.Copy(io.Discard, io.TeeReader(stderr, &errOut))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("schedule after SIGTERM: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "schedule stopped") {
		t.Errorf("stderr lacks the stop: %s", errOut.String())
	}
}
