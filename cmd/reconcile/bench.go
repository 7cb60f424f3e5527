package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"reconcile"
	"reconcile/fixtures"
	"reconcile/ledgerdb"
	"reconcile/report"
)

func (a *app) benchCommand() *cobra.Command {
	var (
		n       int
		second  int
		seed    uint64
		dir     string
		profile string
		anchors bool
		duckdb  string
	)
	cmd := &cobra.Command{
		Use:   "bench --effects N [--second-night M] [--anchors] [--ledger URL] [--dir DIR]",
		Short: "Generate a world of N effects and its settlement report, and time a run end to end",
		Long: `bench generates a ledger of N charge effects (plus refunds) and a Stripe itemized settlement
report about it (and a webhook dump that describes a third of its transactions again) with duplicates (1%), missing (1%), mismatched (0.5%), unexpected (0.5%) and
pending (0.5%) effects, refunds, refunds of our charges that a person made in the dashboard (2% of
confirmed charges, which are not unexpected), fees and reissued lines; loads the effects into the ledger (which
must be empty); leaves it as a night finds it (the files written out; on PostgreSQL every table of
the ledger vacuumed and analyzed, as autovacuum would have, and a checkpoint made); then runs the
reconciliation end to end (ingest, persist, match, record, result)
and prints the time of each phase, the rows per second and the process's peak memory. It checks
that the run found the classes the world was built with.

With --second-night M it then measures the next night on the same ledger: it generates a second
world of M effects, one day later and with keys and ids of its own (the world that --effects M
with the same --seed makes, under other names), loads its effects beside the first night's, and
runs the reconciliation again on the second world's report and webhook dump only. That run
classifies the new effects and what the first night left open: its duplicated, mismatched and
missing effects, and its pending ones, which are older than the second night's cutoff and so
missing; not the first night's confirmed effects, nor its unexpected transactions again. The bench
checks those classes and prints both nights' times side by side. The same M effects alone, on an
empty ledger, are the night to compare it with.

With --anchors it also writes the effects as a CSV (bench.effects.csv: key, step, provider, status,
external_id, amount, currency, created_at) and, after the first night's run, times on the same
files, in the same run, the programs the performance target is stated against:
  - DuckDB: tools/duckdb/classify.mjs classifies the effects against the report and the webhook
    dump in SQL (link by effect key, else by id or payment intent against external_id; confirmed,
    duplicated, missing, mismatched, pending, unexpected) and the bench prints its counts beside
    the world's. It runs under Node.js with @duckdb/node-api, installed by
    "npm ci --prefix tools/duckdb"; without it the bench says so and skips it. --duckdb DIR
    names the folder if the bench does not run in the repository.
  - encoding/csv: the report read with ReuseRecord, rows counted; the dump's lines checked with
    json.Valid.
  - PostgreSQL (a PostgreSQL ledger): a binary COPY of as many narrow rows as the run's evidence
    records into an UNLOGGED table with no index, then a LOGGED one, in a schema it creates and
    drops; and a streamed read of the effects table.
  - SQLite (a SQLite ledger): the same rows inserted in one transaction by a prepared 100-row
    INSERT into a table with no index, in a temporary file beside the ledger.
It then prints the run's time as a multiple of DuckDB's (the target: at most 4x on PostgreSQL,
8x on SQLite) and each phase beside its floor. The run logs at debug level for it (its phases),
and the bench shows of that log what --log-level asks for.

Example:
  reconcile bench --effects 1000000 --ledger postgres://localhost/bench --dir /tmp/bench
  reconcile bench --effects 1000000 --second-night 100000 --dir /tmp/bench-nights   # a 100k night on a ledger holding a reconciled 1M night
  reconcile bench --effects 100000 --dir /tmp/bench-100k                             # the same 100k night on an empty ledger
  reconcile bench --effects 200000 --anchors --dir /tmp/bench-anchors                # the run beside DuckDB and the floors`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if second < 0 {
				return usageError("--second-night %d: want 0 or more effects", second)
			}
			if a.benchWorkers < 0 {
				return usageError("--workers %d: want 0 or more processes", a.benchWorkers)
			}
			return a.bench(cmd.Context(), benchOptions{n: n, second: second, seed: seed, dir: dir, profile: profile, anchors: anchors, duckdb: duckdb})
		},
	}
	a.addLedgerFlag(cmd)
	cmd.Flags().IntVar(&n, "effects", 100000, "number of charge effects")
	cmd.Flags().IntVar(&second, "second-night", 0, "then reconcile a second night of N new charge effects on the same ledger (0: none)")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the generated world")
	cmd.Flags().IntVar(&a.benchWorkers, "workers", 0, "PostgreSQL: distribute the run's partitions over this many processes, the run and N-1 worker processes (0: the run matches them alone)")
	cmd.Flags().StringVar(&profile, "cpuprofile", "", "write a CPU profile of the run's process to FILE (and of the second night's to FILE.night2)")
	cmd.Flags().StringVar(&dir, "dir", "", "folder for the settlement file and the default SQLite ledger (default: a temporary folder)")
	cmd.Flags().BoolVar(&anchors, "anchors", false, "then time DuckDB, encoding/csv and the database's floors on the same files, and the run against them")
	cmd.Flags().StringVar(&duckdb, "duckdb", "", "the folder of the DuckDB anchor, with classify.mjs and its node_modules (default: tools/duckdb in the working directory or a parent)")
	return cmd
}

