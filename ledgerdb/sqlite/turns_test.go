package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"reconcile"
	"reconcile/ledgerdb"
	"reconcile/ledgerdb/sqlite"
)

// These tests run writers in two processes on one ledger file, one of
// which holds the write lock for many busy timeouts: the other must wait
// its turn, and fail clearly only after the write wait.

const (
	busy = 100 * time.Millisecond  // a statement's busy timeout, in these tests
	hold = 1500 * time.Millisecond // how long a holder keeps the write lock while the other waits
)

// shortWaits makes this process's stores, opened from now on, wait busy for
// one statement and write for a write transaction.
func shortWaits(t *testing.T, write time.Duration) {
	t.Cleanup(sqlite.SetWaits(busy, write))
}

// childIngest is a child's "ingest": it creates c.Started, migrates the
// ledger as `reconcile ingest` does on open, then writes c.Rows evidence
// rows as one source; with the source's transaction still open it creates
// c.Holding and, when c.Release is set, waits until that file exists.
func childIngest(ctx context.Context, s ledgerdb.Store, c *childSpec) error {
	if err := touch(c.Started); err != nil {
		return err
	}
	if _, err := s.SchemaMigrate(ctx); err != nil {
		return err
	}
	res, err := s.SourceIngest(ctx, &ledgerdb.IngestParams{URI: c.URI}, func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
		if err := writeRows(w, c.URI, c.Rows); err != nil {
			return nil, err
		}
		if err := touch(c.Holding); err != nil {
			return nil, err
		}
		for deadline := time.Now().Add(2 * time.Minute); c.Release != ""; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(c.Release); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("not released within 2 minutes")
			}
		}
		return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Format: "test", Hash: "hash-" + c.URI, Rows: c.Rows, Evidence: c.Rows}}, nil
	})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// touch creates the file path, unless path is empty.
func touch(path string) error {
	if path == "" {
		return nil
	}
	return os.WriteFile(path, nil, 0o644)
}

// writeRows writes n charges of source uri, naming effects uri:charge:0 on.
func writeRows(w ledgerdb.SourceWriter, uri string, n int) error {
	for i := range n {
		e := reconcile.Evidence{URI: uri, Line: i + 2, Provider: "stripe", TxID: fmt.Sprintf("ch_%s_%d", uri, i), Kind: reconcile.KindCharge,
			Amount: reconcile.Money{Minor: 1000, Currency: "EUR"}, EffectKey: fmt.Sprintf("%s:charge:%d", uri, i)}
		if err := w.Evidence(&e); err != nil {
			return err
		}
	}
	return nil
}

// awaitFile waits until path exists: a child's signal.
func awaitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("no signal %s from the child within 2 minutes", path)
}

// sourceCounts gives the evidence count of each source in the ledger, by
// URI, as the manifest says and as the rows are.
func sourceCounts(t *testing.T, s ledgerdb.Store) map[string][2]int {
	t.Helper()
	ctx := context.Background()
	srcs, err := s.SourceList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int{}
	for _, src := range srcs {
		_, evs, _, err := s.SourceGetRows(ctx, src.ID)
		if err != nil {
			t.Fatal(err)
		}
		got[src.URI] = [2]int{src.Evidence, len(evs)}
	}
	return got
}

// Two `reconcile ingest`s of different files at once: the second waits
// while the first holds the write lock, and both sources are in whole.
func TestIngestsInTwoProcessesTakeTurns(t *testing.T) {
	shortWaits(t, 2*time.Minute)
	s, path := migrated(t, time.Now)
	dir := t.TempDir()
	holding, started, release := filepath.Join(dir, "holding"), filepath.Join(dir, "started"), filepath.Join(dir, "release")
	first, start, _ := startChild(t, childSpec{Path: path, Op: "ingest", URI: "a", Rows: 3000, Holding: holding, Release: release,
		Busy: busy, WriteWait: 2 * time.Minute})
	start.Close()
	awaitFile(t, holding)
	second, start, _ := startChild(t, childSpec{Path: path, Op: "ingest", URI: "b", Rows: 2000, Started: started, Busy: busy, WriteWait: 2 * time.Minute})
	start.Close()
	awaitFile(t, started)
	time.Sleep(hold) // the second waits for its turn meanwhile
	if err := touch(release); err != nil {
		t.Fatal(err)
	}
	if err := second.Wait(); err != nil {
		t.Errorf("the second ingest, while the first held the ledger: %v", err)
	}
	if err := first.Wait(); err != nil {
		t.Errorf("the first ingest: %v", err)
	}
	want := map[string][2]int{"a": {3000, 3000}, "b": {2000, 2000}}
	if got := sourceCounts(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sources (manifest count, rows) = %v, want %v", got, want)
	}
}

