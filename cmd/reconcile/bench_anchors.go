package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the driver the SQLite ledger uses, for the SQLite floor

	"reconcile"
	"reconcile/ledgerdb"
)

// The anchors of `bench --anchors`: programs that do a comparable part of
// the run's work on the same files, timed in the same run, so that the
// performance target ("at most 4x DuckDB on PostgreSQL, 8x on SQLite") and
// each phase's floor are measured on this machine, under its load of the
// moment, rather than quoted from another day.

// anchorInputs are what the anchors are measured on and against: the
// bench's files, the classes its world was built with, and the run.
type anchorInputs struct {
	effects, report, events string // the effects CSV, the itemized report, the webhook dump
	lines                   int    // the report's lines, header included
	effectCount             int
	want                    map[reconcile.Class]int
	run                     time.Duration
	log                     *runLog // the run's phases and record count
	duckdbDir               string  // --duckdb, or "" to look for tools/duckdb
}

// anchorTime is one line of the anchors' table.
type anchorTime struct {
	name    string
	elapsed time.Duration
	note    string
}

// benchAnchors runs the anchors on in's files and prints them beside the
// run: its time as a multiple of DuckDB's, and each phase beside its floor.
// A DuckDB that is not installed, or fails, is reported and skipped; the
// other anchors are this program's own code and fail the bench.
func (a *app) benchAnchors(ctx context.Context, in anchorInputs) error {
	say := func(format string, args ...any) { fmt.Fprintf(a.stdout, format+"\n", args...) }
	loc, err := ledgerdb.ParseURL(a.ledgerURL)
	if err != nil {
		return err
	}
	say("anchors, on the same files in the same run:")
	var times []anchorTime

	duck, duckTime := a.anchorDuckDB(ctx, in)
	if duck != nil {
		what := "effects and report"
		if duck.Events {
			what = "effects, report and webhook dump"
		}
		times = append(times, anchorTime{fmt.Sprintf("DuckDB %s: classify in SQL (%s)", duck.Version, what), duckTime,
			fmt.Sprintf("%d threads; the node process %s", duck.Threads, duck.process.Round(time.Millisecond))})
	}

	t := time.Now()
	rows, err := csvRows(in.report)
	if err != nil {
		return fmt.Errorf("encoding/csv anchor: %w", err)
	}
	csvTime := time.Since(t)
	times = append(times, anchorTime{"encoding/csv: read the report (ReuseRecord)", csvTime,
		fmt.Sprintf("%d rows (the report's lines: %d)", rows, in.lines)})
	t = time.Now()
	lines, valid, err := jsonLines(in.events)
	if err != nil {
		return fmt.Errorf("json.Valid anchor: %w", err)
	}
	jsonTime := time.Since(t)
	times = append(times, anchorTime{"json.Valid: check the webhook dump line by line", jsonTime,
		fmt.Sprintf("%d lines, %d valid", lines, valid)})

	// As many narrow rows as the run's evidence records; the files' lines
	// (a little more: fees and events delivered twice are no records) if
	// the run did not say.
	narrow, from := in.log.records, "the run's evidence records"
	if narrow == 0 {
		narrow, from = rows-1+lines, "the report's rows and the dump's lines"
	}
	var write time.Duration // the floor of ingest's writing
	var writeName string
	var read time.Duration // the floor of the partitions' reading, where there is one
	if loc.Driver == ledgerdb.Postgres {
		unlogged, logged, effRead, effRows, err := anchorPostgres(ctx, loc.DSN, narrow)
		if err != nil {
			return fmt.Errorf("PostgreSQL anchor: %w", err)
		}
		times = append(times,
			anchorTime{"PostgreSQL: COPY narrow rows, UNLOGGED table, no index", unlogged, fmt.Sprintf("%d rows, as many as %s", narrow, from)},
			anchorTime{"PostgreSQL: COPY narrow rows, LOGGED table, no index", logged, fmt.Sprintf("%d rows", narrow)},
			anchorTime{"PostgreSQL: read the effects table (SELECT, streamed)", effRead, fmt.Sprintf("%d rows (effects loaded: %d)", effRows, in.effectCount)})
		write, writeName, read = logged, "COPY logged", effRead
	} else {
		tmp, err := os.MkdirTemp(filepath.Dir(loc.DSN), "anchor-sqlite-*")
		if err != nil {
			return fmt.Errorf("SQLite anchor: %w", err)
		}
		defer os.RemoveAll(tmp)
		insert, err := anchorSQLite(ctx, filepath.Join(tmp, "floor.db"), narrow)
		if err != nil {
			return fmt.Errorf("SQLite anchor: %w", err)
		}
		times = append(times, anchorTime{"SQLite: narrow rows, multi-row INSERT, one transaction, no index", insert,
			fmt.Sprintf("%d rows, as many as %s", narrow, from)})
		write, writeName = insert, "SQLite INSERT"
	}
	for _, at := range times {
		say("  %-66s %9s  %s", at.name, seconds3(at.elapsed), at.note)
	}
	if duck != nil {
		say("  DuckDB's classes (its simpler rules; a difference is reported, not an error):")
		for _, c := range []reconcile.Class{reconcile.ClassConfirmed, reconcile.ClassDuplicated, reconcile.ClassMissing, reconcile.ClassPending, reconcile.ClassMismatched, reconcile.ClassUnexpected} {
			got, want := duck.Counts[string(c)], in.want[c]
			mark := "same"
			if got != want {
				mark = fmt.Sprintf("differs by %+d", got-want)
			}
			say("    %-10s duckdb %8d  built %8d  %s", c, got, want, mark)
		}
	}

	say("the run beside them:")
	target := "at most 4x on PostgreSQL"
	if loc.Driver != ledgerdb.Postgres {
		target = "at most 8x on SQLite"
	}
	if duck != nil {
		say("  %-12s %9s  run / DuckDB = %.1fx (the target: %s)", "end to end", seconds3(in.run), in.run.Seconds()/duckTime.Seconds(), target)
	} else {
		say("  %-12s %9s  run / DuckDB: not measured (DuckDB skipped)", "end to end", seconds3(in.run))
	}
	if len(in.log.phases) == 0 {
		say("  (the run logged no phases)")
	}
	for _, p := range in.log.phases {
		switch p.name {
		case "ingest":
			floor := csvTime + jsonTime + write
			say("  %-12s %9s  floor %s (encoding/csv %s + json.Valid %s + %s %s): %.1fx", p.name, seconds3(p.elapsed), seconds3(floor),
				seconds3(csvTime), seconds3(jsonTime), writeName, seconds3(write), p.elapsed.Seconds()/floor.Seconds())
		case "partitions":
			if read > 0 {
				say("  %-12s %9s  floor %s (the read of the effects table): %.1fx; matching %s of it", p.name, seconds3(p.elapsed), seconds3(read),
					p.elapsed.Seconds()/read.Seconds(), seconds3(in.log.matching))
			} else {
				say("  %-12s %9s  no floor; matching %s of it", p.name, seconds3(p.elapsed), seconds3(in.log.matching))
			}
		default:
			say("  %-12s %9s  no floor", p.name, seconds3(p.elapsed))
		}
	}
	return nil
}