// benchNight is what the bench keeps of one night: what its world was
// built with and how long its run took.
type benchNight struct {
	effects, lines int
	want           map[reconcile.Class]int
	elapsed        time.Duration
}

// benchOptions are the bench's flags.
type benchOptions struct {
	n, second    int
	seed         uint64
	dir, profile string
	anchors      bool   // then measure the anchors
	duckdb       string // the DuckDB anchor's folder, or "" to look for it
}

func (a *app) bench(ctx context.Context, o benchOptions) error {
	n, second, seed, dir, profile := o.n, o.second, o.seed, o.dir, o.profile
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
	path, events, size, err := a.benchLoad(ctx, world, dir, "bench", "", t)
	if err != nil {
		return err
	}
	// The run reads the effects from the ledger and the report from the
	// files: what the generator held is given back, and the peak is
	// measured from here, so that it is the run's.
	first := benchNight{effects: len(world.Effects), lines: world.Lines(), want: world.Want}
	outside := world.Outside
	var (
		effects string  // the effects CSV, for the DuckDB anchor
		log     *runLog // the run's phases, for the anchors
	)
	if o.anchors {
		effects = filepath.Join(dir, "bench.effects.csv")
		if err := writeWith(effects, func(w io.Writer) error { return writeEffectsCSV(w, world.Effects) }); err != nil {
			return err
		}
		say("wrote the effects as %s, for the anchors", effects)
		log = newRunLog(a.stderr, a.logLevel)
	}
	world = nil
	say("peak memory of generating and loading the world (VmHWM): %s", peakRSS())
	if first.elapsed, err = a.benchMeasure(ctx, "", profile, filepath.Join(dir, "result.json"), first.lines, size, first.want, outside, log, path, events); err != nil {
		return err
	}
	if o.anchors {
		if err := a.benchAnchors(ctx, anchorInputs{effects: effects, report: path, events: events, lines: first.lines, effectCount: first.effects,
			want: first.want, run: first.elapsed, log: log, duckdbDir: o.duckdb}); err != nil {
			return err
		}
	}
	if second == 0 {
		return nil
	}
	return a.benchSecondNight(ctx, first, second, seed, dir, profile)
}