// A run records its confirmations partition by partition while another
// process ingests: the run waits for the ingest's transaction, and both
// end whole.
func TestIngestWhileARunMatches(t *testing.T) {
	shortWaits(t, 2*time.Minute)
	s, path := migrated(t, time.Now)
	ctx := context.Background()
	const effects = 300
	var load []reconcile.Effect
	for i := range effects {
		load = append(load, reconcile.Effect{Key: fmt.Sprintf("run:charge:%d", i), RunID: "r", Step: "charge", Provider: "stripe",
			Status: reconcile.StatusAttempted, CreatedAt: time.Now().Add(-time.Hour),
			Request: json.RawMessage(`{"amount": 1000, "currency": "eur"}`)})
	}
	if err := s.EffectLoad(ctx, load); err != nil {
		t.Fatal(err)
	}
	res, err := s.SourceIngest(ctx, &ledgerdb.IngestParams{URI: "run"}, func(w ledgerdb.SourceWriter) (*ledgerdb.SourceRecord, error) {
		return &ledgerdb.SourceRecord{SourceAccount: reconcile.SourceAccount{Format: "test", Hash: "hash-run", Rows: effects, Evidence: effects}}, writeRows(w, "run", effects)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunStart(ctx, &ledgerdb.StartRunParams{ID: "run_1"}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	holding, release := filepath.Join(dir, "holding"), filepath.Join(dir, "release")
	var ingest interface{ Wait() error }
	var (
		mu    sync.Mutex // match is called from several goroutines
		parts int
	)
	sum, err := s.PartitionMatch(ctx, &ledgerdb.MatchParams{RunID: "run_1", Sources: []int64{res.SourceID},
		Kinds: map[string]reconcile.Kind{"charge": reconcile.KindCharge}, PartitionSize: 100},
		func(p *ledgerdb.Partition) ([]ledgerdb.Confirmation, error) {
			mu.Lock()
			defer mu.Unlock()
			if parts++; parts == 1 { // the ingest starts while the run matches, and holds the ledger
				cmd, start, _ := startChild(t, childSpec{Path: path, Op: "ingest", URI: "other", Rows: 1000, Holding: holding, Release: release})
				start.Close()
				awaitFile(t, holding)
				ingest = cmd
				time.AfterFunc(hold, func() { touch(release) }) // the run waits to record meanwhile
			}
			var confs []ledgerdb.Confirmation
			for _, e := range p.Effects {
				confs = append(confs, ledgerdb.Confirmation{Key: e.Key, ExternalID: "pi_" + e.Key})
			}
			return confs, nil
		})
	if err != nil {
		t.Errorf("MatchPartitions while another process ingests: %v", err)
	} else if sum.Confirmed != effects || sum.Partitions < 3 {
		t.Errorf("MatchPartitions confirmed %d effects in %d partitions, want %d in 3 or more", sum.Confirmed, sum.Partitions, effects)
	}
	if _, err := s.RunFinish(ctx, &ledgerdb.FinishRunParams{ID: "run_1", Status: reconcile.RunStatusSucceeded}); err != nil {
		t.Errorf("FinishRun: %v", err)
	}
	if ingest == nil {
		t.Fatal("the ingest never started")
	}
	if err := ingest.Wait(); err != nil {
		t.Errorf("the ingest while the run matched: %v", err)
	}
	want := map[string][2]int{"run": {effects, effects}, "other": {1000, 1000}}
	if got := sourceCounts(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sources (manifest count, rows) = %v, want %v", got, want)
	}
	for _, key := range []string{"run:charge:0", "run:charge:299"} {
		if e, err := s.EffectGet(ctx, key); err != nil || e.Status != reconcile.StatusConfirmed || e.ExternalID != "pi_"+key {
			t.Errorf("Effect(%s) = %+v, %v; want confirmed by pi_%s", key, e, err, key)
		}
	}
}

// A writer that waits longer than the write wait fails, saying that
// another process holds the ledger; once it is free, the writer writes.
func TestWriterWaitingPastTheBoundSaysWhoHoldsTheLedger(t *testing.T) {
	const wait = 700 * time.Millisecond
	shortWaits(t, wait)
	_, path := migrated(t, time.Now)
	dir := t.TempDir()
	holding, release := filepath.Join(dir, "holding"), filepath.Join(dir, "release")
	holder, start, _ := startChild(t, childSpec{Path: path, Op: "ingest", URI: "a", Rows: 10, Holding: holding, Release: release})
	start.Close()
	awaitFile(t, holding)
	s := open(t, path, time.Now)
	ctx := context.Background()
	t0 := time.Now()
	_, err := s.RunStart(ctx, &ledgerdb.StartRunParams{ID: "run_1"})
	waited := time.Since(t0)
	want := "run run_1: start: the SQLite ledger " + path + " is busy: another reconcile (or the application) has held its write lock for more than 700ms"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("StartRun while another process holds the ledger = %v, want an error saying %q", err, want)
	}
	if waited < wait {
		t.Errorf("StartRun gave up after %s, want at least the write wait, %s", waited, wait)
	}
	if err := touch(release); err != nil {
		t.Fatal(err)
	}
	if err := holder.Wait(); err != nil {
		t.Errorf("the holder: %v", err)
	}
	if _, err := s.RunStart(ctx, &ledgerdb.StartRunParams{ID: "run_1"}); err != nil {
		t.Errorf("StartRun once the ledger is free: %v", err)
	}
}

// A write that finds this process's own index build holding the write lock
// waits for it past the write wait, which bounds the wait for other
// processes: a run's partitions wait for the indexes built beside them.
func TestAWriteWaitsForItsOwnIndexBuild(t *testing.T) {
	const wait = 200 * time.Millisecond
	shortWaits(t, wait)
	s, _ := migrated(t, time.Now)
	ctx := context.Background()
	release := s.HoldBuild(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := s.RunStart(ctx, &ledgerdb.StartRunParams{ID: "run_1"})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("StartRun beside the build ended before the build did: %v", err)
	case <-time.After(5 * wait):
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("StartRun once the build ended: %v", err)
	}
}
