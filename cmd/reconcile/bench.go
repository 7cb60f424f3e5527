package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"reconcile"
	"reconcile/fixtures"
	"reconcile/report"
)

func (a *app) benchCommand() *cobra.Command {
	var (
		n       int
		seed    uint64
		dir     string
		profile string
	)
	cmd := &cobra.Command{
		Use:   "bench --effects N [--ledger URL] [--dir DIR]",
		Short: "Generate a world of N effects and its settlement report, and time a run end to end",
		Long: `bench generates a ledger of N charge effects (plus refunds) and a Stripe itemized settlement
report about it (and a webhook dump that describes a third of its transactions again) with duplicates (1%), missing (1%), mismatched (0.5%), unexpected (0.5%) and
pending (0.5%) effects, refunds, refunds of our charges that a person made in the dashboard (2% of
confirmed charges, which are not unexpected), fees and reissued lines; loads the effects into the ledger (which
must be empty); then runs the reconciliation end to end (ingest, persist, match, record, result)
and prints the time of each phase, the rows per second and the process's peak memory. It checks
that the run found the classes the world was built with.

Example:
  reconcile bench --effects 1000000 --ledger postgres://localhost/bench --dir /tmp/bench`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return a.bench(cmd.Context(), n, seed, dir, profile) },
	}
	a.addLedgerFlag(cmd)
	cmd.Flags().IntVar(&n, "effects", 100000, "number of charge effects")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the generated world")
	cmd.Flags().StringVar(&profile, "cpuprofile", "", "write a CPU profile of the run to FILE")
	cmd.Flags().StringVar(&dir, "dir", "", "folder for the settlement file and the default SQLite ledger (default: a temporary folder)")
	return cmd
}

func (a *app) bench(ctx context.Context, n int, seed uint64, dir, profile string) error {
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "reconcile-bench-*"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if a.ledgerURL == "" {
		a.ledgerURL = "sqlite:" + filepath.Join(dir, "ledger.db")
	}
	say := func(format string, args ...any) { fmt.Fprintf(a.stdout, format+"\n", args...) }
	t := time.Now()
	world := fixtures.NewWorld(n, fixtures.DefaultRates, seed)
	path := filepath.Join(dir, "bench.itemized.csv")
	if err := writeWith(path, world.WriteItemized); err != nil {
		return err
	}
	events := filepath.Join(dir, "bench.events.jsonl")
	if err := writeWith(events, world.WriteEvents); err != nil {
		return err
	}
	info, _ := os.Stat(path)
	einfo, _ := os.Stat(events)
	say("generated %d effects, %s (%d lines, %.0f MB) and a webhook dump of a third of it, %s (%.0f MB), in %s",
		len(world.Effects), path, world.Lines(), float64(info.Size())/1e6, events, float64(einfo.Size())/1e6, since(t))

	store, loc, err := openForMigrate(ctx, a.ledgerURL) // a bench makes its own ledger
	if err != nil {
		return err
	}
	if _, err := store.Migrate(ctx); err != nil {
		store.Close()
		return err
	}
	t = time.Now()
	if err := store.LoadEffects(ctx, world.Effects); err != nil {
		store.Close()
		return fmt.Errorf("load effects (the ledger must be empty): %w", err)
	}
	store.Close()
	say("loaded the effects into %s in %s", where(loc), since(t))
	// The run reads the effects from the ledger and the report from the
	// files: what the generator held is given back, and the peak is
	// measured from here, so that it is the run's.
	want, lines, outside := world.Want, world.Lines(), world.Outside
	world = nil
	say("peak memory of generating and loading the world (VmHWM): %s", peakRSS())

	t = time.Now()
	var (
		counts map[string]int
		peak   string
		result = filepath.Join(dir, "result.json")
	)
	if exe, err := os.Executable(); err == nil && profile == "" && !strings.HasSuffix(exe, ".test") {
		// A child starts with its parent's peak (Linux keeps it across
		// fork and exec): give the world's memory back first.
		runtime.GC()
		debug.FreeOSMemory()
		resetPeakRSS()
		counts, peak, err = a.benchRun(ctx, exe, result, path, events)
		if err != nil {
			return err
		}
	} else if counts, err = a.benchRunHere(ctx, profile, result, path, events); err != nil {
		return err
	} else {
		peak = peakRSS() + " (VmHWM since the world was loaded)"
	}
	elapsed := time.Since(t)
	say("run end to end: %s, %.0f report lines/s, %.1f MB/s of both inputs", elapsed.Round(time.Millisecond), float64(lines)/elapsed.Seconds(),
		float64(info.Size()+einfo.Size())/1e6/elapsed.Seconds())
	say("peak memory of the run: %s", peak)
	for _, c := range []reconcile.Class{reconcile.Confirmed, reconcile.Duplicated, reconcile.Missing, reconcile.Pending, reconcile.Mismatched, reconcile.Unexpected} {
		mark := "ok"
		if counts[string(c)] != want[c] {
			mark = "DIFFERS"
		}
		say("  %-10s found %8d  built %8d  %s", c, counts[string(c)], want[c], mark)
	}
	say("  (and %d refunds of our charges that no effect made: shown with their charges, not unexpected)", outside)
	f, err := os.Open(result)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := report.CheckContract(bufio.NewReader(f)); err != nil {
		return fmt.Errorf("the JSON result %s breaks the contract: %w", result, err)
	}
	fi, _ := f.Stat()
	say("the JSON result (%s, %.0f MB) keeps the contract", result, float64(fi.Size())/1e6)
	return nil
}