// seconds3 writes a duration as seconds with three decimals.
func seconds3(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

// duckdbResult is what tools/duckdb/classify.mjs prints.
type duckdbResult struct {
	Counts       map[string]int `json:"counts"`
	Effects      int            `json:"effects"`
	Records      int            `json:"records"`
	Transactions int            `json:"transactions"`
	Events       bool           `json:"events"`
	Threads      int            `json:"threads"`
	Version      string         `json:"duckdb"`
	Elapsed      float64        `json:"elapsed_s"`
	process      time.Duration  // the node process's wall time, measured here
}

// anchorDuckDB runs tools/duckdb/classify.mjs on the bench's files and
// returns what it printed and its own elapsed time, or nil after saying why
// it was skipped: DuckDB is optional, and never fails the bench.
func (a *app) anchorDuckDB(ctx context.Context, in anchorInputs) (*duckdbResult, time.Duration) {
	say := func(format string, args ...any) { fmt.Fprintf(a.stdout, format+"\n", args...) }
	dir := in.duckdbDir
	if dir == "" {
		dir = findDuckDBDir()
	}
	if dir == "" {
		say("  DuckDB: skipped: tools/duckdb/classify.mjs is in neither the working directory nor a parent of it; run the bench in the repository, " +
			"after `npm ci --prefix tools/duckdb` there, or give --duckdb DIR")
		return nil, 0
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@duckdb", "node-api", "package.json")); err != nil {
		// The folder as the command to install it is typed here: relative
		// when it is under the working directory (tools/duckdb, in the
		// repository), else as found.
		shown := dir
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, dir); err == nil && !strings.HasPrefix(rel, "..") {
				shown = rel
			}
		}
		say("  DuckDB: skipped: the DuckDB Node API is not installed in %s; install it with `npm ci --prefix %s` (from the npm registry, about 70 MB, no other download)", dir, shown)
		return nil, 0
	}
	node, err := exec.LookPath("node")
	if err != nil {
		say("  DuckDB: skipped: node is not installed (Node.js 20 or later runs it; then `npm ci --prefix %s`)", dir)
		return nil, 0
	}
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "classify.mjs"), in.effects, in.report, in.events)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	t := time.Now()
	err = cmd.Run()
	process := time.Since(t)
	if err != nil {
		say("  DuckDB: skipped: classify.mjs failed (%v):\n    %s", err, strings.ReplaceAll(strings.TrimSpace(errOut.String()), "\n", "\n    "))
		return nil, 0
	}
	var res duckdbResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		say("  DuckDB: skipped: classify.mjs printed no result (%v): %q", err, out.String())
		return nil, 0
	}
	res.process = process
	return &res, time.Duration(res.Elapsed * float64(time.Second))
}

