package sqlite_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/ledgerdbtest"
	"reconcile/ledgerdb/sqlite"
)

// These tests run claims in separate processes that share one ledger file:
// the test binary runs itself again as a child (see TestMain), so the fence
// is checked across processes and not only inside one.

const childEnv = "RECONCILE_SQLITE_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		if err := child(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childSpec is what a child process is told to do.
type childSpec struct {
	Path    string // the ledger file
	Op      string // "claim" (Workers claims at once, after stdin closes), "settle" or "ingest" (see childIngest)
	Key     string
	Workers int
	Fence   int64
	Success bool
	Result  string
	Now     time.Time // the child's clock: a fixed instant
	// For "ingest" (see childIngest).
	URI                       string
	Rows                      int
	Started, Holding, Release string
	// The child's busy timeout and write wait, when set.
	Busy, WriteWait time.Duration
}

func child(spec string) error {
	var c childSpec
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		return err
	}
	if c.Busy > 0 {
		sqlite.SetWaits(c.Busy, c.WriteWait)
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, c.Path, ledgerdb.Config{Now: func() time.Time { return c.Now }})
	if err != nil {
		return err
	}
	defer s.Close()
	out := json.NewEncoder(os.Stdout)
	switch c.Op {
	case "claim":
		io.Copy(io.Discard, os.Stdin) // wait for the parent's start signal
		var (
			wg sync.WaitGroup
			mu sync.Mutex
		)
		for i := range c.Workers {
			wg.Go(func() {
				r, err := s.ClaimAcquire(ctx, &ledgerdb.ClaimParams{Key: c.Key, Owner: fmt.Sprintf("pid%d-w%d", os.Getpid(), i), TTL: ledgerdbtest.Lease})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					out.Encode(map[string]string{"error": err.Error()})
					return
				}
				out.Encode(r)
			})
		}
		wg.Wait()
	case "settle":
		r, err := s.ClaimSettle(ctx, &ledgerdb.SettleParams{Key: c.Key, Fence: c.Fence, Success: c.Success, Result: json.RawMessage(c.Result), Owner: "child"})
		if err != nil {
			return err
		}
		return out.Encode(r)
	case "ingest":
		return childIngest(ctx, s, &c)
	}
	return nil
}

// startChild starts the test binary as a child with spec; closing the
// returned writer is the child's start signal.
func startChild(t *testing.T, spec childSpec) (*exec.Cmd, io.WriteCloser, *strings.Builder) {
	t.Helper()
	b, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(b))
	var stdout strings.Builder
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin, &stdout
}

func migrated(t *testing.T, now func() time.Time) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := open(t, path, now)
	if _, err := s.SchemaMigrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, path
}

func TestConcurrentClaimsAcrossProcessesYieldOneOwner(t *testing.T) {
	clock := ledgerdbtest.NewClock()
	s, path := migrated(t, clock.Now)
	const key = "run_1:charge:0:compensate:ch_2"
	var (
		cmds    []*exec.Cmd
		starts  []io.WriteCloser
		outputs []*strings.Builder
	)
	for _, workers := range []int{12, 13} {
		cmd, start, out := startChild(t, childSpec{Path: path, Op: "claim", Key: key, Workers: workers, Now: clock.Now()})
		cmds, starts, outputs = append(cmds, cmd), append(starts, start), append(outputs, out)
	}
	for _, w := range starts {
		w.Close()
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	owners, total := 0, 0
	for _, out := range outputs {
		sc := bufio.NewScanner(strings.NewReader(out.String()))
		for sc.Scan() {
			var r reconcile.ClaimResult
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Outcome == "" {
				t.Fatalf("child said %q", sc.Text())
			}
			total++
			if r.Outcome == reconcile.ClaimOutcomeClaimed {
				owners++
			}
		}
	}
	if owners != 1 || total != 25 {
		t.Errorf("%d of %d claims from two processes got ownership, want exactly 1 of 25", owners, total)
	}
	c, err := s.ClaimGet(context.Background(), key)
	if err != nil || c.Fence != 1 {
		t.Errorf("ClaimOf = %+v, %v; want fence 1", c, err)
	}
}

// A stale write from another process is fenced off: this process's attempt
// overran its lease, a second process took over and completed, and this
// process's late failure changes nothing.
func TestStaleWriteFromAnotherProcessIsFenced(t *testing.T) {
	clock := ledgerdbtest.NewClock()
	s, path := migrated(t, clock.Now)
	ctx := context.Background()
	const key = "run_1:charge:0:compensate:ch_2"
	mine, err := s.ClaimAcquire(ctx, &ledgerdb.ClaimParams{Key: key, Owner: "parent", TTL: ledgerdbtest.Lease})
	if err != nil || mine.Outcome != reconcile.ClaimOutcomeClaimed {
		t.Fatalf("claim = %v, %v", mine, err)
	}
	clock.Advance(ledgerdbtest.Lease)

	cmd, start, out := startChild(t, childSpec{Path: path, Op: "claim", Key: key, Workers: 1, Now: clock.Now()})
	start.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	var theirs reconcile.ClaimResult
	if err := json.Unmarshal([]byte(out.String()), &theirs); err != nil || theirs.Outcome != reconcile.ClaimOutcomeClaimed {
		t.Fatalf("child claim = %q, %v", out.String(), err)
	}
	cmd, start, out = startChild(t, childSpec{Path: path, Op: "settle", Key: key, Fence: theirs.Claim.Fence, Success: true, Result: `{"refund":"re_child"}`, Now: clock.Now()})
	start.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}

	r, err := s.ClaimSettle(ctx, &ledgerdb.SettleParams{Key: key, Fence: mine.Claim.Fence, Success: false, Error: "timeout"})
	if err != nil || r.Outcome != reconcile.WriteOutcomeSuperseded {
		t.Fatalf("stale settle from this process = %v, %v; want superseded", r, err)
	}
	c, err := s.ClaimGet(ctx, key)
	if err != nil || c.State != reconcile.ClaimStateDone || !strings.Contains(string(c.Result), "re_child") {
		t.Errorf("claim = %+v, %v; want done with the child's refund", c, err)
	}
	if got := strconv.FormatInt(c.Fence, 10); got != "2" {
		t.Errorf("fence = %s, want 2", got)
	}
}
