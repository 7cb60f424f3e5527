package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// subprocessLimit is how long a command that must not wait for anything
// may take in a subprocess, under -race on a busy machine.
const subprocessLimit = 15 * time.Second

// A named pipe named on the command line or matched by a glob stops the
// command with exit status 2 and a message naming it, at once: it is not
// opened, so nothing waits for a writer that never comes.
func TestNamedPipeInputIsRefusedNotWaitedFor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.itemized.csv"), []byte(itemizedCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "b.itemized.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ledger := "sqlite:" + filepath.Join(t.TempDir(), "ledger.db")
	for _, args := range [][]string{
		{"ingest", "--check", fifo},
		{"ingest", "--check", filepath.Join(dir, "*.csv")},
		{"run", "--ledger", ledger, fifo},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), subprocessLimit)
		cmd := exec.CommandContext(ctx, os.Args[0], args...)
		cmd.Env = append(os.Environ(), mainEnv+"=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		hung := ctx.Err() != nil
		cancel()
		if hung {
			t.Errorf("reconcile %q still running after %v (killed): it waits on the named pipe", args, subprocessLimit)
			continue
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if code := cmd.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(stderr.String(), fifo) || !strings.Contains(stderr.String(), "named pipe") {
			t.Errorf("reconcile %q = exit %d, stderr %q; want exit %d naming %s as a named pipe", args, code, stderr.String(), exitUsage, fifo)
		}
	}
}

// SIGTERM stops `ingest -` while standard input is a pipe whose writer
// neither writes more nor closes it.
func TestSIGTERMStopsAReadOfStdinThatNeverEnds(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*subprocessLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "ingest", "--check", "-")
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	cmd.Stdin = r
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	// More than the pipe and the reader's buffers hold: once it is written
	// the command is reading (past setting up its signal handling).
	var report strings.Builder
	report.WriteString(strings.SplitAfter(itemizedCSV, "\n")[0])
	for i := 0; report.Len() < 512<<10; i++ {
		fmt.Fprintf(&report, "txn_%d,2026-11-01 10:00:00,eur,1.00,0.03,0.97,charge,ch_%d,ch_%d,run_1:charge:%d\n", i, i, i, i)
	}
	if _, err := w.WriteString(report.String()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("reconcile ingest - still running %v after SIGTERM (killed); stderr %q", time.Since(start).Round(time.Millisecond), stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() <= 0 {
		t.Errorf("reconcile ingest - after SIGTERM: %v, stderr %q; want it to stop with a failure status of its own", err, stderr.String())
	}
}

// An input directory's symlink to a settlement file is read; what the
// directory holds that is not read (here a dangling symlink) is named in a
// warning.
func TestDirectorySymlinksAreReadAndSkipsAreWarned(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	in := filepath.Join(root, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(root, "2026-11.itemized.csv")
	if err := os.WriteFile(target, []byte(itemizedCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(in, "latest.itemized.csv")
	dangling := filepath.Join(in, "gone.itemized.csv")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "gone.csv"), dangling); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := reconcileCmd(t, "ingest", "--check", in)
	if code != exitOK || !strings.Contains(out, link) {
		t.Errorf("reconcile ingest --check %s = exit %d, stdout %q; want exit 0 and %s read", in, code, out, link)
	}
	if !strings.Contains(errOut, "level=WARN") || !strings.Contains(errOut, dangling) || !strings.Contains(errOut, "dangling symlink") {
		t.Errorf("reconcile ingest --check %s stderr = %q; want a warning naming %s as a dangling symlink", in, errOut, dangling)
	}
}