// findDuckDBDir looks for tools/duckdb/classify.mjs in the working
// directory and each parent of it: the bench runs in the repository, or
// one of its folders (a package's, under go test).
func findDuckDBDir() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(d, "tools", "duckdb")
		if _, err := os.Stat(filepath.Join(p, "classify.mjs")); err == nil {
			return p
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// csvRows reads path with encoding/csv, reusing the record, and counts its
// rows, the header included: the floor of reading the report.
func csvRows(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<20))
	r.ReuseRecord = true
	n := 0
	for {
		if _, err := r.Read(); err == io.EOF {
			return n, nil
		} else if err != nil {
			return n, err
		}
		n++
	}
}

// jsonLines checks every line of path with json.Valid, as a floor of
// reading the webhook dump, and counts its lines and the valid ones.
func jsonLines(path string) (lines, valid int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(bufio.NewReaderSize(f, 1<<20))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		lines++
		if json.Valid(sc.Bytes()) {
			valid++
		}
	}
	return lines, valid, sc.Err()
}

// writeEffectsCSV writes the effects as the DuckDB anchor reads them: key,
// step, provider, status, external_id, and the request's amount and
// currency, and the creation time (UTC).
func writeEffectsCSV(out io.Writer, effects []reconcile.Effect) error {
	b := bufio.NewWriterSize(out, 1<<20)
	w := csv.NewWriter(b)
	w.Write([]string{"key", "step", "provider", "status", "external_id", "amount", "currency", "created_at"})
	for _, e := range effects {
		var req struct {
			Amount   int64  `json:"amount"`
			Currency string `json:"currency"`
		}
		if err := json.Unmarshal(e.Request, &req); err != nil {
			return fmt.Errorf("effect %s: request: %w", e.Key, err)
		}
		w.Write([]string{e.Key, e.Step, e.Provider, string(e.Status), e.ExternalID, strconv.FormatInt(req.Amount, 10), req.Currency,
			e.CreatedAt.UTC().Format("2006-01-02 15:04:05.000000")})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return b.Flush()
}

// runLog is a run's stderr when the anchors are measured: the run logs at
// debug level so that its phases can be read, and runLog forwards to out
// only what the bench's own --log-level asks for. It keeps each phase's
// time, the matching time and the number of evidence records.
type runLog struct {
	mu       sync.Mutex
	out      io.Writer
	debug    bool // forward the debug records too
	line     []byte
	phases   []runPhase
	matching time.Duration
	records  int
}

// runPhase is one phase of a run and how long it took.
type runPhase struct {
	name    string
	elapsed time.Duration
}

// newRunLog makes the stderr of a run measured against the anchors, for a
// bench whose own log level is level.
func newRunLog(out io.Writer, level string) *runLog {
	var lv slog.Level
	lv.UnmarshalText([]byte(level)) // the global flag was checked already
	return &runLog{out: out, debug: lv <= slog.LevelDebug}
}

func (l *runLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.line = append(l.line, p...)
	for {
		i := bytes.IndexByte(l.line, '\n')
		if i < 0 {
			break
		}
		l.take(l.line[:i+1])
		l.line = l.line[i+1:]
	}
	l.line = append([]byte(nil), l.line...) // what is left of a line, on its own
	return len(p), nil
}

// flush forwards what is left after the last newline.
func (l *runLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.line) > 0 {
		l.take(l.line)
		l.line = nil
	}
}

// take reads one line of the log, text or JSON as slog writes them, and
// forwards it unless it is a debug record nobody asked for.
func (l *runLog) take(line []byte) {
	s := string(line)
	var rec struct {
		Level    string  `json:"level"`
		Msg      string  `json:"msg"`
		Phase    string  `json:"phase"`
		Elapsed  float64 `json:"elapsed"`  // seconds, in the JSON log
		Matching float64 `json:"matching"` // seconds
		Records  int     `json:"records"`
	}
	var elapsed, matching time.Duration
	if strings.HasPrefix(s, "{") {
		if json.Unmarshal(line, &rec) != nil {
			rec.Level = ""
		}
		elapsed, matching = time.Duration(rec.Elapsed*float64(time.Second)), time.Duration(rec.Matching*float64(time.Second))
	} else {
		rec.Level = textField(s, "level")
		rec.Phase = textField(s, "phase")
		rec.Records, _ = strconv.Atoi(textField(s, "records"))
		elapsed, _ = time.ParseDuration(textField(s, "elapsed"))
		matching, _ = time.ParseDuration(textField(s, "matching"))
		switch {
		case strings.Contains(s, ` msg="phase done" `):
			rec.Msg = "phase done"
		case strings.Contains(s, ` msg="partitions matched" `):
			rec.Msg = "partitions matched"
		}
	}
	switch rec.Msg {
	case "phase done":
		l.phases = append(l.phases, runPhase{rec.Phase, elapsed})
	case "partitions matched":
		l.matching, l.records = matching, rec.Records
	}
	if rec.Level != "DEBUG" || l.debug {
		l.out.Write(line)
	}
}

// textField is the value of key=value in a line of slog's text format, for
// a value without spaces.
func textField(line, key string) string {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		if !strings.HasPrefix(line, key+"=") {
			return ""
		}
		i = -1
	}
	v := line[i+len(key)+2:]
	if j := strings.IndexAny(v, " \n"); j >= 0 {
		v = v[:j]
	}
	return v
}