// benchArgs are the flags of the benchmark's run: the generator's report
// is in UTC, and its pending effects are newer than three hours before
// its end.
var benchArgs = []string{"--lag", "3h", "--stripe-tz", "UTC"}

// benchRun runs `reconcile run` on the benchmark's inputs in a process of
// its own, so that its peak memory is its own: what the generator held
// leaves the runtime's bookkeeping of a heap of tens of gigabytes behind.
// It returns the class counts of the run's summary and its peak resident
// memory.
func (a *app) benchRun(ctx context.Context, exe, result string, inputs ...string) (map[string]int, string, error) {
	args := append([]string{"--log-level", a.logLevel, "--log-format", a.logFormat, "run", "--ledger", a.ledgerURL, "--json", result}, benchArgs...)
	var out strings.Builder
	cmd := exec.CommandContext(ctx, exe, append(args, inputs...)...)
	cmd.Stdout, cmd.Stderr = &out, a.stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitPerson {
			return nil, "", fmt.Errorf("run: %w", err)
		}
	}
	peak := "unknown"
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peak = fmt.Sprintf("%d kB (the run's own process)", ru.Maxrss)
	}
	return parseCounts(out.String()), peak, nil
}

// benchRunHere runs the reconciliation in this process (under go test,
// and for a CPU profile), after giving back what the generator held.
func (a *app) benchRunHere(ctx context.Context, profile, result string, inputs ...string) (map[string]int, error) {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
	if profile != "" {
		pf, err := os.Create(profile)
		if err != nil {
			return nil, err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	var out strings.Builder
	quiet := &app{stdout: &out, stderr: a.stderr, log: a.log, ledgerURL: a.ledgerURL}
	f, cmd := &runFlags{}, &cobra.Command{}
	f.add(cmd)
	if err := cmd.Flags().Parse(append([]string{"--json", result}, benchArgs...)); err != nil {
		return nil, err
	}
	if err := quiet.run(ctx, f, inputs); err != nil && !needsPersonOnly(err) {
		return nil, err
	}
	return parseCounts(out.String()), nil
}

// writeWith creates path and fills it with write.
// needsPersonOnly reports whether err only says that a run found something
// for a person (exit status 3): the run itself succeeded.
func needsPersonOnly(err error) bool {
	var ee *exitError
	return errors.As(err, &ee) && ee.code == exitPerson
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

// parseCounts reads the class counts from a run's summary table.
func parseCounts(summary string) map[string]int {
	counts := map[string]int{}
	for _, line := range strings.Split(summary, "\n") {
		var class string
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "%s %d", &class, &n); err == nil {
			counts[class] = n
		}
	}
	return counts
}

// resetPeakRSS sets the process's peak resident memory (VmHWM) to what it
// holds now (Linux 4.0 and later; elsewhere nothing happens).
func resetPeakRSS() {
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS is the process's peak resident memory, from /proc.
func peakRSS() string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