// benchSecondNight measures the next night on the ledger the first night
// reconciled: a world of n effects one day later, with keys and ids of its
// own, whose report and webhook dump are reconciled on their own. It then
// prints both nights' times side by side.
func (a *app) benchSecondNight(ctx context.Context, first benchNight, n int, seed uint64, dir, profile string) error {
	say := func(format string, args ...any) { fmt.Fprintf(a.stdout, format+"\n", args...) }
	t := time.Now()
	// The prefix puts a letter where the first world's keys and ids have
	// a digit (run_b0000000:charge:0, ch_b00000000, txn_b000000000), so
	// that the two worlds share none.
	world := fixtures.NewWorldWith(n, fixtures.DefaultRates, seed, fixtures.Options{Prefix: "b", Days: 1})
	path, events, size, err := a.benchLoad(ctx, world, dir, "night2", "night 2: ", t)
	if err != nil {
		return err
	}
	night := benchNight{effects: len(world.Effects), lines: world.Lines(), want: maps.Clone(world.Want)}
	outside := world.Outside
	// The second night classifies the second world and what the first
	// night left open. The first night's confirmed effects are final and
	// out of its scope, and its unexpected transactions were reported by
	// the run whose inputs described them, not again. Its duplicated and
	// mismatched effects stay so: the run reads their earlier evidence, and
	// without --apply nothing was repaired. Its missing effects are still
	// missing; its pending ones were created between 21:00 and 22:00 on the
	// first day, before the second night's cutoff (the second day's end,
	// less the lag of 3 hours), and no evidence came: they are missing.
	open := map[reconcile.Class]int{
		reconcile.ClassDuplicated: first.want[reconcile.ClassDuplicated],
		reconcile.ClassMismatched: first.want[reconcile.ClassMismatched],
		reconcile.ClassMissing:    first.want[reconcile.ClassMissing] + first.want[reconcile.ClassPending],
	}
	left := 0
	for c, k := range open {
		night.want[c] += k
		left += k
	}
	world = nil
	say("night 2: peak memory of generating and loading the world (VmHWM): %s", peakRSS())
	say("night 2: built: the second world's classes, and the %d effects the first night left open (%d duplicated, %d mismatched, %d missing, and %d pending that are now missing)",
		left, first.want[reconcile.ClassDuplicated], first.want[reconcile.ClassMismatched], first.want[reconcile.ClassMissing], first.want[reconcile.ClassPending])
	prof := profile
	if prof != "" {
		prof += ".night2"
	}
	if night.elapsed, err = a.benchMeasure(ctx, "night 2: ", prof, filepath.Join(dir, "result-night2.json"), night.lines, size, night.want, outside, nil, path, events); err != nil {
		return err
	}
	say("the two nights side by side:")
	say("  night 1  %10s  %8d effects, %8d report lines, on an empty ledger", first.elapsed.Round(time.Millisecond), first.effects, first.lines)
	say("  night 2  %10s  %8d effects, %8d report lines, and the %d effects night 1 left open, on a ledger of %d effects",
		night.elapsed.Round(time.Millisecond), night.effects, night.lines, left, first.effects+night.effects)
	say("  night 2 / night 1: %.3f", night.elapsed.Seconds()/first.elapsed.Seconds())
	return nil
}

// benchLoad writes the world's report and webhook dump into dir as
// NAME.itemized.csv and NAME.events.jsonl, and loads its effects into the
// ledger, printing each step after the label (a night's name, or nothing).
// It returns the two files and their size together. t is when the world's
// generation began.
func (a *app) benchLoad(ctx context.Context, world *fixtures.World, dir, name, label string, t time.Time) (string, string, int64, error) {
	say := func(format string, args ...any) { fmt.Fprintf(a.stdout, label+format+"\n", args...) }
	path := filepath.Join(dir, name+".itemized.csv")
	if err := writeWith(path, world.WriteItemized); err != nil {
		return "", "", 0, err
	}
	events := filepath.Join(dir, name+".events.jsonl")
	if err := writeWith(events, world.WriteEvents); err != nil {
		return "", "", 0, err
	}
	info, _ := os.Stat(path)
	einfo, _ := os.Stat(events)
	say("generated %d effects, %s (%d lines, %.0f MB) and a webhook dump of a third of it, %s (%.0f MB), in %s",
		len(world.Effects), path, world.Lines(), float64(info.Size())/1e6, events, float64(einfo.Size())/1e6, since(t))

	store, loc, err := openForMigrate(ctx, a.ledgerURL) // a bench makes its own ledger
	if err != nil {
		return "", "", 0, err
	}
	if _, err := store.SchemaMigrate(ctx); err != nil {
		store.Close()
		return "", "", 0, err
	}
	t = time.Now()
	if err := store.EffectLoad(ctx, world.Effects); err != nil {
		store.Close()
		return "", "", 0, fmt.Errorf("load effects (the ledger must be empty): %w", err)
	}
	store.Close()
	say("loaded the effects into %s in %s", where(loc), since(t))
	t = time.Now()
	did, err := settle(ctx, loc)
	if err != nil {
		return "", "", 0, err
	}
	say("%s in %s", did, since(t))
	return path, events, info.Size() + einfo.Size(), nil
}

// benchMeasure runs one night's reconciliation on its inputs, prints its
// time, speed and peak memory after the label, checks its classes against
// want and its JSON result against the contract, and returns how long the
// run took. lines is the report's, size both inputs'. With a log, the run
// logs at debug level into it, so that its phases can be read.
func (a *app) benchMeasure(ctx context.Context, label, profile, result string, lines int, size int64, want map[reconcile.Class]int, outside int, log *runLog, inputs ...string) (time.Duration, error) {
	say := func(format string, args ...any) { fmt.Fprintf(a.stdout, format+"\n", args...) }
	t, busy := time.Now(), machineBusy()
	var (
		counts map[string]int
		peak   string
	)
	if exe, err := os.Executable(); err == nil && !strings.HasSuffix(exe, ".test") {
		// A child starts with its parent's peak (Linux keeps it across
		// fork and exec): give the world's memory back first.
		runtime.GC()
		debug.FreeOSMemory()
		resetPeakRSS()
		counts, peak, err = a.benchRun(ctx, exe, profile, result, log, inputs...)
		if err != nil {
			return 0, err
		}
	} else if counts, err = a.benchRunHere(ctx, profile, result, log, inputs...); err != nil {
		return 0, err
	} else {
		peak = peakRSS() + " (VmHWM since the world was loaded)"
	}
	elapsed := time.Since(t)
	say(label+"run end to end: %s, %.0f report lines/s, %.1f MB/s of both inputs", elapsed.Round(time.Millisecond), float64(lines)/elapsed.Seconds(),
		float64(size)/1e6/elapsed.Seconds())
	say(label+"peak memory of the run: %s", peak)
	if after := machineBusy(); busy > 0 && after > busy {
		say(label+"the machine's processors were busy %.1f s of its %d x %.1f s (the run's process and the database, if it runs here)",
			(after - busy).Seconds(), runtime.NumCPU(), elapsed.Seconds())
	}
	for _, c := range []reconcile.Class{reconcile.ClassConfirmed, reconcile.ClassDuplicated, reconcile.ClassMissing, reconcile.ClassPending, reconcile.ClassMismatched, reconcile.ClassUnexpected} {
		mark := "ok"
		if counts[string(c)] != want[c] {
			mark = "DIFFERS"
		}
		say("  %-10s found %8d  built %8d  %s", c, counts[string(c)], want[c], mark)
	}
	say("  (and %d refunds of our charges that no effect made: shown with their charges, not unexpected)", outside)
	f, err := os.Open(result)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := report.CheckContract(bufio.NewReader(f)); err != nil {
		return 0, fmt.Errorf("the JSON result %s breaks the contract: %w", result, err)
	}
	fi, _ := f.Stat()
	say(label+"the JSON result (%s, %.0f MB) keeps the contract", result, float64(fi.Size())/1e6)
	return elapsed, nil
}

// benchArgs are the flags of the benchmark's run: the generator's report
// is in UTC, and its pending effects are newer than three hours before
// its end.
var benchArgs = []string{"--lag", "3h", "--stripe-tz", "UTC"}

// benchRun runs `reconcile run` on the benchmark's inputs in a process of
// its own, so that its peak memory is its own: what the generator held
// leaves the runtime's bookkeeping of a heap of tens of gigabytes behind.
// The same goes for a CPU profile (into profile, unless ""): in the
// bench's process the collector would scan the generator's world under
// the run's heap limit. It returns the class counts of the run's summary
// and its peak resident memory. With a log, the run logs at debug level
// into it.
func (a *app) benchRun(ctx context.Context, exe, profile, result string, log *runLog, inputs ...string) (map[string]int, string, error) {
	level := a.logLevel
	var stderr io.Writer = a.stderr
	if log != nil {
		level, stderr = "debug", log
		defer log.flush()
	}
	args := append([]string{"--log-level", level, "--log-format", a.logFormat, "run", "--ledger", a.ledgerURL, "--json", result}, benchArgs...)
	if a.benchWorkers > 0 {
		args = append(args, "--distribute", "--workers", "1")
		for range a.benchWorkers - 1 {
			w := exec.CommandContext(ctx, exe, "--log-level", "warn", "worker", "--ledger", a.ledgerURL)
			w.Stderr = a.stderr
			if err := w.Start(); err != nil {
				return nil, "", err
			}
			defer func() { w.Process.Signal(syscall.SIGTERM); w.Wait() }()
		}
	}
	var out strings.Builder
	cmd := exec.CommandContext(ctx, exe, append(args, inputs...)...)
	cmd.Stdout, cmd.Stderr = &out, stderr
	if profile != "" {
		cmd.Env = append(os.Environ(), cpuProfileEnv+"="+profile)
	}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitPerson {
			return nil, "", fmt.Errorf("run: %w", err)
		}
	}
	peak := "unknown"
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peak = fmt.Sprintf("%d kB (the run's own process; it used %.1f s of processor time in user mode and %.1f s in the kernel, and took %d page faults)",
			ru.Maxrss, time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds(), ru.Minflt+ru.Majflt)
	}
	return parseCounts(out.String()), peak, nil
}

// benchRunHere runs the reconciliation in this process (under go test),
// after giving back what the generator held. With a log, the run logs at
// debug level into it.
func (a *app) benchRunHere(ctx context.Context, profile, result string, log *runLog, inputs ...string) (map[string]int, error) {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
	if profile != "" {
		stop, err := startCPUProfile(profile)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	var out strings.Builder
	// The run gets this app whole (its ledger, log and clock), but writes
	// its summary here, to be read.
	quiet := *a
	quiet.stdout = &out
	if log != nil {
		quiet.stderr, quiet.logLevel = log, "debug"
		if err := quiet.setupLogging(); err != nil {
			return nil, err
		}
		defer log.flush()
	}
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

// machineBusy is how long the machine's processors have been busy since it
// started, all of them together, from /proc/stat: the time not idle, nor
// waiting for the disk, nor taken by the host of a virtual machine
// (steal). A run's difference includes the database's work
// when it runs on the same machine, which the run's own processor time
// does not, and anything else the machine did meanwhile. 0 where there is
// no /proc/stat.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	return busyOf(string(b))
}

// busyOf reads the busy time from the text of /proc/stat: its first line,
// "cpu" and the ticks (hundredths of a second) spent in user, nice,
// system, idle, iowait, irq, softirq and steal time, and more (guest time,
// already counted in user); busy are user, nice, system, irq and softirq.
func busyOf(stat string) time.Duration {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0
	}
	var ticks int64
	for i, f := range fields[1:9] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0
		}
		if i != 3 && i != 4 && i != 7 { // idle, iowait, steal
			ticks += n
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// settle leaves the machine as a night finds it: the files written out,
// and on PostgreSQL the ledger's tables vacuumed and analyzed, as
// autovacuum does in the hours after the application writes its effects
// and a run its records (it may be off on a test server), and a
// checkpoint made, which a role without the right to make one
// (pg_checkpoint) leaves to the server. It returns what it did.
func settle(ctx context.Context, loc ledgerdb.Location) (string, error) {
	syscall.Sync()
	if loc.Driver != ledgerdb.Postgres {
		return "the files written out", nil
	}
	conn, err := connectPostgres(ctx, loc.DSN)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var tables string
	if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(format('%I.%I', schemaname, relname), ', '), '')
FROM pg_stat_user_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil {
		return "", err
	}
	if tables == "" {
		return "", errors.New("settle the ledger: no table in its schema")
	}
	if _, err := conn.Exec(ctx, "VACUUM (ANALYZE) "+tables); err != nil {
		return "", fmt.Errorf("vacuum the ledger: %w", err)
	}
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return fmt.Sprintf("the files written out and the ledger vacuumed (no checkpoint: %v)", err), nil
	}
	return "the files written out, the ledger vacuumed and a checkpoint made", nil
}
